// Package certs issues the serving certificates of the endpoints eksa-metrics
// puts in front of components (its kube-rbac-proxies), from a CA of its own
// that Prometheus trusts, the way kubeadm keeps its own certificates: a CA
// valid for ten years, serving certificates valid for one year and renewed
// when a third of their life is left. The PEM pairs live in Secrets that
// apply creates; this package only makes and checks them.
package certs

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"math/big"
	"slices"
	"time"

	certutil "k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/keyutil"
)

// ServingLifetime is how long a serving certificate is valid.
const ServingLifetime = 365 * 24 * time.Hour

// Pair is a certificate and its private key, PEM-encoded.
type Pair struct {
	Cert, Key []byte
}

// NewCA makes the CA.
func NewCA(commonName string) (Pair, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return Pair{}, err
	}
	ca, err := certutil.NewSelfSignedCACert(certutil.Config{CommonName: commonName}, key)
	if err != nil {
		return Pair{}, err
	}
	return encode(ca, key)
}

// Issue signs a serving certificate for one DNS name with the CA, valid from
// now for ServingLifetime.
func Issue(ca Pair, dnsName string, now time.Time) (Pair, error) {
	caCert, caKey, err := parse(ca)
	if err != nil {
		return Pair{}, fmt.Errorf("the CA: %w", err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return Pair{}, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 126))
	if err != nil {
		return Pair{}, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: dnsName},
		DNSNames:     []string{dnsName},
		NotBefore:    now.Add(-5 * time.Minute).UTC(), // clock skew between nodes
		NotAfter:     now.Add(ServingLifetime).UTC(),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &key.PublicKey, caKey)
	if err != nil {
		return Pair{}, err
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return Pair{}, err
	}
	return encode(leaf, key)
}

// SignRequest signs a certificate for a certificate request's key,
// subject and names with the CA, for the given key usages and server
// authentication, valid from now for lifetime and never beyond the CA's own
// expiry. The caller has checked the request: SignRequest copies nothing
// else from it.
func SignRequest(ca Pair, req *x509.CertificateRequest, usage x509.KeyUsage, lifetime time.Duration, now time.Time) ([]byte, error) {
	caCert, caKey, err := parse(ca)
	if err != nil {
		return nil, fmt.Errorf("the CA: %w", err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 126))
	if err != nil {
		return nil, err
	}
	notAfter := now.Add(lifetime).UTC()
	if notAfter.After(caCert.NotAfter) {
		notAfter = caCert.NotAfter
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      req.Subject,
		DNSNames:     req.DNSNames,
		IPAddresses:  req.IPAddresses,
		NotBefore:    now.Add(-5 * time.Minute).UTC(), // clock skew between nodes
		NotAfter:     notAfter,
		KeyUsage:     usage,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, req.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return certutil.EncodeCertificates(leaf)
}

// Renewal says why a serving certificate must be issued again ("" when it
// is fine): it does not parse, is not for dnsName, was not signed by the CA,
// or has less than a third of its life left (so that a renewed one reaches
// every proxy long before the old one expires).
func Renewal(serving Pair, ca Pair, dnsName string, now time.Time) string {
	certs, err := certutil.ParseCertsPEM(serving.Cert)
	if err != nil || len(certs) == 0 {
		return "the certificate does not parse"
	}
	if _, err := keyutil.ParsePrivateKeyPEM(serving.Key); err != nil {
		return "the private key does not parse"
	}
	leaf := certs[0]
	if !slices.Equal(leaf.DNSNames, []string{dnsName}) {
		return fmt.Sprintf("it names %v, not %s", leaf.DNSNames, dnsName)
	}
	caCerts, err := certutil.ParseCertsPEM(ca.Cert)
	if err != nil || len(caCerts) == 0 {
		return "the CA does not parse"
	}
	pool := x509.NewCertPool()
	pool.AddCert(caCerts[0])
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: pool, DNSName: dnsName, CurrentTime: now}); err != nil {
		return fmt.Sprintf("it does not verify against the CA: %v", err)
	}
	if !now.Before(RenewAt(leaf)) {
		return fmt.Sprintf("it expires on %s", leaf.NotAfter.UTC().Format(time.DateOnly))
	}
	return ""
}

// RenewAt is when a serving certificate is due for renewal: when a third of
// its life is left.
func RenewAt(leaf *x509.Certificate) time.Time {
	return leaf.NotAfter.Add(-leaf.NotAfter.Sub(leaf.NotBefore) / 3)
}

func parse(p Pair) (*x509.Certificate, crypto.Signer, error) {
	certs, err := certutil.ParseCertsPEM(p.Cert)
	if err != nil {
		return nil, nil, err
	}
	key, err := keyutil.ParsePrivateKeyPEM(p.Key)
	if err != nil {
		return nil, nil, err
	}
	signer, ok := key.(crypto.Signer)
	if !ok {
		return nil, nil, errors.New("the private key cannot sign")
	}
	if !certs[0].IsCA {
		return nil, nil, errors.New("the certificate is not a CA")
	}
	if pub, ok := signer.Public().(interface{ Equal(crypto.PublicKey) bool }); !ok || !pub.Equal(certs[0].PublicKey) {
		return nil, nil, errors.New("the private key does not belong to the certificate")
	}
	return certs[0], signer, nil
}

// CheckCA reports why a pair cannot sign serving certificates (nil when it can).
func CheckCA(ca Pair) error {
	_, _, err := parse(ca)
	return err
}

func encode(cert *x509.Certificate, key *ecdsa.PrivateKey) (Pair, error) {
	certPEM, err := certutil.EncodeCertificates(cert)
	if err != nil {
		return Pair{}, err
	}
	keyPEM, err := keyutil.MarshalPrivateKeyToPEM(key)
	if err != nil {
		return Pair{}, err
	}
	return Pair{Cert: certPEM, Key: keyPEM}, nil
}
