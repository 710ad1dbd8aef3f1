package integration

import (
	"bytes"
	"context"
	"crypto/x509"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	certutil "k8s.io/client-go/util/cert"

	"github.com/eksa-metrics/eksa-metrics/pkg/cluster"
	"github.com/eksa-metrics/eksa-metrics/pkg/components"
	"github.com/eksa-metrics/eksa-metrics/pkg/render"
	"github.com/eksa-metrics/eksa-metrics/pkg/spec"
	"github.com/eksa-metrics/eksa-metrics/pkg/templates"
	"github.com/eksa-metrics/eksa-metrics/pkg/validate"
)

// apply makes the serving CA and one certificate per proxy before the
// objects, refuses to overwrite a Secret it did not write, writes nothing on
// a second run, and renews what is due (restarting HAProxy, which reads its
// certificate only at start).
func TestApplyMakesAndRenewsServingCertificates(t *testing.T) {
	ctx := context.Background()
	cp, kubeconfig := dockerManagementCluster(t)
	specPath := writeSpecVersion(t, "docker", "  scrapers: [{kind: ServiceAccount, name: prometheus, namespace: monitoring}]\n  exposure: proxy\n", "1.36", "v0.26.1")
	secrets := cp.Client.CoreV1().Secrets(templates.SystemNS)

	// A Secret of that name that eksa-metrics did not write: refused, and nothing written.
	foreign := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: templates.ServingCA, Namespace: templates.SystemNS}, StringData: map[string]string{"x": "clearly-fake"}}
	if _, err := secrets.Create(ctx, foreign, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	code, stderr, reqs := apply(t, 0, "-f", specPath, "--kubeconfig", kubeconfig)
	if code == 0 || !strings.Contains(stderr, "was not written by eksa-metrics (it lacks the label eksa-metrics/certificate)") {
		t.Fatalf("a foreign Secret: exit %d\n%s", code, stderr)
	}
	if w := reqs.writes; w != 0 {
		t.Errorf("%d writes although the plan was refused", w)
	}
	// The same with eksa-metrics' labels copied onto it: still not ours.
	foreign, err := secrets.Get(ctx, templates.ServingCA, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	foreign.Labels = map[string]string{templates.ManagedByLabel: templates.Prefix, templates.CertificateLabel: "ca"}
	if _, err := secrets.Update(ctx, foreign, metav1.UpdateOptions{FieldManager: "someone"}); err != nil {
		t.Fatal(err)
	}
	if code, stderr, reqs := apply(t, 0, "-f", specPath, "--kubeconfig", kubeconfig); code == 0 || reqs.writes != 0 || !strings.Contains(stderr, "was not written by eksa-metrics") {
		t.Fatalf("a foreign Secret with copied labels: exit %d, %d writes\n%s", code, reqs.writes, stderr)
	}
	if err := secrets.Delete(ctx, templates.ServingCA, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}

	// validate --kubeconfig says they are missing before the first apply.
	_, results, _ := runValidate(t, "-f", specPath, "--kubeconfig", kubeconfig)
	if r := results["serving-certificates"]; r.Status != validate.Fail || !strings.Contains(strings.Join(r.Details, ";"), "Secret kube-system/eksa-metrics-etcd-serving") {
		t.Errorf("serving-certificates before apply: %+v", r)
	}
	code, stderr, _ = apply(t, 0, "-f", specPath, "--kubeconfig", kubeconfig)
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	if _, results, _ := runValidate(t, "-f", specPath, "--kubeconfig", kubeconfig); results["serving-certificates"].Status != validate.Pass {
		t.Errorf("serving-certificates after apply: %+v", results["serving-certificates"])
	}
	if strings.Contains(stderr, "PRIVATE KEY") {
		t.Fatal("apply printed a private key")
	}
	t.Logf("first apply:\n%s", stderr)
	caSecret, err := secrets.Get(ctx, templates.ServingCA, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caSecret.Data[corev1.TLSCertKey])
	served := []components.ID{components.KubeControllerManager, components.KubeScheduler, components.Etcd, components.KubeProxy}
	for _, id := range served {
		s, err := secrets.Get(ctx, templates.ServingSecret(id), metav1.GetOptions{})
		if err != nil {
			t.Fatalf("%s: %v", id, err)
		}
		leaf, err := certutil.ParseCertsPEM(s.Data[corev1.TLSCertKey])
		if err != nil {
			t.Fatalf("%s: %v", id, err)
		}
		if _, err := leaf[0].Verify(x509.VerifyOptions{Roots: pool, DNSName: templates.ServingName(id)}); err != nil {
			t.Errorf("%s: %v", id, err)
		}
	}
	bundle, err := cp.Client.CoreV1().ConfigMaps("monitoring").Get(ctx, templates.ServingCA, metav1.GetOptions{})
	if err != nil || bundle.Data[templates.CABundleKey] != string(caSecret.Data[corev1.TLSCertKey]) {
		t.Fatalf("the CA bundle in monitoring: %v %v", err, bundle)
	}
	if _, ok := bundle.Data["tls.key"]; ok {
		t.Fatal("the bundle carries a key")
	}

	code, stderr, reqs = apply(t, 0, "-f", specPath, "--kubeconfig", kubeconfig)
	if code != 0 || reqs.writes != 0 || strings.Contains(stderr, "+ create") || strings.Contains(stderr, "~ update") {
		t.Fatalf("second apply: exit %d, %d writes\n%s", code, reqs.writes, stderr)
	}

	// Eight months on, a third of their year is left: every serving
	// certificate is renewed, the CA and the bundle are kept, and HAProxy's
	// DaemonSet restarts.
	raw, err := os.ReadFile(specPath)
	if err != nil {
		t.Fatal(err)
	}
	f, err := spec.Load(specPath, bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	r, err := render.RenderFile(f, spec.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cl, err := cluster.Connect(ctx, "workload", cluster.ConnectOptions{Kubeconfig: kubeconfig})
	if err != nil {
		t.Fatal(err)
	}
	// Today, nothing is due; the controller comes back when the first one is
	// (a year's certificates: two thirds of a year from now).
	today, err := cl.PlanCertificates(ctx, r.Config, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if next := time.Until(cluster.NextRenewal(today)); next < 240*24*time.Hour || next > 245*24*time.Hour {
		t.Errorf("next renewal in %s, want two thirds of a year", next)
	}
	steps, err := cl.PlanCertificates(ctx, r.Config, time.Now().Add(250*24*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if next := cluster.NextRenewal(steps).Sub(time.Now().Add(250 * 24 * time.Hour)); next < 240*24*time.Hour || next > 245*24*time.Hour {
		t.Errorf("after the renewals, the next one in %s, want two thirds of a year", next)
	}
	renewed := 0
	for _, s := range steps {
		switch {
		case s.Action == cluster.Update && strings.Contains(s.Why, "renew the serving certificate"):
			renewed++
		case s.Action != cluster.Unchanged:
			t.Errorf("%s: %s %s", s, s.Action, s.Why)
		}
	}
	if renewed != len(served) {
		t.Fatalf("%d renewed, want %d: %+v", renewed, len(served), steps)
	}
	if err := cl.ExecuteCertificates(ctx, steps, false, nil); err != nil {
		t.Fatal(err)
	}
	// Certificates issued as if 250 days from now are not valid yet today;
	// validate reports them due for renewal.
	if _, results, _ := runValidate(t, "-f", specPath, "--kubeconfig", kubeconfig); results["serving-certificates"].Status != validate.Warn {
		t.Errorf("serving-certificates with certificates not valid yet: %+v", results["serving-certificates"])
	}
	ds, err := cp.Client.AppsV1().DaemonSets(templates.SystemNS).Get(ctx, templates.ControlPlaneDS, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	restarted := 0
	for k := range ds.Spec.Template.Annotations {
		if strings.HasPrefix(k, templates.CertificateLabel+"-") {
			restarted++
		}
	}
	if restarted != 2 {
		t.Errorf("the control-plane proxy's pod template has %d renewal annotations, want 2 (kube-controller-manager, kube-scheduler): %v", restarted, ds.Spec.Template.Annotations)
	}
	node, _ := cp.Client.AppsV1().DaemonSets(templates.SystemNS).Get(ctx, templates.NodeDS, metav1.GetOptions{})
	if len(node.Spec.Template.Annotations) != 0 {
		t.Errorf("kube-rbac-proxy reloads its certificate, but its DaemonSet was restarted: %v", node.Spec.Template.Annotations)
	}
	// Back in the present those certificates are not valid yet: apply
	// renews them again, and then writes nothing; the restart annotations
	// (another field manager's) survive its server-side apply.
	if code, stderr, _ := apply(t, 0, "-f", specPath, "--kubeconfig", kubeconfig); code != 0 || !strings.Contains(stderr, "not yet valid") {
		t.Fatalf("apply after the renewal: exit %d\n%s", code, stderr)
	}
	if code, stderr, reqs := apply(t, 0, "-f", specPath, "--kubeconfig", kubeconfig); code != 0 || reqs.writes != 0 {
		t.Fatalf("apply once more: exit %d, %d writes\n%s", code, reqs.writes, stderr)
	}
	ds, err = cp.Client.AppsV1().DaemonSets(templates.SystemNS).Get(ctx, templates.ControlPlaneDS, metav1.GetOptions{})
	if err != nil || len(ds.Spec.Template.Annotations) != 2 {
		t.Errorf("the restart annotations after apply: %v %v", err, ds.Spec.Template.Annotations)
	}
}
