package templates

import (
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	metricsv1alpha1 "github.com/eksa-metrics/eksa-metrics/pkg/apis/metrics/v1alpha1"
	"github.com/eksa-metrics/eksa-metrics/pkg/spec"
)

// With tls.certificates: cert-manager, every Secret a proxy mounts is the
// secretName of a Certificate from eksa-metrics' CA Issuer in its own
// namespace, whose one DNS name is the serverName every scrape of that proxy
// verifies; each namespace's CA comes from the self-signed Issuer there, into
// the Secret the CA Issuer there reads. Nothing is a ClusterIssuer, and no
// Certificate names an issuer of another kind: a ClusterIssuer would sign a
// Certificate from any namespace, for any name.
func TestCertManagerCertificatesMatchProxiesAndScrapes(t *testing.T) {
	c := allOn(metricsv1alpha1.ExposureProxy)
	c.ServingCertificates, c.CertManager = true, true
	// A management cluster: the sidecars' Certificates too, in their namespaces.
	v, err := spec.ParseEKSAVersion("v0.26.1")
	if err != nil {
		t.Fatal(err)
	}
	c.Management, c.ManagementComponents, c.Provider, c.EKSAVersion = true, true, spec.ProviderDocker, &v
	c.Images = metricsv1alpha1.Images{KubeRBACProxy: spec.DefaultKubeRBACProxyImage}
	objs := CertManagerObjects(c)

	dnsOf := map[string]string{}          // namespace/secretName -> DNS name
	caIssuerSecret := map[string]string{} // namespace -> the Secret its CA Issuer reads
	caSecret := map[string]string{}       // namespace -> the Secret its CA Certificate writes
	selfSigned := map[string]bool{}       // namespace -> it has the self-signed Issuer
	for _, o := range objs {
		u := unstructured.Unstructured{Object: o}
		ns := u.GetNamespace()
		if ns == "" {
			t.Errorf("%s %s is cluster-scoped: anyone who may create a Certificate could use it", u.GetKind(), u.GetName())
			continue
		}
		kind, _, _ := unstructured.NestedString(o, "spec", "issuerRef", "kind")
		issuer, _, _ := unstructured.NestedString(o, "spec", "issuerRef", "name")
		switch {
		case u.GetKind() == "Issuer" && u.GetName() == SelfSignedIssuer:
			if _, ok, _ := unstructured.NestedMap(o, "spec", "selfSigned"); !ok {
				t.Errorf("Issuer %s/%s is not self-signed", ns, u.GetName())
			}
			selfSigned[ns] = true
		case u.GetKind() == "Issuer" && u.GetName() == CAIssuer:
			caIssuerSecret[ns], _, _ = unstructured.NestedString(o, "spec", "ca", "secretName")
		case u.GetKind() == "Certificate" && u.GetName() == IssuerCA:
			isCA, _, _ := unstructured.NestedBool(o, "spec", "isCA")
			if kind != "Issuer" || issuer != SelfSignedIssuer || !isCA {
				t.Errorf("the CA Certificate in %s: issuer %s %q, isCA %v", ns, kind, issuer, isCA)
			}
			caSecret[ns], _, _ = unstructured.NestedString(o, "spec", "secretName")
		case u.GetKind() == "Certificate":
			names, _, _ := unstructured.NestedStringSlice(o, "spec", "dnsNames")
			secret, _, _ := unstructured.NestedString(o, "spec", "secretName")
			if kind != "Issuer" || issuer != CAIssuer || len(names) != 1 {
				t.Errorf("Certificate %s/%s: issuer %s %q, dnsNames %v", ns, u.GetName(), kind, issuer, names)
				continue
			}
			dnsOf[ns+"/"+secret] = names[0]
		default:
			t.Errorf("unexpected %s %s/%s", u.GetKind(), ns, u.GetName())
		}
	}
	namespaces := IssuerNamespaces(ServingSecrets(c))
	if !slices.Contains(namespaces, SystemNS) || len(namespaces) < 2 {
		t.Fatalf("serving certificates in %v: want kube-system and the management sidecars' namespaces", namespaces)
	}
	for _, ns := range namespaces {
		if !selfSigned[ns] || caSecret[ns] == "" || caSecret[ns] != caIssuerSecret[ns] {
			t.Errorf("in %s: self-signed Issuer %v, the CA Issuer reads Secret %q, the CA Certificate writes %q", ns, selfSigned[ns], caIssuerSecret[ns], caSecret[ns])
		}
	}
	if len(caSecret) != len(namespaces) || len(caIssuerSecret) != len(namespaces) {
		t.Errorf("CAs in %d namespaces, CA Issuers in %d, serving certificates in %d (%v)", len(caSecret), len(caIssuerSecret), len(namespaces), namespaces)
	}
	for _, s := range ServingSecrets(c) {
		if dnsOf[s.Namespace+"/"+s.Name] != s.DNSName {
			t.Errorf("Secret %s/%s (%s): the Certificate names %q", s.Namespace, s.Name, s.DNSName, dnsOf[s.Namespace+"/"+s.Name])
		}
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
