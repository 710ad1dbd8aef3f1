package e2e

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/eksa-metrics/eksa-metrics/pkg/certs"
	"github.com/eksa-metrics/eksa-metrics/pkg/cluster"
	"github.com/eksa-metrics/eksa-metrics/pkg/components"
	"github.com/eksa-metrics/eksa-metrics/pkg/render"
	"github.com/eksa-metrics/eksa-metrics/pkg/templates"
	"github.com/eksa-metrics/eksa-metrics/test/framework"
)

// servingCertificates writes the serving certificates as apply does (the
// same code: plan, then execute, before the objects), and returns the steps.
func servingCertificates(t *testing.T, cp *framework.ControlPlane, r *render.Result) []*cluster.CertificateStep {
	t.Helper()
	ctx := context.Background()
	cl, err := cluster.Connect(ctx, "workload", cluster.ConnectOptions{Kubeconfig: cp.Kubeconfig(t, "admin", "kubernetes-admin", "system:masters")})
	if err != nil {
		t.Fatal(err)
	}
	steps, err := cl.PlanCertificates(ctx, r.Config, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if err := cl.ExecuteCertificates(ctx, steps, false, nil); err != nil {
		t.Fatal(err)
	}
	return steps
}

// servingCA is the CA's certificate, as the scrapers' bundle holds it.
func servingCA(t *testing.T, cp *framework.ControlPlane) *x509.CertPool {
	t.Helper()
	s, err := cp.Client.CoreV1().Secrets(templates.SystemNS).Get(context.Background(), templates.ServingCA, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(s.Data[corev1.TLSCertKey]) {
		t.Fatal("no CA certificate")
	}
	return pool
}

// servingFiles puts the serving-certificate volumes a proxy reads (paths
// under templates.ServingDir in its arguments or HAProxy configuration) into
// directories written from their Secrets, as the kubelet mounts them (the
// Secret's keys, and tls.crt.key, HAProxy's name for the key), and returns
// the text with those paths.
func servingFiles(t *testing.T, cp *framework.ControlPlane, text string) string {
	t.Helper()
	prefix := templates.ServingDir("")
	for _, m := range regexp.MustCompile(regexp.QuoteMeta(prefix)+`([a-z0-9-]+)/`).FindAllStringSubmatch(text, -1) {
		id := components.ID(m[1])
		// The proxies' Secrets are in kube-system, a sidecar's in its
		// controller's namespace; written by apply, or by cert-manager.
		list, err := cp.Client.CoreV1().Secrets("").List(context.Background(), metav1.ListOptions{LabelSelector: templates.CertificateLabel + " in (serving,cert-manager)"})
		if err != nil {
			t.Fatal(err)
		}
		i := slices.IndexFunc(list.Items, func(s corev1.Secret) bool { return s.Name == templates.ServingSecret(id) })
		if i < 0 {
			t.Fatalf("no Secret %s behind %s", templates.ServingSecret(id), m[0])
		}
		s := list.Items[i]
		local := t.TempDir()
		for name, data := range map[string][]byte{"tls.crt": s.Data[corev1.TLSCertKey], "tls.key": s.Data[corev1.TLSPrivateKeyKey], "tls.crt.key": s.Data[corev1.TLSPrivateKeyKey]} {
			if err := os.WriteFile(filepath.Join(local, name), data, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		text = strings.ReplaceAll(text, m[0], local+"/")
	}
	return text
}

// verifiedScrape scrapes a proxy as Prometheus does with the rendered
// tlsConfig: the CA bundle, the certificate's one name, verification on.
func verifiedScrape(t *testing.T, pool *x509.CertPool, id components.ID, url, token string) error {
	t.Helper()
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{
		RootCAs: pool, ServerName: templates.ServingName(id), MinVersion: tls.VersionTLS12}}}
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("status %d", resp.StatusCode)
	}
	return nil
}

// impostorCertificate is a certificate for a component's name from a CA
// that is not eksa-metrics'.
func impostorCertificate(t *testing.T, id components.ID) certs.Pair {
	t.Helper()
	other, err := certs.NewCA("not-eksa-metrics")
	if err != nil {
		t.Fatal(err)
	}
	pair, err := certs.Issue(other, templates.ServingName(id), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return pair
}

// wrongCA replaces the kube-proxy proxy's serving certificate on worker-1 by
// one from another CA for the same name (the Secret replaced, the pod
// restarted): Prometheus must refuse that target and keep the others up;
// then apply's certificate step puts a good one back.
func wrongCA(t *testing.T, c *framework.Cluster, p *framework.Prometheus, r *render.Result, proxies []*framework.Process) {
	t.Helper()
	ctx := context.Background()
	id := components.KubeProxy
	secrets := c.Client.CoreV1().Secrets(templates.SystemNS)
	s, err := secrets.Get(ctx, templates.ServingSecret(id), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	bad := impostorCertificate(t, id)
	s.Data = map[string][]byte{corev1.TLSCertKey: bad.Cert, corev1.TLSPrivateKeyKey: bad.Key}
	if _, err := secrets.Update(ctx, s, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	restart := func() {
		t.Helper()
		for _, proc := range proxies {
			if proc.Name == "kube-rbac-proxy-kube-proxy@worker-1" {
				proc.Stop()
			}
		}
		var pod []corev1.Pod
		for _, po := range c.RunningPods(t, templates.SystemNS, templates.NameLabel+"="+templates.NodeDS, len(c.Nodes)) {
			if po.Spec.NodeName == "worker-1" {
				pod = append(pod, po)
			}
		}
		rbacImage, _, _ := strings.Cut(r.Config.Images.KubeRBACProxy, ":")
		proxies = append(proxies, c.RunPods(t, pod, framework.Images{rbacImage: framework.Binary(t, "kube-rbac-proxy")})...)
	}
	restart()
	workerIP := c.NodeOf(t, "worker-1").Host.IP
	p.WaitTargets(t, "kube-proxy on worker-1 refused for its certificate", 60*time.Second, func(ts []framework.Target) error {
		for _, tg := range ts {
			onWorker := tg.Labels["job"] == "kube-proxy" && strings.Contains(tg.ScrapeURL, workerIP+":")
			switch {
			case onWorker && (tg.Health != "down" || !strings.Contains(tg.LastError, "x509")):
				return fmt.Errorf("%s: %s %q", tg.ScrapeURL, tg.Health, tg.LastError)
			case !onWorker && tg.Health != "up":
				return fmt.Errorf("%s is %s too: %s", tg.ScrapeURL, tg.Health, tg.LastError)
			}
		}
		return nil
	})
	for _, tg := range p.Targets(t) {
		if tg.Labels["job"] == "kube-proxy" && strings.Contains(tg.ScrapeURL, workerIP+":") {
			t.Logf("a certificate from another CA on worker-1: %s: %s", tg.ScrapeURL, tg.LastError)
			break
		}
	}
	// apply renews what does not verify against its CA.
	steps := servingCertificates(t, c.ControlPlane, r)
	renewed := false
	for _, st := range steps {
		renewed = renewed || st.Name == templates.ServingSecret(id) && st.Action == cluster.Update
	}
	if !renewed {
		t.Fatalf("apply did not renew the certificate from another CA: %+v", steps)
	}
	restart()
	p.WaitTargets(t, "kube-proxy on worker-1 up again", 60*time.Second, func(ts []framework.Target) error {
		for _, tg := range ts {
			if tg.Health != "up" {
				return fmt.Errorf("%s is %s: %s", tg.ScrapeURL, tg.Health, tg.LastError)
			}
		}
		return nil
	})
}
