// Package framework starts real Kubernetes components on loopback for the
// integration and end-to-end tests: etcd, kube-apiserver with RBAC and
// ServiceAccount tokens, and the processes a test adds (kube-controller-manager,
// kube-scheduler, kube-rbac-proxy, haproxy).
package framework

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// PKI is a throwaway certificate authority made for one test run, in a
// temporary directory. Nothing of it is ever written to the repository.
type PKI struct {
	Dir    string
	CACert string // PEM files
	CAKey  string
	// ServiceAccountKey signs ServiceAccount tokens; ServiceAccountPub verifies them.
	ServiceAccountKey string
	ServiceAccountPub string

	ca    *x509.Certificate
	caKey *ecdsa.PrivateKey
	next  int64
}

// NewPKI creates the CA and the ServiceAccount key pair.
func NewPKI(t testing.TB, dir string) *PKI {
	t.Helper()
	p := &PKI{Dir: dir, next: 2}
	key := newKey(t)
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "eksa-metrics-testbed-ca"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(10 * 365 * 24 * time.Hour), // kubeadm's CA lifetime
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	p.ca, _ = x509.ParseCertificate(der)
	p.caKey = key
	p.CACert, p.CAKey = p.write(t, "ca", der, key)

	sa := newKey(t)
	p.ServiceAccountKey = writeKey(t, filepath.Join(dir, "sa.key"), sa)
	pub, err := x509.MarshalPKIXPublicKey(&sa.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	p.ServiceAccountPub = filepath.Join(dir, "sa.pub")
	writePEM(t, p.ServiceAccountPub, "PUBLIC KEY", pub)
	return p
}

// Serving issues a server certificate for the given names and IPs.
func (p *PKI) Serving(t testing.TB, name string, dnsNames []string, ips []net.IP) (cert, key string) {
	t.Helper()
	return p.issue(t, name, &x509.Certificate{
		Subject:     pkix.Name{CommonName: name},
		DNSNames:    dnsNames,
		IPAddresses: ips,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	})
}

// Client issues a client certificate; Kubernetes reads the user from the CN
// and the groups from O.
func (p *PKI) Client(t testing.TB, name, user string, groups ...string) (cert, key string) {
	t.Helper()
	return p.issue(t, name, &x509.Certificate{
		Subject:     pkix.Name{CommonName: user, Organization: groups},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	})
}

func (p *PKI) issue(t testing.TB, name string, tmpl *x509.Certificate) (string, string) {
	t.Helper()
	key := newKey(t)
	p.next++
	tmpl.SerialNumber = big.NewInt(p.next)
	tmpl.NotBefore = time.Now().Add(-time.Hour)
	tmpl.NotAfter = time.Now().Add(365 * 24 * time.Hour) // kubeadm's: verify reports less than 30 days left
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment
	der, err := x509.CreateCertificate(rand.Reader, tmpl, p.ca, &key.PublicKey, p.caKey)
	if err != nil {
		t.Fatal(err)
	}
	return p.write(t, name, der, key)
}

func (p *PKI) write(t testing.TB, name string, der []byte, key *ecdsa.PrivateKey) (string, string) {
	certPath := filepath.Join(p.Dir, name+".crt")
	writePEM(t, certPath, "CERTIFICATE", der)
	return certPath, writeKey(t, filepath.Join(p.Dir, name+".key"), key)
}

func newKey(t testing.TB) *ecdsa.PrivateKey {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return key
}

func writeKey(t testing.TB, path string, key *ecdsa.PrivateKey) string {
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	writePEM(t, path, "EC PRIVATE KEY", der)
	return path
}

func writePEM(t testing.TB, path, typ string, der []byte) {
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}
