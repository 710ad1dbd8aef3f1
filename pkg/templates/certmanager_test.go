package templates

import (
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	metricsv1alpha1 "github.com/eksa-metrics/eksa-metrics/pkg/apis/metrics/v1alpha1"
)

// With tls.certificates: cert-manager, every Secret a proxy mounts is the
// secretName of a Certificate from eksa-metrics' CA issuer, whose one DNS
// name is the serverName every scrape of that proxy verifies; the CA comes
// from the self-signed issuer, into the Secret the CA issuer reads.
func TestCertManagerCertificatesMatchProxiesAndScrapes(t *testing.T) {
	c := allOn(metricsv1alpha1.ExposureProxy)
	c.ServingCertificates, c.CertManager = true, true
	objs := CertManagerObjects(c)

	dnsOf := map[string]string{} // namespace/secretName -> DNS name
	var caIssuerSecret, caSecret string
	for _, o := range objs {
		u := unstructured.Unstructured{Object: o}
		switch {
		case u.GetKind() == "ClusterIssuer" && u.GetName() == CAIssuer:
			caIssuerSecret, _, _ = unstructured.NestedString(o, "spec", "ca", "secretName")
		case u.GetKind() == "Certificate" && u.GetName() == ServingCA:
			issuer, _, _ := unstructured.NestedString(o, "spec", "issuerRef", "name")
			isCA, _, _ := unstructured.NestedBool(o, "spec", "isCA")
			if issuer != SelfSignedIssuer || !isCA || u.GetNamespace() != CertManagerNS {
				t.Errorf("the CA Certificate: issuer %q, isCA %v, namespace %q", issuer, isCA, u.GetNamespace())
			}
			caSecret, _, _ = unstructured.NestedString(o, "spec", "secretName")
		case u.GetKind() == "Certificate":
			issuer, _, _ := unstructured.NestedString(o, "spec", "issuerRef", "name")
			names, _, _ := unstructured.NestedStringSlice(o, "spec", "dnsNames")
			secret, _, _ := unstructured.NestedString(o, "spec", "secretName")
			if issuer != CAIssuer || len(names) != 1 {
				t.Errorf("Certificate %s: issuer %q, dnsNames %v", u.GetName(), issuer, names)
				continue
			}
			dnsOf[u.GetNamespace()+"/"+secret] = names[0]
		}
	}
	if caSecret == "" || caSecret != caIssuerSecret {
		t.Errorf("the CA issuer reads Secret %q, the CA Certificate writes %q", caIssuerSecret, caSecret)
	}

	mounted := 0
	for _, o := range Proxies(c) {
		vols, _, _ := unstructured.NestedSlice(o, "spec", "template", "spec", "volumes")
		for _, v := range vols {
			name, ok, _ := unstructured.NestedString(v.(map[string]any), "secret", "secretName")
			if !ok {
				continue
			}
			mounted++
			if _, ok := dnsOf[SystemNS+"/"+name]; !ok {
				t.Errorf("a proxy mounts Secret %s, which no Certificate issues", name)
			}
		}
	}
	if mounted == 0 {
		t.Fatal("no proxy mounts a serving certificate: the test checks nothing")
	}

	var want []string
	for _, dns := range dnsOf {
		want = append(want, dns)
	}
	verified := 0
	for _, tg := range targets(c) {
		if !tg.ownCA {
			continue
		}
		verified++
		if !slices.Contains(want, tg.serverName) {
			t.Errorf("a scrape verifies server name %s, which no Certificate names", tg.serverName)
		}
	}
	if verified != len(dnsOf) {
		t.Errorf("%d scrapes verify a proxy's certificate, %d Certificates are rendered", verified, len(dnsOf))
	}

	// Without cert-manager, or with nothing proxied, nothing is rendered.
	c.CertManager = false
	if got := CertManagerObjects(c); len(got) != 0 {
		t.Errorf("tls.certificates: eksa-metrics renders %d cert-manager objects", len(got))
	}
	b := allOn(metricsv1alpha1.ExposureBindAddress)
	b.ServingCertificates, b.CertManager = true, true
	if got := CertManagerObjects(b); len(got) != 0 {
		t.Errorf("bindAddress mode (no proxy) renders %d cert-manager objects", len(got))
	}
}
