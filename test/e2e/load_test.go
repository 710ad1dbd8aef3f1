package e2e

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/eksa-metrics/eksa-metrics/pkg/templates"
	"github.com/eksa-metrics/eksa-metrics/test/framework"
)

// reviews are the TokenReview and SubjectAccessReview requests the API
// server has answered, from its own apiserver_request_total.
type reviews struct{ token, access float64 }

func (r reviews) minus(o reviews) reviews { return reviews{r.token - o.token, r.access - o.access} }

func reviewCount(t *testing.T, c *framework.Cluster) reviews {
	t.Helper()
	var r reviews
	for _, req := range framework.RequestsOf(t, c.Client) {
		if req.Labels["verb"] != "POST" && req.Labels["verb"] != "create" {
			continue
		}
		switch req.Labels["resource"] {
		case "tokenreviews":
			r.token += req.Count
		case "subjectaccessreviews":
			r.access += req.Count
		}
	}
	return r
}

// measureReviewLoad counts what one scrape of each kind of target costs the
// API server in TokenReviews and SubjectAccessReviews, with the real
// components of the three-node cluster: cold (an identity none of them has
// seen) and warm (ten more scrapes at once, caches filled), and for the
// control-plane components again after their 10-second cache has expired,
// as it has between two scrapes at Prometheus' usual 15 s or 30 s.
func measureReviewLoad(t *testing.T, c *framework.Cluster) string {
	t.Helper()
	ctx := context.Background()
	c.ServiceAccount(t, "monitoring", "load-probe")
	if _, err := c.Client.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "load-probe"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: templates.ReaderRole},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "load-probe", Namespace: "monitoring"}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	token := c.Token(t, "monitoring", "load-probe")
	client := insecureClient()
	scrape := func(url string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, url, nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("GET %s: %v", url, err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %d", url, resp.StatusCode)
		}
	}
	cp, w := c.NodeOf(t, "cp-1").Host.IP, c.NodeOf(t, "worker-1").Host.IP
	targets := []struct {
		name, url string
		ttl       bool // the component's own 10 s webhook caches
		shared    bool // the same cache entries as the row before
	}{
		{"kube-controller-manager (own authn/authz, via HAProxy)", "https://" + cp + ":10257/metrics", true, false},
		{"kube-scheduler (own authn/authz, via HAProxy)", "https://" + cp + ":10259/metrics", true, false},
		{"etcd (kube-rbac-proxy)", "https://" + cp + ":2381/metrics", false, false},
		{"kube-proxy (kube-rbac-proxy)", "https://" + w + ":10249/metrics", false, false},
		{"kubelet /metrics", "https://" + w + ":10250/metrics", false, false},
		{"kubelet /metrics/cadvisor (same token, nodes/metrics)", "https://" + w + ":10250/metrics/cadvisor", false, true},
	}
	var report []string
	for _, tg := range targets {
		before := reviewCount(t, c)
		scrape(tg.url)
		cold := reviewCount(t, c).minus(before)
		before = reviewCount(t, c)
		for i := 0; i < 10; i++ {
			scrape(tg.url)
		}
		warm := reviewCount(t, c).minus(before)
		line := fmt.Sprintf("%-55s cold: %.0f TokenReview + %.0f SubjectAccessReview; warm: %.1f + %.1f per scrape", tg.name, cold.token, cold.access, warm.token/10, warm.access/10)
		if warm.token+warm.access > 1 {
			t.Errorf("%s: ten warm scrapes cost %.0f reviews; the caches do not work", tg.name, warm.token+warm.access)
		}
		if tg.ttl {
			time.Sleep(11 * time.Second)
			before = reviewCount(t, c)
			scrape(tg.url)
			late := reviewCount(t, c).minus(before)
			line += fmt.Sprintf("; after 11 s: %.0f + %.0f", late.token, late.access)
			if late.token+late.access < 2 {
				t.Errorf("%s: a scrape after the 10 s cache TTL cost %.0f reviews, want 2 (the measurement cannot tell)", tg.name, late.token+late.access)
			}
		}
		switch {
		case tg.shared && cold.token+cold.access > 0:
			t.Errorf("%s: %.0f reviews, although the kubelet has reviewed this token and nodes/metrics already", tg.name, cold.token+cold.access)
		case !tg.shared && cold.token+cold.access < 1:
			t.Errorf("%s: a cold scrape cost no review: the measurement cannot tell", tg.name)
		}
		report = append(report, line)
	}
	return strings.Join(report, "\n")
}
