package integration

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/eksa-metrics/eksa-metrics/config"
	"github.com/eksa-metrics/eksa-metrics/internal/cli"
	"github.com/eksa-metrics/eksa-metrics/test/framework"
)

// The controller's own metrics endpoint serves the certificate the real
// cert-manager issues from the Issuers and Certificate `controller
// manifests` prints, read from where the manifests mount its Secret
// (controller-runtime's CertDir under TMPDIR), so that a scraper that trusts
// only that CA, for the Service's name, gets the fleet metrics.
func TestControllerMetricsServeCertManagersCertificate(t *testing.T) {
	ctx := context.Background()
	f := newFleet(t, "w1")
	framework.Start(t, "cert-manager", framework.Binary(t, "cert-manager-controller"),
		[]string{"--kubeconfig", f.mgmt.Kubeconfig(t, "cert-manager", "system:cert-manager", "system:masters"), "--cluster-resource-namespace", "cert-manager"})
	ns := config.DefaultNamespace
	var secret map[string][]byte
	framework.WaitFor(t, "cert-manager issuing "+config.MetricsSecret, 60*time.Second, func() (bool, error) {
		s, err := f.mgmt.Client.CoreV1().Secrets(ns).Get(ctx, config.MetricsSecret, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		secret = s.Data
		return len(s.Data["tls.crt"]) > 0 && len(s.Data["tls.key"]) > 0 && len(s.Data["ca.crt"]) > 0, nil
	})
	// The pod's /tmp is TMPDIR here: the files go where the manifests mount them.
	tmp := t.TempDir()
	rel, ok := strings.CutPrefix(config.MetricsCertDir, "/tmp/")
	if !ok {
		t.Fatalf("the manifests mount the certificate at %s, not under the image's /tmp where controller-runtime looks", config.MetricsCertDir)
	}
	dir := filepath.Join(tmp, rel)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"tls.crt", "tls.key"} {
		if err := os.WriteFile(filepath.Join(dir, k), secret[k], 0o444); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("TMPDIR", tmp)
	addr := fmt.Sprintf("127.0.0.1:%d", framework.FreePort(t))
	f.startControllerWith(t, &counter{reqs: map[string]int{}}, func(o *cli.ControllerOptions) { o.MetricsAddress = addr })
	f.metricsConfig(t, false)

	// A scraper with get on /metrics.
	f.mgmt.ServiceAccount(t, "monitoring", "prometheus")
	rules := []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}}
	if _, err := f.mgmt.Client.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "metrics-scraper"}, Rules: rules}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.mgmt.Client.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "metrics-scraper"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "metrics-scraper"},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: "prometheus", Namespace: "monitoring"}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	token := f.mgmt.Token(t, "monitoring", "prometheus")
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(secret["ca.crt"])
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots, ServerName: config.MetricsServerName(ns), MinVersion: tls.VersionTLS12}}}
	var body string
	framework.WaitFor(t, "the fleet metrics over TLS verified with cert-manager's CA", 60*time.Second, func() (bool, error) {
		req, _ := http.NewRequest(http.MethodGet, "https://"+addr+"/metrics", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := client.Do(req)
		if err != nil {
			if strings.Contains(err.Error(), "certificate") {
				return false, err // served, but not cert-manager's certificate: no retry fixes that
			}
			return false, nil
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		body = string(b)
		return resp.StatusCode == http.StatusOK && strings.Contains(body, "eksa_metrics_cluster_applied"), nil
	})
	t.Logf("GET /metrics verified with cert-manager's CA for %s: %d bytes, eksa_metrics_cluster_applied present", config.MetricsServerName(ns), len(body))

	// The ServiceMonitor of --service-monitor, as prometheus-operator's
	// real CRD takes it: the CA of the Secret cert-manager issued, and the
	// Service's name.
	f.mgmt.InstallCRDDir(t, "prometheus-operator-full")
	raw, err := config.BuildWith(config.Options{Image: config.ImageRepository + ":v0.1.0", Namespace: ns, ServiceMonitor: true, ServiceMonitorLabels: map[string]string{"release": "kps"}})
	if err != nil {
		t.Fatal(err)
	}
	var sm map[string]any
	for _, doc := range strings.Split(string(raw), "\n---\n") {
		var obj map[string]any
		if err := yaml.Unmarshal([]byte(doc), &obj); err != nil {
			t.Fatal(err)
		}
		if obj["kind"] == "ServiceMonitor" {
			sm = obj
		}
	}
	if sm == nil {
		t.Fatal("--service-monitor printed no ServiceMonitor")
	}
	if err := f.mgmt.Apply(ctx, "installer", true, sm); err != nil {
		t.Fatalf("prometheus-operator's CRD refuses the ServiceMonitor: %v", err)
	}
	live, err := f.mgmt.Dynamic.Resource(schema.GroupVersionResource{Group: "monitoring.coreos.com", Version: "v1", Resource: "servicemonitors"}).Namespace(ns).Get(ctx, config.ControllerName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ep := live.Object["spec"].(map[string]any)["endpoints"].([]any)[0].(map[string]any)
	tlsCfg := ep["tlsConfig"].(map[string]any)
	if tlsCfg["serverName"] != config.MetricsServerName(ns) || tlsCfg["insecureSkipVerify"] == true ||
		tlsCfg["ca"].(map[string]any)["secret"].(map[string]any)["name"] != config.MetricsSecret {
		t.Errorf("the ServiceMonitor does not verify the controller's certificate: %v", tlsCfg)
	}
}
