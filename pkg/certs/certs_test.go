package certs

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	certutil "k8s.io/client-go/util/cert"
)

func TestIssueAndRenewal(t *testing.T) {
	ca, err := NewCA("eksa-metrics-serving-ca")
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC().Truncate(time.Second)
	const name = "eksa-metrics-etcd.kube-system.svc"
	s, err := Issue(ca, name, now)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tls.X509KeyPair(s.Cert, s.Key); err != nil {
		t.Fatalf("not a serving pair: %v", err)
	}
	if why := Renewal(s, ca, name, now); why != "" {
		t.Errorf("a fresh certificate needs renewal: %s", why)
	}
	if leaf, _ := tls.X509KeyPair(s.Cert, s.Key); leaf.Leaf == nil || !leaf.Leaf.NotAfter.Equal(now.Add(ServingLifetime)) {
		t.Errorf("validity: %+v", leaf.Leaf)
	}
	other, _ := NewCA("someone-else")
	for _, c := range []struct {
		serving Pair
		ca      Pair
		name    string
		at      time.Time
		want    string
	}{
		{s, ca, name, now.Add(240 * 24 * time.Hour), ""},
		{s, ca, name, now.Add(250 * 24 * time.Hour), "expires on " + now.Add(ServingLifetime).Format(time.DateOnly)},
		{s, ca, "eksa-metrics-kube-proxy.kube-system.svc", now, "names [" + name + "]"},
		{s, other, name, now, "does not verify against the CA"},
		{Pair{Cert: []byte("x"), Key: s.Key}, ca, name, now, "does not parse"},
	} {
		if got := Renewal(c.serving, c.ca, c.name, c.at); c.want == "" && got != "" || !strings.Contains(got, c.want) {
			t.Errorf("Renewal at %s for %s: %q, want %q", c.at.Format(time.DateOnly), c.name, got, c.want)
		}
	}
	if _, err := Issue(s, name, now); err == nil || !strings.Contains(err.Error(), "not a CA") {
		t.Errorf("a serving certificate signed others: %v", err)
	}
	if err := CheckCA(ca); err != nil {
		t.Errorf("the CA: %v", err)
	}
	if err := CheckCA(Pair{Cert: ca.Cert, Key: other.Key}); err == nil || !strings.Contains(err.Error(), "does not belong") {
		t.Errorf("a CA with another CA's key: %v", err)
	}
}

// A signed request names exactly its subject and names, for server auth,
// and never outlives the CA.
func TestSignRequest(t *testing.T) {
	ca, err := NewCA("kubelet-serving-ca")
	if err != nil {
		t.Fatal(err)
	}
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: pkix.Name{CommonName: "system:node:n1", Organization: []string{"system:nodes"}},
		DNSNames: []string{"n1"}, IPAddresses: []net.IP{net.ParseIP("198.51.100.11")}}, key)
	if err != nil {
		t.Fatal(err)
	}
	req, _ := x509.ParseCertificateRequest(der)
	now := time.Now()
	pemBytes, err := SignRequest(ca, req, x509.KeyUsageDigitalSignature, 100*365*24*time.Hour, now)
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := certutil.ParseCertsPEM(pemBytes)
	if err != nil {
		t.Fatal(err)
	}
	caCert, _ := certutil.ParseCertsPEM(ca.Cert)
	c := leaf[0]
	if c.Subject.CommonName != "system:node:n1" || !slices.Equal(c.DNSNames, []string{"n1"}) || len(c.IPAddresses) != 1 || c.IsCA ||
		!slices.Equal(c.ExtKeyUsage, []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}) {
		t.Errorf("signed %v %v %v isCA=%v %v", c.Subject, c.DNSNames, c.IPAddresses, c.IsCA, c.ExtKeyUsage)
	}
	if c.NotAfter.After(caCert[0].NotAfter) {
		t.Errorf("valid until %s, after the CA (%s)", c.NotAfter, caCert[0].NotAfter)
	}
	pool := x509.NewCertPool()
	pool.AddCert(caCert[0])
	if _, err := c.Verify(x509.VerifyOptions{Roots: pool, DNSName: "198.51.100.11"}); err != nil {
		t.Error(err)
	}
}
