package verify

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/eksa-metrics/eksa-metrics/pkg/components"
)

// recorder is a metrics endpoint that records every Authorization header it
// was sent.
type recorder struct {
	mu     sync.Mutex
	tokens []string
	hits   atomic.Int64
}

func (rc *recorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rc.hits.Add(1)
	if a := r.Header.Get("Authorization"); a != "" {
		rc.mu.Lock()
		rc.tokens = append(rc.tokens, a)
		rc.mu.Unlock()
	}
	io.WriteString(w, "# TYPE up gauge\nup 1\n")
}

func (rc *recorder) seen() []string {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]string{}, rc.tokens...)
}

// selfSigned makes a certificate for 127.0.0.1 of its own (httptest servers
// all share one).
func selfSigned(t *testing.T) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(7), Subject: pkix.Name{CommonName: "other"}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	leaf, _ := x509.ParseCertificate(der)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}
}

var tokens = Options{ScraperToken: "scraper-token", UnboundToken: "unbound-token", Timeout: 5 * time.Second}

// A plain-HTTP target (allowInsecure) never gets a token.
func TestNoTokenToPlainHTTP(t *testing.T) {
	rec := &recorder{}
	srv := httptest.NewServer(rec)
	defer srv.Close()
	res := Run(context.Background(), []Target{{Component: components.Etcd, Node: "n", Endpoint: srv.URL, Paths: []string{"/metrics"}, Plain: true}}, tokens)
	if !res[0].Pass() || res[0].TLS != "plain HTTP" || rec.hits.Load() == 0 {
		t.Fatalf("%+v", res[0])
	}
	if s := rec.seen(); len(s) > 0 {
		t.Fatalf("tokens sent over plain HTTP: %v", s)
	}
	// A TLS target that answers in plain HTTP gets nothing either.
	res = Run(context.Background(), []Target{{Component: components.KubeProxy, Node: "n", Endpoint: srv.URL, Paths: []string{"/metrics"}}}, tokens)
	if res[0].Pass() || len(rec.seen()) > 0 {
		t.Fatalf("%+v, tokens %v", res[0], rec.seen())
	}
}

// The certificate is classified before any token is sent, and the scrape must
// meet that same certificate: a target that swaps it gets no token.
func TestTokenOnlyToTheClassifiedCertificate(t *testing.T) {
	rec := &recorder{}
	srv := httptest.NewUnstartedServer(rec)
	other := selfSigned(t)
	// Without SNI (the classification handshake) the server presents its
	// default certificate; with SNI (the scrape, to "localhost") another one.
	srv.TLS = &tls.Config{GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return &other, nil }}
	srv.StartTLS()
	defer srv.Close()
	endpoint := strings.Replace(srv.URL, "127.0.0.1", "localhost", 1)
	res := Run(context.Background(), []Target{{Component: components.KubeProxy, Node: "n", Endpoint: endpoint, Paths: []string{"/metrics"}}}, tokens)
	if res[0].Pass() || !strings.Contains(strings.Join(res[0].Problems, " "), "another certificate") {
		t.Fatalf("%+v", res[0])
	}
	if s := rec.seen(); len(s) > 0 {
		t.Fatalf("tokens sent to a swapped certificate: %v", s)
	}
}

// Redirects are never followed, with or without a token.
func TestRedirectsAreNotFollowed(t *testing.T) {
	elsewhere := &recorder{}
	sink := httptest.NewTLSServer(elsewhere)
	defer sink.Close()
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, sink.URL+r.URL.Path, http.StatusFound)
	}))
	defer srv.Close()
	res := Run(context.Background(), []Target{{Component: components.KubeProxy, Node: "n", Endpoint: srv.URL, Paths: []string{"/metrics"}}}, tokens)
	if res[0].Pass() || res[0].Scraper != http.StatusFound {
		t.Fatalf("%+v", res[0])
	}
	if elsewhere.hits.Load() > 0 {
		t.Fatalf("the redirect was followed (%d requests elsewhere)", elsewhere.hits.Load())
	}
}

// The API server is verified against the cluster CA before it gets a token.
func TestAPIServerIsVerifiedAgainstTheClusterCA(t *testing.T) {
	rec := &recorder{}
	impostor := httptest.NewTLSServer(rec)
	defer impostor.Close()
	clusterCA := x509.NewCertPool()
	clusterCA.AddCert(selfSigned(t).Leaf)
	opts := tokens
	opts.ClusterCA = clusterCA
	res := Run(context.Background(), []Target{{Component: components.KubeAPIServer, Endpoint: impostor.URL, Paths: []string{"/metrics"}, VerifyWithClusterCA: true}}, opts)
	if res[0].Pass() || len(rec.seen()) > 0 {
		t.Fatalf("%+v, tokens %v", res[0], rec.seen())
	}
	// The same server, trusted: scraped.
	trusted := x509.NewCertPool()
	trusted.AddCert(impostor.Certificate())
	opts.ClusterCA = trusted
	res = Run(context.Background(), []Target{{Component: components.KubeAPIServer, Endpoint: impostor.URL, Paths: []string{"/metrics"}, VerifyWithClusterCA: true}}, opts)
	if res[0].Scraper != 200 || res[0].TLS != "cluster CA" {
		t.Fatalf("%+v", res[0])
	}
}
