package integration

import (
	"context"
	"crypto/x509"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	certutil "k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/retry"

	"github.com/eksa-metrics/eksa-metrics/pkg/components"
	"github.com/eksa-metrics/eksa-metrics/pkg/templates"
	"github.com/eksa-metrics/eksa-metrics/pkg/validate"
	"github.com/eksa-metrics/eksa-metrics/test/framework"
)

var certificateGVR = schema.GroupVersionResource{Group: "cert-manager.io", Version: "v1", Resource: "certificates"}

// tls.certificates: cert-manager, with the real cert-manager controllers
// (Certificate lifecycle, CA and self-signed issuers) against a real API
// server: apply refuses where cert-manager is not installed and where a
// Secret it would overwrite is someone else's, then renders the namespaced
// Issuers and Certificates, waits for cert-manager to issue them and
// publishes the CA bundle; each certificate verifies for its proxy's name
// against that bundle, and someone who may create Certificates only in
// another namespace cannot have eksa-metrics' CA sign one. A second apply
// writes nothing; a renewal by cert-manager restarts HAProxy (which reads its
// certificate at start) and nothing else; switching to none prunes the
// Certificates and the Secrets cert-manager issued from them, and back to
// cert-manager and on to eksa-metrics replaces them.
func TestApplyWithCertManager(t *testing.T) {
	ctx := context.Background()
	cp, kubeconfig := dockerManagementCluster(t)
	specPath := writeSpecVersion(t, "docker", "  scrapers: [{kind: ServiceAccount, name: prometheus, namespace: monitoring}]\n  exposure: proxy\n  tls: {certificates: cert-manager}\n", "1.36", "v0.26.1")

	// No cert-manager in the cluster: refused before any write.
	code, stderr, reqs := apply(t, 0, "-f", specPath, "--kubeconfig", kubeconfig)
	if code == 0 || reqs.writes != 0 || !strings.Contains(stderr, "cert-manager must run in that cluster") {
		t.Fatalf("without cert-manager: exit %d, %d writes\n%s", code, reqs.writes, stderr)
	}

	cp.InstallCRDDir(t, "cert-manager")
	if _, err := cp.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: templates.CertManagerNS}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cp.StartGarbageCollector(t)
	certManager := framework.Start(t, "cert-manager", framework.Binary(t, "cert-manager-controller"), []string{"--kubeconfig", kubeconfig, "--cluster-resource-namespace", templates.CertManagerNS})

	// A Secret of a proxy's name that neither cert-manager issued for
	// eksa-metrics nor apply wrote: cert-manager would overwrite it, so
	// apply refuses.
	secrets := cp.Client.CoreV1().Secrets(templates.SystemNS)
	etcdSecret := templates.ServingSecret(components.Etcd)
	foreign := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: etcdSecret, Namespace: templates.SystemNS}, StringData: map[string]string{"x": "clearly-fake"}}
	if _, err := secrets.Create(ctx, foreign, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if code, stderr, reqs := apply(t, 0, "-f", specPath, "--kubeconfig", kubeconfig); code == 0 || reqs.writes != 0 || !strings.Contains(stderr, "cert-manager would overwrite it") {
		t.Fatalf("a foreign Secret: exit %d, %d writes\n%s", code, reqs.writes, stderr)
	}
	if err := secrets.Delete(ctx, etcdSecret, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}

	code, stderr, _ = apply(t, 0, "-f", specPath, "--kubeconfig", kubeconfig)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n--- cert-manager\n%s", code, stderr, certManager.Tail(40))
	}
	if strings.Contains(stderr, "PRIVATE KEY") {
		t.Fatal("apply printed a private key")
	}
	t.Logf("first apply:\n%s", stderr)
	for _, want := range []string{"Certificate kube-system/" + etcdSecret + " created", "Issuer kube-system/" + templates.CAIssuer + " created",
		"Issuer kube-system/" + templates.SelfSignedIssuer + " created", "ConfigMap monitoring/" + templates.ServingCA + " created"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("apply did not report %q", want)
		}
	}

	// No management controller is installed here: only kube-system serves
	// certificates, so the bundle is the CA of kube-system.
	pool := bundlePool(t, cp, "monitoring", templates.SystemNS)
	served := []components.ID{components.KubeControllerManager, components.KubeScheduler, components.Etcd, components.KubeProxy}
	serials := map[components.ID]string{}
	for _, id := range served {
		leaf := issued(t, cp, templates.SystemNS, templates.ServingSecret(id))
		if _, err := leaf.Verify(x509.VerifyOptions{Roots: pool, DNSName: templates.ServingName(id)}); err != nil {
			t.Errorf("%s: %v", id, err)
		}
		if d := leaf.NotAfter.Sub(leaf.NotBefore); d < 364*24*time.Hour || d > 366*24*time.Hour {
			t.Errorf("%s: valid for %s, want a year", id, d)
		}
		serials[id] = leaf.SerialNumber.Text(16)
	}
	// A certificate for another name does not verify as this one.
	if _, err := issued(t, cp, templates.SystemNS, etcdSecret).Verify(x509.VerifyOptions{Roots: pool, DNSName: templates.ServingName(components.KubeProxy)}); err == nil {
		t.Error("etcd's certificate verifies for kube-proxy's name")
	}
	if _, results, _ := runValidate(t, "-f", specPath, "--kubeconfig", kubeconfig); results["serving-certificates"].Status != validate.Pass {
		t.Errorf("serving-certificates after apply: %+v", results["serving-certificates"])
	}

	if code, stderr, reqs := apply(t, 0, "-f", specPath, "--kubeconfig", kubeconfig); code != 0 || reqs.writes != 0 {
		t.Fatalf("second apply: exit %d, %d writes\n%s", code, reqs.writes, stderr)
	}

	tenantCannotUseTheCA(t, cp, certManager)

	// cert-manager renews kube-scheduler's certificate (as cmctl renew asks
	// it to): the next apply restarts HAProxy, which reads it only at start,
	// recording the new serial; kube-rbac-proxy reloads its own.
	before := controlPlaneProxyAnnotations(t, cp)
	renew(t, cp, templates.SystemNS, templates.ServingSecret(components.KubeScheduler))
	framework.WaitFor(t, "cert-manager to renew kube-scheduler's certificate", time.Minute, func() (bool, error) {
		leaf, err := readLeaf(cp, templates.SystemNS, templates.ServingSecret(components.KubeScheduler))
		return err == nil && leaf.SerialNumber.Text(16) != serials[components.KubeScheduler], err
	}, certManager)
	code, stderr, _ = apply(t, 0, "-f", specPath, "--kubeconfig", kubeconfig)
	if code != 0 || strings.Count(stderr, "DaemonSet kube-system/"+templates.ControlPlaneDS+" restarted") != 1 {
		t.Fatalf("apply after the renewal: exit %d\n%s", code, stderr)
	}
	after := controlPlaneProxyAnnotations(t, cp)
	newSerial := issued(t, cp, templates.SystemNS, templates.ServingSecret(components.KubeScheduler)).SerialNumber.Text(16)
	key := templates.CertificateLabel + "-" + templates.ServingSecret(components.KubeScheduler)
	if after[key] != newSerial || before[key] == after[key] {
		t.Errorf("HAProxy's pod template: %s went from %q to %q, want the new serial %s", key, before[key], after[key], newSerial)
	}
	otherKey := templates.CertificateLabel + "-" + templates.ServingSecret(components.KubeControllerManager)
	if before[otherKey] == "" || after[otherKey] != before[otherKey] {
		t.Errorf("kube-controller-manager's annotation changed or was never set: %q -> %q", before[otherKey], after[otherKey])
	}
	if code, stderr, reqs := apply(t, 0, "-f", specPath, "--kubeconfig", kubeconfig); code != 0 || reqs.writes != 0 {
		t.Fatalf("apply once more: exit %d, %d writes\n%s", code, reqs.writes, stderr)
	}

	// tls.certificates: none: the Certificates and issuers are pruned, and
	// so are the Secrets cert-manager issued from them (a fresh apply of
	// none has none); a Secret with copied labels that cert-manager did not
	// issue for eksa-metrics stays.
	copied := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "copied-labels", Namespace: templates.SystemNS,
		Labels: map[string]string{templates.ManagedByLabel: templates.Prefix, templates.CertificateLabel: "cert-manager"}}, StringData: map[string]string{"x": "clearly-fake"}}
	if _, err := secrets.Create(ctx, copied, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	none := writeSpecVersion(t, "docker", "  scrapers: [{kind: ServiceAccount, name: prometheus, namespace: monitoring}]\n  exposure: proxy\n  tls: {certificates: none}\n", "1.36", "v0.26.1")
	if code, stderr, _ := apply(t, 0, "-f", none, "--kubeconfig", kubeconfig); code != 0 {
		t.Fatalf("apply with none: exit %d\n%s", code, stderr)
	}
	list, err := cp.Dynamic.Resource(certificateGVR).Namespace("").List(ctx, metav1.ListOptions{})
	if err != nil || len(list.Items) != 0 {
		t.Errorf("Certificates left after tls.certificates: none: %v %d", err, len(list.Items))
	}
	issuers, err := cp.Dynamic.Resource(certificateGVR.GroupVersion().WithResource("issuers")).Namespace("").List(ctx, metav1.ListOptions{})
	if err != nil || len(issuers.Items) != 0 {
		t.Errorf("Issuers left after tls.certificates: none: %v %d", err, len(issuers.Items))
	}
	left, err := secrets.List(ctx, metav1.ListOptions{LabelSelector: templates.CertificateLabel})
	if err != nil || len(left.Items) != 1 || left.Items[0].Name != copied.Name {
		t.Errorf("after tls.certificates: none, the Secrets labelled %s are %v (%v), want only %s", templates.CertificateLabel, secretNames(left), err, copied.Name)
	}

	// Back to cert-manager, then straight to tls.certificates: eksa-metrics:
	// apply replaces each Secret cert-manager issued after the objects
	// (which prune its Certificate), and the proxies serve apply's.
	if code, stderr, _ := apply(t, 0, "-f", specPath, "--kubeconfig", kubeconfig); code != 0 {
		t.Fatalf("back to cert-manager: exit %d\n%s\n%s", code, stderr, certificateConditions(t, cp))
	}
	// The render (offline) has Certificates for the management controllers
	// this cluster does not run too; cert-manager is let finish those, so
	// that none of its issuances is still in flight when the move prunes
	// them (kube-system's go straight on).
	framework.WaitFor(t, "cert-manager to issue the Certificates outside kube-system", 2*time.Minute, func() (bool, error) {
		list, err := cp.Dynamic.Resource(certificateGVR).Namespace("").List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		for _, c := range list.Items {
			if c.GetNamespace() == templates.SystemNS {
				continue
			}
			conds, _, _ := unstructured.NestedSlice(c.Object, "status", "conditions")
			if !slices.ContainsFunc(conds, func(x any) bool {
				m, _ := x.(map[string]any)
				return m["type"] == "Ready" && m["status"] == "True"
			}) {
				return false, fmt.Errorf("Certificate %s/%s not Ready", c.GetNamespace(), c.GetName())
			}
		}
		return true, nil
	}, certManager)
	own := writeSpecVersion(t, "docker", "  scrapers: [{kind: ServiceAccount, name: prometheus, namespace: monitoring}]\n  exposure: proxy\n  tls: {certificates: eksa-metrics}\n", "1.36", "v0.26.1")
	code, stderr, _ = apply(t, 0, "-f", own, "--kubeconfig", kubeconfig)
	if code != 0 || !strings.Contains(stderr, "in place of the one cert-manager issued") {
		t.Fatalf("from cert-manager straight to eksa-metrics: exit %d\n%s", code, stderr)
	}
	s, err := secrets.Get(ctx, etcdSecret, metav1.GetOptions{})
	if err != nil || s.Labels[templates.CertificateLabel] != "serving" || s.Annotations[templates.CertManagerCertificateAnnotation] != "" {
		t.Errorf("apply's own etcd Secret: %v %v %v", err, s.Labels, s.Annotations)
	}
	// The bundle is now apply's CA alone.
	bundle, err := cp.Client.CoreV1().ConfigMaps("monitoring").Get(ctx, templates.ServingCA, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ownCA, err := secrets.Get(ctx, templates.ServingCA, metav1.GetOptions{})
	if err != nil || bundle.Data[templates.CABundleKey] != string(ownCA.Data[corev1.TLSCertKey]) {
		t.Fatalf("the bundle after the move to eksa-metrics is not apply's CA (%v)", err)
	}
	pool = x509.NewCertPool()
	pool.AppendCertsFromPEM(ownCA.Data[corev1.TLSCertKey])
	if leaf, err := readLeaf(cp, templates.SystemNS, etcdSecret); err != nil {
		t.Error(err)
	} else if _, err := leaf.Verify(x509.VerifyOptions{Roots: pool, DNSName: templates.ServingName(components.Etcd)}); err != nil {
		t.Errorf("etcd's certificate after the move to eksa-metrics does not verify against the published bundle: %v", err)
	}
	if code, stderr, reqs := apply(t, 0, "-f", own, "--kubeconfig", kubeconfig); code != 0 || reqs.writes != 0 {
		t.Fatalf("apply once more: exit %d, %d writes\n%s", code, reqs.writes, stderr)
	}
}

func secretNames(l *corev1.SecretList) []string {
	if l == nil {
		return nil
	}
	var out []string
	for _, s := range l.Items {
		out = append(out, s.Namespace+"/"+s.Name)
	}
	return out
}

// issued is the leaf certificate cert-manager wrote into a Secret for
// eksa-metrics' Certificate of the same name.
func issued(t *testing.T, cp *framework.ControlPlane, ns, name string) *x509.Certificate {
	t.Helper()
	s, err := cp.Client.CoreV1().Secrets(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Annotations[templates.CertManagerCertificateAnnotation]; got != name {
		t.Fatalf("Secret %s/%s: issued for Certificate %q", ns, name, got)
	}
	leaf, err := readLeaf(cp, ns, name)
	if err != nil {
		t.Fatal(err)
	}
	return leaf
}

func readLeaf(cp *framework.ControlPlane, ns, name string) (*x509.Certificate, error) {
	s, err := cp.Client.CoreV1().Secrets(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	certs, err := certutil.ParseCertsPEM(s.Data[corev1.TLSCertKey])
	if err != nil {
		return nil, fmt.Errorf("Secret %s/%s: %w", ns, name, err)
	}
	return certs[0], nil
}

// renew asks cert-manager to issue a Certificate again, as cmctl renew does:
// an Issuing condition on its status.
func renew(t *testing.T, cp *framework.ControlPlane, ns, name string) {
	t.Helper()
	ri := cp.Dynamic.Resource(certificateGVR).Namespace(ns)
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		u, err := ri.Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
		conds = append(conds, map[string]any{"type": "Issuing", "status": "True", "reason": "ManuallyTriggered",
			"message": "renewal asked by the test", "lastTransitionTime": time.Now().UTC().Format(time.RFC3339)})
		if err := unstructured.SetNestedSlice(u.Object, conds, "status", "conditions"); err != nil {
			return err
		}
		_, err = ri.UpdateStatus(context.Background(), u, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

func controlPlaneProxyAnnotations(t *testing.T, cp *framework.ControlPlane) map[string]string {
	t.Helper()
	ds, err := cp.Client.AppsV1().DaemonSets(templates.SystemNS).Get(context.Background(), templates.ControlPlaneDS, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return ds.Spec.Template.Annotations
}
