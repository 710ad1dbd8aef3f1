package integration

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	certutil "k8s.io/client-go/util/cert"

	"github.com/eksa-metrics/eksa-metrics/pkg/cluster"
	"github.com/eksa-metrics/eksa-metrics/pkg/render"
	"github.com/eksa-metrics/eksa-metrics/pkg/spec"
	"github.com/eksa-metrics/eksa-metrics/pkg/templates"
	"github.com/eksa-metrics/eksa-metrics/test/framework"
)

var clusterIssuerGVR = schema.GroupVersionResource{Group: "cert-manager.io", Version: "v1", Resource: "clusterissuers"}

// A management cluster that an earlier eksa-metrics set up with
// tls.certificates: cert-manager (ClusterIssuers, the CA in cert-manager's
// namespace, every serving Certificate from the CA ClusterIssuer, the bundle
// of that CA), with the real cert-manager: apply moves it to the namespaced
// Issuers. It prunes the ClusterIssuers and the old CA Certificate, waits
// until cert-manager has issued every serving certificate again from the CA
// Issuer of its namespace (same Secrets, same names), publishes the CAs of
// all ten namespaces as the bundle (the old CA no longer in it), and a
// second apply writes nothing. Then no one else can use the CA.
func TestApplyMovesCertManagerToNamespacedIssuers(t *testing.T) {
	ctx := context.Background()
	cp, kubeconfig := dockerManagementCluster(t)
	// The management controllers of a Docker management cluster, each with
	// a serving certificate in its own namespace: those eksa-metrics'
	// sidecars serve (curated packages', cert-manager's: their Deployments
	// only; the test's cert-manager runs outside) and those that serve it
	// themselves (EKS-A's, Cluster API's, CAPD, etcdadm's).
	cp.InstallUpstream(t, "eks-anywhere-packages-v0.4.17.yaml", "cert-manager-v1.20.2.yaml", "eksa-controller-manager-v0.26.1.yaml", "capi-core-v1.13.2.yaml",
		"capi-kubeadm-bootstrap-v1.13.2.yaml", "capi-kubeadm-control-plane-v1.13.2.yaml", "capd-v1.13.2.yaml",
		"etcdadm-bootstrap-provider-v1.0.22.yaml", "etcdadm-controller-v1.0.28.yaml")
	cp.InstallCRDDir(t, "cert-manager")
	certManager := framework.Start(t, "cert-manager", framework.Binary(t, "cert-manager-controller"), []string{"--kubeconfig", kubeconfig, "--cluster-resource-namespace", templates.CertManagerNS})
	specPath := writeSpecVersion(t, "docker", "  scrapers: [{kind: ServiceAccount, name: prometheus, namespace: monitoring}]\n  exposure: proxy\n  tls: {certificates: cert-manager}\n", "1.36", "v0.26.1")
	r := renderPath(t, specPath)
	served := templates.ServingSecrets(r.Config)
	namespaces := templates.IssuerNamespaces(served)
	if want := []string{"capd-system", "capi-kubeadm-bootstrap-system", "capi-kubeadm-control-plane-system", "capi-system", templates.CertManagerNS, "eksa-packages",
		"eksa-system", "etcdadm-bootstrap-provider-system", "etcdadm-controller-system", templates.SystemNS}; !slices.Equal(namespaces, want) {
		t.Fatalf("serving certificates in %v, want %v: the test would not cover a bundle of several namespaces", namespaces, want)
	}

	// What the earlier release applied, as it applied it, once cert-manager
	// issued it; and the bundle it published.
	if err := cp.Apply(ctx, cluster.FieldManager, true, clusterIssuerRender(t, r)...); err != nil {
		t.Fatal(err)
	}
	framework.WaitFor(t, "cert-manager to issue the serving certificates from the ClusterIssuer", 2*time.Minute, func() (bool, error) {
		for _, sv := range served {
			s, err := cp.Client.CoreV1().Secrets(sv.Namespace).Get(ctx, sv.Name, metav1.GetOptions{})
			if err != nil || s.Annotations["cert-manager.io/issuer-kind"] != "ClusterIssuer" {
				return false, err
			}
		}
		return true, nil
	}, certManager)
	oldCA, err := cp.Client.CoreV1().Secrets(templates.CertManagerNS).Get(ctx, templates.ServingCA, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	oldPool := x509.NewCertPool()
	if !oldPool.AppendCertsFromPEM(oldCA.Data[corev1.TLSCertKey]) {
		t.Fatal("the old CA holds no certificate")
	}
	if _, err := cp.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "monitoring"}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	oldBundle := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: templates.ServingCA, Namespace: "monitoring",
		Labels: map[string]string{templates.ManagedByLabel: templates.Prefix, templates.CertificateLabel: "bundle"}},
		Data: map[string]string{templates.CABundleKey: string(oldCA.Data[corev1.TLSCertKey])}}
	if _, err := cp.Client.CoreV1().ConfigMaps("monitoring").Create(ctx, oldBundle, metav1.CreateOptions{FieldManager: cluster.FieldManager}); err != nil {
		t.Fatal(err)
	}
	oldSerial := map[string]string{}
	for _, sv := range served {
		oldSerial[sv.Namespace+"/"+sv.Name] = issued(t, cp, sv.Namespace, sv.Name).SerialNumber.Text(16)
	}

	code, stderr, _ := apply(t, 0, "-f", specPath, "--kubeconfig", kubeconfig)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n--- cert-manager\n%s", code, stderr, certManager.Tail(40))
	}
	t.Logf("apply over the ClusterIssuers:\n%s", stderr)
	for _, want := range []string{"ClusterIssuer " + templates.CAIssuer + " deleted", "ClusterIssuer " + templates.SelfSignedIssuer + " deleted",
		"Certificate " + templates.CertManagerNS + "/" + templates.ServingCA + " deleted", "ConfigMap monitoring/" + templates.ServingCA + " configured"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("apply did not report %q", want)
		}
	}
	for _, ns := range namespaces {
		for _, want := range []string{"Issuer " + ns + "/" + templates.CAIssuer + " created", "Issuer " + ns + "/" + templates.SelfSignedIssuer + " created", "Certificate " + ns + "/" + templates.IssuerCA + " created"} {
			if !strings.Contains(stderr, want) {
				t.Errorf("apply did not report %q", want)
			}
		}
	}
	for _, name := range []string{templates.CAIssuer, templates.SelfSignedIssuer} {
		if _, err := cp.Dynamic.Resource(clusterIssuerGVR).Get(ctx, name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("ClusterIssuer %s after apply: %v", name, err)
		}
	}
	if _, err := cp.Dynamic.Resource(certificateGVR).Namespace(templates.CertManagerNS).Get(ctx, templates.ServingCA, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the old CA Certificate after apply: %v", err)
	}

	// Every serving certificate again, in the same Secret, from the Issuer of
	// its namespace; it verifies with the new bundle, not with the old CA.
	pool := bundlePool(t, cp, "monitoring", namespaces...)
	for _, sv := range served {
		s, err := cp.Client.CoreV1().Secrets(sv.Namespace).Get(ctx, sv.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if kind, name := s.Annotations["cert-manager.io/issuer-kind"], s.Annotations["cert-manager.io/issuer-name"]; kind != "Issuer" || name != templates.CAIssuer {
			t.Errorf("Secret %s/%s issued by %s %s", sv.Namespace, sv.Name, kind, name)
		}
		leaf := issued(t, cp, sv.Namespace, sv.Name)
		if leaf.SerialNumber.Text(16) == oldSerial[sv.Namespace+"/"+sv.Name] {
			t.Errorf("Secret %s/%s holds the certificate from the ClusterIssuer still", sv.Namespace, sv.Name)
		}
		if _, err := leaf.Verify(x509.VerifyOptions{Roots: pool, DNSName: sv.DNSName}); err != nil {
			t.Errorf("%s/%s with the bundle: %v", sv.Namespace, sv.Name, err)
		}
		if _, err := leaf.Verify(x509.VerifyOptions{Roots: oldPool, DNSName: sv.DNSName}); err == nil {
			t.Errorf("%s/%s verifies with the old CA", sv.Namespace, sv.Name)
		}
	}
	if code, stderr, reqs := apply(t, 0, "-f", specPath, "--kubeconfig", kubeconfig); code != 0 || reqs.writes != 0 {
		t.Fatalf("second apply: exit %d, %d writes\n%s", code, reqs.writes, stderr)
	}

	tenantCannotUseTheCA(t, cp, certManager)
}

// bundlePool reads the CA bundle apply published in a namespace: it must be
// the CAs cert-manager issued in caNamespaces (sorted), each once, in that
// order.
func bundlePool(t *testing.T, cp *framework.ControlPlane, ns string, caNamespaces ...string) *x509.CertPool {
	t.Helper()
	ctx := context.Background()
	bundle, err := cp.Client.CoreV1().ConfigMaps(ns).Get(ctx, templates.ServingCA, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var want bytes.Buffer
	seen := map[string]bool{}
	for _, caNS := range caNamespaces {
		ca, err := cp.Client.CoreV1().Secrets(caNS).Get(ctx, templates.IssuerCA, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		certs, err := certutil.ParseCertsPEM(ca.Data[corev1.TLSCertKey])
		if err != nil || len(certs) != 1 || !certs[0].IsCA || seen[string(certs[0].Raw)] {
			t.Fatalf("Secret %s/%s: not one CA of its own (%v)", caNS, templates.IssuerCA, err)
		}
		seen[string(certs[0].Raw)] = true
		want.Write(ca.Data[corev1.TLSCertKey])
	}
	if got := bundle.Data[templates.CABundleKey]; got != want.String() {
		t.Fatalf("ConfigMap %s/%s is not the CAs of %v:\n%s", ns, templates.ServingCA, caNamespaces, got)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(want.Bytes()) {
		t.Fatal("the bundle holds no certificate")
	}
	return pool
}

// renderPath renders a spec file as apply does.
func renderPath(t *testing.T, path string) *render.Result {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	f, err := spec.Load(path, bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	r, err := render.RenderFile(f, spec.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// clusterIssuerRender is what eksa-metrics rendered for tls.certificates:
// cert-manager before its issuers were namespaced: the ClusterIssuers
// eksa-metrics-selfsigned and eksa-metrics-ca, the CA as Certificate
// eksa-metrics-serving-ca in cert-manager's namespace, and the same serving
// Certificates with issuerRef kind ClusterIssuer.
func clusterIssuerRender(t *testing.T, r *render.Result) []map[string]any {
	t.Helper()
	labels := map[string]any{templates.ManagedByLabel: templates.Prefix, templates.ClusterLabel: r.Config.ClusterName}
	clusterRef := func(name string) map[string]any {
		return map[string]any{"group": "cert-manager.io", "kind": "ClusterIssuer", "name": name}
	}
	out := []map[string]any{
		{"apiVersion": templates.CertManagerAPIVersion, "kind": "ClusterIssuer", "metadata": map[string]any{"name": templates.SelfSignedIssuer, "labels": labels},
			"spec": map[string]any{"selfSigned": map[string]any{}}},
		{"apiVersion": templates.CertManagerAPIVersion, "kind": "Certificate", "metadata": map[string]any{"name": templates.ServingCA, "namespace": templates.CertManagerNS, "labels": labels},
			"spec": map[string]any{"isCA": true, "commonName": templates.ServingCA, "secretName": templates.ServingCA, "duration": "87600h",
				"privateKey": map[string]any{"algorithm": "ECDSA", "size": 256}, "issuerRef": clusterRef(templates.SelfSignedIssuer)}},
		{"apiVersion": templates.CertManagerAPIVersion, "kind": "ClusterIssuer", "metadata": map[string]any{"name": templates.CAIssuer, "labels": labels},
			"spec": map[string]any{"ca": map[string]any{"secretName": templates.ServingCA}}},
	}
	for _, o := range r.Objects {
		if o.Kind() != "Certificate" || o.Name() == templates.IssuerCA {
			continue
		}
		raw, err := json.Marshal(o.Object)
		if err != nil {
			t.Fatal(err)
		}
		var c map[string]any
		if err := json.Unmarshal(raw, &c); err != nil {
			t.Fatal(err)
		}
		if err := unstructured.SetNestedMap(c, clusterRef(templates.CAIssuer), "spec", "issuerRef"); err != nil {
			t.Fatal(err)
		}
		out = append(out, c)
	}
	if len(out) == 3 {
		t.Fatal("no serving Certificate rendered")
	}
	return out
}
