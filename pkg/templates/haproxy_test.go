package templates_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	metricsv1alpha1 "github.com/eksa-metrics/eksa-metrics/pkg/apis/metrics/v1alpha1"
	"github.com/eksa-metrics/eksa-metrics/pkg/certs"
	"github.com/eksa-metrics/eksa-metrics/pkg/components"
	"github.com/eksa-metrics/eksa-metrics/pkg/spec"
	"github.com/eksa-metrics/eksa-metrics/pkg/templates"
)

// haproxyBinary is the real haproxy (Debian's package, which make testbed
// installs); the tests skip without it.
func haproxyBinary(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("haproxy")
	if err != nil {
		if os.Getenv("EKSA_METRICS_BIN") != "" {
			t.Fatalf("haproxy is not installed: run make testbed (%v)", err)
		}
		t.Skip("haproxy is not installed (make testbed installs it, or apt-get install -y haproxy): the rendered configuration is not checked by haproxy itself")
	}
	return p
}

func haproxyConfig(certificates bool, tlsMin string, zpages bool) *spec.Config {
	return &spec.Config{ClusterName: "c", Exposure: metricsv1alpha1.ExposureProxy, ControllerManager: true, Scheduler: true,
		TLSMinVersion: tlsMin, ServingCertificates: certificates, Statusz: zpages, Flagz: zpages,
		Scrapers: []metricsv1alpha1.Scraper{{Kind: metricsv1alpha1.ScraperServiceAccount, Name: "p", Namespace: "monitoring"}}}
}

// servingFiles writes a serving certificate from a new eksa-metrics CA where
// HAProxy reads it for every HAProxy component, under dir, and returns the
// configuration pointing there and the CA.
func servingFiles(t *testing.T, dir, cfg string) (string, *x509.CertPool) {
	t.Helper()
	ca, err := certs.NewCA("test")
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca.Cert)
	for _, id := range []components.ID{components.KubeControllerManager, components.KubeScheduler} {
		pair, err := certs.Issue(ca, templates.ServingName(id), time.Now())
		if err != nil {
			t.Fatal(err)
		}
		d := filepath.Join(dir, string(id))
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		for name, data := range map[string][]byte{"tls.crt": pair.Cert, "tls.crt.key": pair.Key} {
			if err := os.WriteFile(filepath.Join(d, name), data, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		cfg = strings.ReplaceAll(cfg, templates.ServingDir(id)+"/", d+"/")
	}
	return cfg, pool
}

// haproxy -c accepts every configuration eksa-metrics renders.
func TestHAProxyConfigIsValid(t *testing.T) {
	bin := haproxyBinary(t)
	for name, c := range map[string]*spec.Config{
		"pass-through (tls.certificates: none)": haproxyConfig(false, metricsv1alpha1.TLS12, true),
		"TLS 1.2, z-pages":                      haproxyConfig(true, metricsv1alpha1.TLS12, true),
		"TLS 1.3, no z-pages":                   haproxyConfig(true, metricsv1alpha1.TLS13, false),
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			cfg, _ := servingFiles(t, dir, templates.HAProxyConfig(c))
			path := filepath.Join(dir, "haproxy.cfg")
			if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(bin, "-c", "-f", path)
			cmd.Env = append(os.Environ(), templates.NodeIPEnv+"=127.0.0.2")
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("haproxy -c: %v\n%s\n%s", err, out, cfg)
			}
			if bytes.Contains(out, []byte("[WARNING]")) {
				t.Errorf("haproxy -c warns:\n%s", out)
			}
		})
	}
}

// The TLS configuration, run by the real haproxy in front of a stand-in for
// kube-controller-manager's secure port: only the modern ciphers are
// offered; a GET of an allowed path reaches the component re-encrypted, its
// Authorization header untouched; anything else (pprof, /configz, a path
// that only starts like an allowed one, a z-page that is off, a POST) is
// answered 403 by HAProxy and never reaches the component.
func TestHAProxyAllowsOnlyTheReaderPaths(t *testing.T) {
	bin := haproxyBinary(t)
	c := haproxyConfig(true, metricsv1alpha1.TLS12, false)
	c.Statusz = true // /flagz stays off

	var mu sync.Mutex
	var reached, hops []string
	component := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		reached = append(reached, r.Method+" "+r.URL.RequestURI()+" "+r.Header.Get("Authorization"))
		hops = append(hops, tls.VersionName(r.TLS.Version)+" "+tls.CipherSuiteName(r.TLS.CipherSuite))
		mu.Unlock()
		fmt.Fprintf(w, "served %s", r.URL.Path)
	}))
	component.StartTLS()
	defer component.Close()
	if component.TLS == nil {
		t.Fatal("the stand-in does not serve TLS")
	}
	frontPort := freePort(t)
	// The scheduler's backend is a component that offers only CBC under TLS
	// 1.2: HAProxy must refuse to re-encrypt with it.
	weak := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Errorf("a request reached the component over %s", tls.CipherSuiteName(r.TLS.CipherSuite))
	}))
	weak.TLS = &tls.Config{MaxVersion: tls.VersionTLS12, CipherSuites: []uint16{tls.TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA, tls.TLS_RSA_WITH_AES_128_CBC_SHA}}
	weak.Config.ErrorLog = log.New(io.Discard, "", 0) // HAProxy's refused handshakes
	weak.StartTLS()
	defer weak.Close()
	weakPort := freePort(t)

	dir := t.TempDir()
	cfg, pool := servingFiles(t, dir, templates.HAProxyConfig(c))
	cfg = strings.ReplaceAll(cfg, "\"${NODE_IP}:10257\"", fmt.Sprintf("\"${NODE_IP}:%d\"", frontPort))
	cfg = strings.ReplaceAll(cfg, "127.0.0.1:10257 ", component.Listener.Addr().String()+" ")
	cfg = strings.ReplaceAll(cfg, "\"${NODE_IP}:10259\"", fmt.Sprintf("\"${NODE_IP}:%d\"", weakPort))
	cfg = strings.ReplaceAll(cfg, "127.0.0.1:10259 ", weak.Listener.Addr().String()+" ")
	path := filepath.Join(dir, "haproxy.cfg")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var logs bytes.Buffer
	cmd := exec.CommandContext(ctx, bin, "-db", "-f", path)
	cmd.Env = append(os.Environ(), templates.NodeIPEnv+"=127.0.0.1")
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cancel(); _ = cmd.Wait() }()
	front := fmt.Sprintf("127.0.0.1:%d", frontPort)
	waitListening(t, front, &logs)

	name := templates.ServingName(components.KubeControllerManager)
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, ServerName: name}}}
	do := func(method, uri string) (int, string) {
		t.Helper()
		req, err := http.NewRequest(method, "https://"+front+"/", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.URL.Opaque = uri // sent as it is, never cleaned
		req.Header.Set("Authorization", "Bearer scraper-token")
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v\n%s", method, uri, err, logs.String())
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	for _, uri := range []string{"/metrics", "/metrics/slis", "/statusz", "/metrics?name[]=x"} {
		if code, body := do(http.MethodGet, uri); code != http.StatusOK || !strings.HasPrefix(body, "served ") {
			t.Errorf("GET %s: %d %q, want the component's 200", uri, code, body)
		}
	}
	if code, _ := do(http.MethodHead, "/metrics"); code != http.StatusOK {
		t.Errorf("HEAD /metrics: %d", code)
	}
	mu.Lock()
	allowed := len(reached)
	for _, r := range reached {
		if !strings.HasSuffix(r, " Bearer scraper-token") {
			t.Errorf("the component got %q: the Authorization header was not forwarded", r)
		}
	}
	mu.Unlock()
	if allowed != 5 {
		t.Errorf("the component got %d requests, want 5", allowed)
	}
	for _, h := range hops {
		if !strings.Contains(h, "_GCM_") && !strings.Contains(h, "CHACHA20") {
			t.Errorf("HAProxy re-encrypted with %s", h)
		}
	}
	for _, req := range []struct{ method, uri string }{
		{http.MethodGet, "/debug/pprof/"},
		{http.MethodGet, "/debug/pprof/goroutine?debug=2"},
		{http.MethodGet, "/configz"},
		{http.MethodGet, "/debug/flags/v"},
		{http.MethodGet, "/flagz"}, // zPages.flagz is off
		{http.MethodGet, "/healthz"},
		{http.MethodGet, "/metrics/../debug/pprof/"},
		{http.MethodGet, "//metrics"},
		{http.MethodGet, "/metricsx"},
		{http.MethodGet, "/%6detrics"},
		{http.MethodPut, "/debug/flags/v"},
		{http.MethodPost, "/metrics"},
		{http.MethodDelete, "/metrics/slis"},
	} {
		// 400: "//metrics" is no path HAProxy accepts at all.
		if code, body := do(req.method, req.uri); code != http.StatusForbidden && (code != http.StatusBadRequest || req.uri != "//metrics") {
			t.Errorf("%s %s: %d %q, want HAProxy's 403", req.method, req.uri, code, body)
		}
	}
	mu.Lock()
	if len(reached) != allowed {
		t.Errorf("refused requests reached the component: %q", reached[allowed:])
	}
	mu.Unlock()

	// Re-encryption: no CBC towards the component either.
	sched := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, ServerName: templates.ServingName(components.KubeScheduler)}}}
	if resp, err := sched.Get(fmt.Sprintf("https://127.0.0.1:%d/metrics", weakPort)); err != nil {
		t.Errorf("GET the scheduler frontend: %v", err)
	} else {
		resp.Body.Close()
		if resp.StatusCode != http.StatusServiceUnavailable {
			t.Errorf("a component offering only CBC: %d, want 503 (no common cipher)", resp.StatusCode)
		}
	}

	// TLS: a CBC or SHA-1 suite under TLS 1.2 is refused, AES-GCM accepted;
	// TLS 1.1 is refused.
	for _, tc := range []struct {
		name   string
		config *tls.Config
		ok     bool
	}{
		{"TLS 1.2 ECDHE-ECDSA-AES128-GCM-SHA256", &tls.Config{MaxVersion: tls.VersionTLS12, CipherSuites: []uint16{tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256}}, true},
		{"TLS 1.2 ECDHE-ECDSA-CHACHA20-POLY1305", &tls.Config{MaxVersion: tls.VersionTLS12, CipherSuites: []uint16{tls.TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256}}, true},
		{"TLS 1.3", &tls.Config{MinVersion: tls.VersionTLS13}, true},
		{"TLS 1.2 ECDHE-ECDSA-AES128-CBC-SHA", &tls.Config{MaxVersion: tls.VersionTLS12, CipherSuites: []uint16{tls.TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA}}, false},
		{"TLS 1.2 ECDHE-ECDSA-AES256-CBC-SHA", &tls.Config{MaxVersion: tls.VersionTLS12, CipherSuites: []uint16{tls.TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA}}, false},
		{"TLS 1.2 ECDHE-ECDSA-AES128-CBC-SHA256", &tls.Config{MaxVersion: tls.VersionTLS12, CipherSuites: []uint16{tls.TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256}}, false},
		{"TLS 1.1", &tls.Config{MinVersion: tls.VersionTLS10, MaxVersion: tls.VersionTLS11}, false},
	} {
		cfg := tc.config.Clone()
		cfg.RootCAs, cfg.ServerName = pool, name
		conn, err := tls.Dial("tcp", front, cfg)
		if err == nil {
			conn.Close()
		}
		if (err == nil) != tc.ok {
			t.Errorf("%s: handshake error %v, want accepted %t", tc.name, err, tc.ok)
		}
	}
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func waitListening(t *testing.T, addr string, logs *bytes.Buffer) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if conn, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			conn.Close()
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("haproxy does not listen on %s:\n%s", addr, logs.String())
}
