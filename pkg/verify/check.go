package verify

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Options configure a run.
type Options struct {
	// ScraperToken authenticates as the scraper; UnboundToken as an identity
	// with no RBAC binding at all.
	ScraperToken string
	UnboundToken string
	// ClusterCA verifies certificates that chain to the cluster CA.
	ClusterCA *x509.CertPool
	// Concurrency bounds how many targets run at once (default 16).
	Concurrency int
	// Timeout bounds each target (default 10s).
	Timeout time.Duration
}

// Result is one target's row.
type Result struct {
	Target    Target   `json:"target"`
	Reachable bool     `json:"reachable"`
	TLS       string   `json:"tls"`               // "cluster CA", "self-signed", "unknown CA", "plain HTTP"
	Scraper   int      `json:"scraperStatus"`     // HTTP status for the scraper on the first path
	Samples   int      `json:"samples"`           // samples across the metrics paths
	Unbound   int      `json:"unboundStatus"`     // HTTP status for an unbound identity
	Anonymous int      `json:"anonymousStatus"`   // HTTP status without credentials
	Version   string   `json:"version,omitempty"` // from /statusz
	Emulation string   `json:"emulationVersion,omitempty"`
	Uptime    string   `json:"uptime,omitempty"`
	Problems  []string `json:"problems,omitempty"` // why the row fails, for a person
}

// Pass reports whether the target passed every check.
func (r Result) Pass() bool { return len(r.Problems) == 0 }

// Run checks every target, in parallel within the bound, and returns the
// rows in target order.
func Run(ctx context.Context, targets []Target, opts Options) []Result {
	if opts.Concurrency <= 0 {
		opts.Concurrency = 16
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 10 * time.Second
	}
	transport := &http.Transport{
		TLSClientConfig:     &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // the certificate is classified separately, below
		MaxIdleConnsPerHost: 4,
		DialContext:         (&net.Dialer{Timeout: opts.Timeout}).DialContext,
	}
	defer transport.CloseIdleConnections()
	client := &http.Client{Transport: transport}
	results := make([]Result, len(targets))
	sem := make(chan struct{}, opts.Concurrency)
	var wg sync.WaitGroup
	for i, t := range targets {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			tctx, cancel := context.WithTimeout(ctx, opts.Timeout)
			defer cancel()
			results[i] = check(tctx, client, t, opts)
		}()
	}
	wg.Wait()
	return results
}

func check(ctx context.Context, client *http.Client, t Target, opts Options) Result {
	r := Result{Target: t}
	fail := func(format string, args ...any) { r.Problems = append(r.Problems, fmt.Sprintf(format, args...)) }
	if t.Plain {
		r.TLS = "plain HTTP"
	}
	get := func(path, token, accept string) (int, string, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, t.Endpoint+path, nil)
		if err != nil {
			return 0, "", err
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		if accept != "" {
			req.Header.Set("Accept", accept)
		}
		resp, err := client.Do(req)
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		if r.TLS == "" && resp.TLS != nil {
			r.TLS = classifyTLS(resp.TLS.PeerCertificates, opts.ClusterCA)
		}
		body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
		return resp.StatusCode, string(body), err
	}

	for i, p := range t.Paths {
		code, body, err := get(p, opts.ScraperToken, "")
		if err != nil {
			fail("%s unreachable: %s", p, reason(err))
			return r
		}
		r.Reachable = true
		if i == 0 {
			r.Scraper = code
		}
		if code != http.StatusOK {
			fail("the scraper gets %d on %s%s", code, p, statusHint(code))
			continue
		}
		n, err := countSamples(body)
		if err != nil {
			fail("%s is not a Prometheus exposition: %v", p, err)
		}
		r.Samples += n
	}
	if len(t.Paths) > 0 {
		p := t.Paths[0]
		if code, _, err := get(p, opts.UnboundToken, ""); err == nil {
			r.Unbound = code
			if code == http.StatusOK && !t.Plain {
				fail("SERVES METRICS TO AN UNBOUND IDENTITY: an identity with no RBAC binding gets 200 on %s; some binding grants too much (check who is bound to roles with /metrics)", p)
			}
		}
		if code, _, err := get(p, "", ""); err == nil {
			r.Anonymous = code
			if code == http.StatusOK && !t.Plain {
				fail("SERVES METRICS WITHOUT CREDENTIALS: an anonymous request gets 200 on %s", p)
			}
		}
	}
	if t.ZPages && r.Reachable {
		code, body, err := get("/statusz", opts.ScraperToken, "application/json;as=Statusz;v=v1beta1;g=config.k8s.io")
		if err == nil && code == http.StatusNotAcceptable {
			// 1.35 serves v1alpha1; 1.33 and 1.34 only text (and want text/plain asked for).
			code, body, err = get("/statusz", opts.ScraperToken, "application/json;as=Statusz;v=v1alpha1;g=config.k8s.io")
			if err == nil && code == http.StatusNotAcceptable {
				code, body, err = get("/statusz", opts.ScraperToken, "text/plain")
			}
		}
		switch {
		case err != nil:
			fail("/statusz unreachable: %s", reason(err))
		case code != http.StatusOK:
			fail("the scraper gets %d on /statusz%s", code, statusHint(code))
		default:
			r.Version, r.Emulation, r.Uptime = parseStatusz(body)
		}
	}
	return r
}

func statusHint(code int) string {
	switch code {
	case http.StatusUnauthorized:
		return " (401: the token was not accepted; is the target's authentication delegated to this cluster?)"
	case http.StatusForbidden:
		return " (403: the scraper lacks RBAC; is ClusterRoleBinding eksa-metrics-reader applied and does it name the scraper?)"
	case http.StatusNotFound:
		return " (404: the path is not served; for z-pages check the feature gates, for a proxy its --allow-paths)"
	}
	return ""
}

func reason(err error) string {
	var op *net.OpError
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return "timed out"
	case errors.As(err, &op) && strings.Contains(op.Error(), "connection refused"):
		return "connection refused (nothing listens on that address: is the proxy DaemonSet running, or bind-address still 127.0.0.1?)"
	}
	return err.Error()
}

func countSamples(body string) (int, error) {
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		return 0, err
	}
	n := 0
	for _, f := range families {
		n += len(f.GetMetric())
	}
	return n, nil
}

// classifyTLS says whether a certificate chain chains to the cluster CA, is
// self-signed, or neither.
func classifyTLS(certs []*x509.Certificate, ca *x509.CertPool) string {
	if len(certs) == 0 {
		return "no certificate"
	}
	if ca != nil {
		inter := x509.NewCertPool()
		for _, c := range certs[1:] {
			inter.AddCert(c)
		}
		if _, err := certs[0].Verify(x509.VerifyOptions{Roots: ca, Intermediates: inter}); err == nil {
			return "cluster CA"
		}
	}
	last := certs[len(certs)-1]
	if last.Subject.String() == last.Issuer.String() {
		return "self-signed"
	}
	return "unknown CA"
}

// parseStatusz reads binary version, emulation version and uptime from the
// structured form, or the text form ("Binary version: ...").
func parseStatusz(body string) (version, emulation, uptime string) {
	var st struct {
		BinaryVersion    string `json:"binaryVersion"`
		EmulationVersion string `json:"emulationVersion"`
		UptimeSeconds    int64  `json:"uptimeSeconds"`
	}
	if json.Unmarshal([]byte(body), &st) == nil && st.BinaryVersion != "" {
		return st.BinaryVersion, st.EmulationVersion, (time.Duration(st.UptimeSeconds) * time.Second).String()
	}
	// The text form varies its delimiter on purpose (":", "=", spaces) so
	// that nobody parses it; only the labels are stable.
	for _, line := range strings.Split(body, "\n") {
		lower := strings.ToLower(strings.TrimSpace(line))
		for _, f := range []struct {
			label string
			dst   *string
		}{{"binary version", &version}, {"emulation version", &emulation}, {"uptime", &uptime}, {"up", &uptime}} {
			rest, ok := strings.CutPrefix(lower, f.label)
			if !ok || rest == "" || rest[0] >= 'a' && rest[0] <= 'z' || *f.dst != "" {
				continue
			}
			*f.dst = strings.TrimLeft(strings.TrimSpace(line)[len(f.label):], " \t:=-")
			break
		}
	}
	return version, emulation, uptime
}
