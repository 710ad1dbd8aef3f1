package integration

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	metricsv1alpha1 "github.com/eksa-metrics/eksa-metrics/pkg/apis/metrics/v1alpha1"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/eksa-metrics/eksa-metrics/pkg/templates"
	"github.com/eksa-metrics/eksa-metrics/pkg/verify"
	"github.com/eksa-metrics/eksa-metrics/test/framework"
)

// verify's tokens are bound to temporary Secrets: cleanup deletes every
// temporary object, and the tokens stop working at once.
func TestVerifyIdentitiesAreRevokedByCleanup(t *testing.T) {
	ctx := context.Background()
	cp := framework.StartControlPlane(t, framework.ControlPlaneOptions{Version: kubeVersion})
	cp.ServiceAccount(t, "monitoring", "prometheus-k8s")
	for _, scrapers := range [][]metricsv1alpha1.Scraper{
		{{Kind: metricsv1alpha1.ScraperServiceAccount, Name: "prometheus-k8s", Namespace: "monitoring"}},
		{{Kind: metricsv1alpha1.ScraperGroup, Name: "platform:metrics"}},
	} {
		ids, err := verify.NewIdentities(ctx, cp.Client, scrapers, verify.IdentityOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, tok := range []string{ids.ScraperToken, ids.UnboundToken} {
			if !authenticated(t, cp, tok) {
				t.Fatalf("%v: a fresh token is not accepted", scrapers)
			}
		}
		if err := ids.Cleanup(ctx); err != nil {
			t.Fatal(err)
		}
		// The API server learns of the deletion through its informers, within moments.
		framework.WaitFor(t, "the tokens to be revoked", 15*time.Second, func() (bool, error) {
			return !authenticated(t, cp, ids.ScraperToken) && !authenticated(t, cp, ids.UnboundToken), nil
		})
		left := leftovers(t, cp)
		if len(left) > 0 {
			t.Fatalf("%v: cleanup left %v", scrapers, left)
		}
	}
	// A failure half way (the scraper ServiceAccount does not exist) leaves nothing.
	ids, err := verify.NewIdentities(ctx, cp.Client, []metricsv1alpha1.Scraper{{Kind: metricsv1alpha1.ScraperServiceAccount, Name: "missing", Namespace: "monitoring"}}, verify.IdentityOptions{})
	if err == nil || !strings.Contains(err.Error(), "monitoring/missing") {
		t.Fatalf("err = %v", err)
	}
	if err := ids.Cleanup(ctx); err != nil {
		t.Fatal(err)
	}
	if left := leftovers(t, cp); len(left) > 0 {
		t.Fatalf("a failed start left %v", left)
	}
}

// A verify run that was killed (SIGKILL: no cleanup runs) leaves its
// temporary objects, exactly as NewIdentities without Cleanup does. The next
// run deletes them, and those of a version before the run label, before it
// makes its own; it keeps those of a run still going (younger than
// StaleAfter) and every object eksa-metrics renders.
func TestVerifyDeletesWhatAKilledRunLeft(t *testing.T) {
	ctx := context.Background()
	cp := framework.StartControlPlane(t, framework.ControlPlaneOptions{Version: kubeVersion})
	cp.ServiceAccount(t, "monitoring", "prometheus-k8s")
	saScraper := []metricsv1alpha1.Scraper{{Kind: metricsv1alpha1.ScraperServiceAccount, Name: "prometheus-k8s", Namespace: "monitoring"}}
	groupScraper := []metricsv1alpha1.Scraper{{Kind: metricsv1alpha1.ScraperGroup, Name: "platform:metrics"}}

	var killedTokens []string
	for _, scrapers := range [][]metricsv1alpha1.Scraper{saScraper, groupScraper} {
		killed, err := verify.NewIdentities(ctx, cp.Client, scrapers, verify.IdentityOptions{})
		if err != nil {
			t.Fatal(err)
		}
		killedTokens = append(killedTokens, killed.ScraperToken, killed.UnboundToken)
	}
	managed := map[string]string{templates.ManagedByLabel: templates.Prefix}
	legacy := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "eksa-metrics-verify-unbound-0a0b0c", Namespace: verify.Namespace, Labels: managed}}
	rendered := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: templates.ProxySA, Namespace: verify.Namespace, Labels: managed}}
	for _, sa := range []*corev1.ServiceAccount{legacy, rendered} {
		if _, err := cp.Client.CoreV1().ServiceAccounts(verify.Namespace).Create(ctx, sa, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	left := verifyObjects(t, cp)
	if len(left) != 9 { // 2 + 2 Secrets, 1 + 2 ServiceAccounts, 1 ClusterRoleBinding, the legacy one
		t.Fatalf("the killed runs left %d objects, want 9: %v", len(left), left)
	}
	// creationTimestamp has whole seconds: 3 s later the objects are older
	// than a StaleAfter of 2 s, while a run started now is not.
	time.Sleep(3 * time.Second)
	running, err := verify.NewIdentities(ctx, cp.Client, groupScraper, verify.IdentityOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var removed []string
	ids, err := verify.NewIdentities(ctx, cp.Client, groupScraper, verify.IdentityOptions{StaleAfter: 2 * time.Second,
		Removed: func(o string) { removed = append(removed, o) },
		Failed:  func(err error) { t.Errorf("deleting leftovers: %v", err) }})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(removed, left) {
		t.Errorf("deleted %v, want what the killed runs left: %v", removed, left)
	}
	now := verifyObjects(t, cp)
	for _, o := range left {
		if slices.Contains(now, o) {
			t.Errorf("%s is still there", o)
		}
	}
	if len(now) != 10 { // 2 Secrets, 2 ServiceAccounts, 1 ClusterRoleBinding each
		t.Errorf("want the 5 objects of the run still going and this run's 5, got %v", now)
	}
	if _, err := cp.Client.CoreV1().ServiceAccounts(verify.Namespace).Get(ctx, templates.ProxySA, metav1.GetOptions{}); err != nil {
		t.Errorf("the rendered ServiceAccount %s was deleted: %v", templates.ProxySA, err)
	}
	for _, tok := range []string{running.ScraperToken, ids.ScraperToken} {
		if !authenticated(t, cp, tok) {
			t.Error("a live run's token stopped working")
		}
	}
	framework.WaitFor(t, "the killed runs' tokens to be revoked", 15*time.Second, func() (bool, error) {
		for _, tok := range killedTokens {
			if authenticated(t, cp, tok) {
				return false, nil
			}
		}
		return true, nil
	})
	for _, c := range []*verify.Identities{running, ids} {
		if err := c.Cleanup(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if left := verifyObjects(t, cp); len(left) > 0 {
		t.Fatalf("cleanup left %v", left)
	}
}

// verifyObjects lists verify's temporary objects (named eksa-metrics-verify-*), sorted.
func verifyObjects(t *testing.T, cp *framework.ControlPlane) []string {
	t.Helper()
	var out []string
	for _, o := range leftovers(t, cp) {
		if strings.Contains(o, "eksa-metrics-verify-") {
			out = append(out, o)
		}
	}
	slices.Sort(out)
	return out
}

func authenticated(t *testing.T, cp *framework.ControlPlane, token string) bool {
	t.Helper()
	tr, err := cp.Client.AuthenticationV1().TokenReviews().Create(context.Background(), &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: token}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return tr.Status.Authenticated
}

// leftovers lists the objects labelled as eksa-metrics' in the namespaces verify uses.
func leftovers(t *testing.T, cp *framework.ControlPlane) []string {
	t.Helper()
	ctx := context.Background()
	sel := metav1.ListOptions{LabelSelector: templates.ManagedByLabel + "=" + templates.Prefix}
	var out []string
	for _, ns := range []string{"monitoring", verify.Namespace} {
		secrets, _ := cp.Client.CoreV1().Secrets(ns).List(ctx, sel)
		for _, s := range secrets.Items {
			out = append(out, "Secret "+ns+"/"+s.Name)
		}
		sas, _ := cp.Client.CoreV1().ServiceAccounts(ns).List(ctx, sel)
		for _, s := range sas.Items {
			out = append(out, "ServiceAccount "+ns+"/"+s.Name)
		}
	}
	crbs, _ := cp.Client.RbacV1().ClusterRoleBindings().List(ctx, sel)
	for _, b := range crbs.Items {
		out = append(out, "ClusterRoleBinding "+b.Name)
	}
	return out
}
