package verify

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/eksa-metrics/eksa-metrics/pkg/components"
	"github.com/eksa-metrics/eksa-metrics/pkg/templates"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Options configure a run.
type Options struct {
	// ScraperToken authenticates as the scraper; UnboundToken as an identity
	// with no RBAC binding at all.
	ScraperToken string
	UnboundToken string
	// ClusterCA verifies the API server, and classifies other certificates.
	ClusterCA *x509.CertPool
	// ServingCA verifies the targets that serve eksa-metrics' certificates
	// (Target.ServingName).
	ServingCA *x509.CertPool
	// KubeletCA verifies the kubelets with tls.kubeletServingCertificates
	// (Target.VerifyWithKubeletCA).
	KubeletCA *x509.CertPool
	// Concurrency bounds how many targets run at once (default 16).
	Concurrency int
	// Timeout bounds each target (default 10s).
	Timeout time.Duration
}

// Result is one target's row.
type Result struct {
	Target    Target `json:"target"`
	Reachable bool   `json:"reachable"`
	TLS       string `json:"tls"`               // "cluster CA", "self-signed", "unknown CA", "plain HTTP"
	Scraper   int    `json:"scraperStatus"`     // HTTP status for the scraper on the first path
	Samples   int    `json:"samples"`           // samples across the metrics paths
	Unbound   int    `json:"unboundStatus"`     // HTTP status for an unbound identity
	Anonymous int    `json:"anonymousStatus"`   // HTTP status without credentials
	Refused   int    `json:"refused"`           // paths refused to the scraper, as they must be
	Version   string `json:"version,omitempty"` // from /statusz
	Emulation string `json:"emulationVersion,omitempty"`
	Uptime    string `json:"uptime,omitempty"`
	// Expires is when the serving certificate expires (RFC 3339).
	Expires  string   `json:"certificateExpires,omitempty"`
	Problems []string `json:"problems,omitempty"` // why the row fails, for a person
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
			results[i] = check(tctx, t, opts)
		}()
	}
	wg.Wait()
	return results
}

// check proves one target. Tokens are precious: the certificate is classified
// first, over a handshake that sends nothing; the API server must chain to the
// cluster CA; every other TLS target must keep presenting the certificate
// that was classified (pinned), so a token is never sent to whoever answers
// later on that address; a plain-HTTP target never gets a token; redirects
// are never followed.
func check(ctx context.Context, t Target, opts Options) Result {
	r := Result{Target: t}
	fail := func(format string, args ...any) { r.Problems = append(r.Problems, fmt.Sprintf(format, args...)) }
	if t.Missing != "" {
		fail("%s", t.Missing)
		return r
	}
	u, err := url.Parse(t.Endpoint)
	if err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") {
		fail("endpoint %q is not an http(s) URL", t.Endpoint)
		return r
	}
	dialer := &net.Dialer{Timeout: opts.Timeout}
	transport := &http.Transport{DialContext: dialer.DialContext, MaxIdleConnsPerHost: 2, DisableCompression: true}
	defer transport.CloseIdleConnections()
	client := &http.Client{Transport: transport, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

	plain := u.Scheme == "http"
	if plain {
		r.TLS = "plain HTTP"
		if !t.Plain {
			fail("the endpoint is plain HTTP, but this target should serve TLS; no token was sent")
			return r
		}
	} else {
		certs, err := handshake(ctx, dialer, u.Host, opts.Timeout)
		if err != nil {
			why := reason(err)
			switch {
			case t.PodNetwork && strings.HasPrefix(why, "connection refused"):
				why = "connection refused (nothing listens on the pod's metrics port: is the Deployment edited by apply, or its kube-rbac-proxy sidecar running?)"
			case t.PodNetwork:
				why += " (a pod address, reachable only from the cluster's pod network: run verify on a node or in a pod of that cluster)"
			}
			fail("unreachable: %s", why)
			return r
		}
		r.Reachable = true
		r.TLS = classifyTLS(certs, opts.ClusterCA)
		if t.ServingName != "" && opts.ServingCA != nil && len(certs) > 0 {
			if _, err := certs[0].Verify(x509.VerifyOptions{Roots: opts.ServingCA, DNSName: t.ServingName}); err == nil {
				r.TLS = "eksa-metrics CA"
			}
		}
		kubeletName := u.Hostname()
		if t.KubeletCAName != "" {
			kubeletName = t.KubeletCAName
		}
		if t.VerifyWithKubeletCA && opts.KubeletCA != nil && len(certs) > 0 {
			if _, err := certs[0].Verify(x509.VerifyOptions{Roots: opts.KubeletCA, DNSName: kubeletName}); err == nil {
				r.TLS = "kubelet-serving CA"
			}
		}
		if len(certs) > 0 {
			r.Expires = certs[0].NotAfter.UTC().Format(time.RFC3339)
			if p := expiryProblem(certs[0].NotAfter, time.Now(), r.TLS); p != "" {
				fail("%s", p)
			}
		}
		cfg := &tls.Config{MinVersion: tls.VersionTLS12}
		if t.VerifyWithClusterCA {
			if opts.ClusterCA == nil {
				fail("the kubeconfig names no cluster CA, so the %s certificate cannot be verified; no token was sent", whose(t))
				return r
			}
			cfg.RootCAs = opts.ClusterCA
			cfg.ServerName = u.Hostname()
			if r.TLS != "cluster CA" {
				fail("the %s certificate does not chain to the cluster CA (%s); no token was sent%s", whose(t), r.TLS, kubeletHint(t))
				return r
			}
		} else if t.VerifyWithKubeletCA {
			// What the scrapers trust for a kubelet: that CA alone.
			if opts.KubeletCA == nil {
				fail("the kubelet-serving CA (Secret %s/%s, which apply creates) could not be read, so the kubelet's certificate cannot be verified; no token was sent", templates.SystemNS, templates.KubeletServingCA)
				return r
			}
			if r.TLS != "kubelet-serving CA" {
				hint := kubeletHint(t)
				if r.TLS == "cluster CA" {
					hint = ": kube-controller-manager signed it with the cluster CA, so the control plane still runs without the signer flags tls.kubeletServingCertificates gives it (eksctl anywhere upgrade cluster replaces its machines); the kubelet renews it with the approver's CA later"
				}
				fail("the %s certificate does not chain to the kubelet-serving CA for %s (%s); no token was sent%s", whose(t), kubeletName, r.TLS, hint)
				return r
			}
			cfg.RootCAs, cfg.ServerName = opts.KubeletCA, kubeletName
		} else if t.ServingName != "" {
			// What Prometheus checks: the name and eksa-metrics' CA.
			if opts.ServingCA == nil {
				fail("the CA of eksa-metrics' serving certificates (Secret %s in %s, or with tls.certificates: cert-manager Secret %s in the certificate's namespace) could not be read, so this certificate cannot be verified; no token was sent", templates.ServingCA, templates.SystemNS, templates.IssuerCA)
				return r
			}
			if r.TLS != "eksa-metrics CA" {
				fail("the certificate is not eksa-metrics' for %s (%s), so Prometheus refuses it: does Secret %s/%s exist (apply, or cert-manager, creates it), and has the proxy read it? No token was sent", t.ServingName, r.TLS, templates.SystemNS, templates.ServingSecret(t.Component))
				return r
			}
			cfg.RootCAs, cfg.ServerName = opts.ServingCA, t.ServingName
		} else {
			leaf := certs[0].Raw
			cfg.InsecureSkipVerify = true //nolint:gosec // the certificate is pinned to the one classified above, in VerifyConnection
			cfg.VerifyConnection = func(cs tls.ConnectionState) error {
				if len(cs.PeerCertificates) == 0 || !bytes.Equal(cs.PeerCertificates[0].Raw, leaf) {
					return errors.New("the target presented another certificate than the one classified; no token was sent")
				}
				return nil
			}
		}
		transport.TLSClientConfig = cfg
	}

	get := func(path, token, accept string) (int, string, error) {
		if plain && token != "" {
			return 0, "", errors.New("refusing to send a token over plain HTTP") // never reached: plain targets are read anonymously
		}
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
		body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
		return resp.StatusCode, string(body), err
	}

	if plain {
		// Accepted with allowInsecure: it serves anyone, and only that is checked.
		for i, p := range t.Paths {
			code, body, err := get(p, "", "")
			if err != nil {
				fail("%s unreachable: %s", p, reason(err))
				return r
			}
			r.Reachable = true
			if i == 0 {
				r.Anonymous = code
			}
			if code != http.StatusOK {
				fail("%s answers %d over plain HTTP", p, code)
				continue
			}
			n, err := countSamples(body)
			if err != nil {
				fail("%s is not a Prometheus exposition: %v", p, err)
			}
			r.Samples += n
		}
		return r
	}

	for i, p := range t.Paths {
		code, body, err := get(p, opts.ScraperToken, "")
		if err != nil {
			fail("%s unreachable: %s", p, reason(err))
			return r
		}
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
			if code == http.StatusOK {
				fail("SERVES METRICS TO AN UNBOUND IDENTITY: an identity with no RBAC binding gets 200 on %s: the target does not ask the API server who may read it (authorization off, such as a kubelet with --authorization-mode=AlwaysAllow), or some binding grants too much (check who is bound to roles with /metrics)", p)
			}
		}
		if code, _, err := get(p, "", ""); err == nil {
			r.Anonymous = code
			if code == http.StatusOK {
				fail("SERVES METRICS WITHOUT CREDENTIALS: an anonymous request gets 200 on %s", p)
			}
		}
	}
	if t.ZPages {
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
	for _, p := range t.FlagzPaths {
		switch code, _, err := get(p, opts.ScraperToken, "text/plain"); {
		case err != nil:
			fail("%s unreachable: %s", p, reason(err))
		case code != http.StatusOK:
			fail("the scraper gets %d on %s, which zPages.flagz asks for%s", code, p, statusHint(code))
		}
	}
	for _, p := range t.Refused {
		code, _, err := get(p, opts.ScraperToken, "")
		switch {
		case err != nil:
			fail("%s unreachable: %s", p, reason(err))
		case code == http.StatusOK:
			fail("THE SCRAPER IS SERVED %s, which its roles must not grant (nodes/proxy, logs, or a z-page not asked for): check what else is bound to it", p)
		default:
			r.Refused++
		}
	}
	return r
}

// handshake connects, completes a TLS handshake without sending a request,
// and returns the certificate chain the target presented.
func handshake(ctx context.Context, dialer *net.Dialer, host string, timeout time.Duration) ([]*x509.Certificate, error) {
	raw, err := dialer.DialContext(ctx, "tcp", host)
	if err != nil {
		return nil, err
	}
	defer raw.Close()
	_ = raw.SetDeadline(time.Now().Add(timeout))
	conn := tls.Client(raw, &tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS12}) //nolint:gosec // only reads the chain, sends nothing
	if err := conn.HandshakeContext(ctx); err != nil {
		return nil, err
	}
	certs := conn.ConnectionState().PeerCertificates
	if len(certs) == 0 {
		return nil, errors.New("the target presented no certificate")
	}
	return certs, nil
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

// ExpiryWarning is how close to its expiry a serving certificate is reported.
const ExpiryWarning = 30 * 24 * time.Hour

// expiryProblem reports a serving certificate that has expired or expires
// within ExpiryWarning.
func expiryProblem(notAfter, now time.Time, class string) string {
	left := notAfter.Sub(now)
	if left >= ExpiryWarning {
		return ""
	}
	how := "renew it before then"
	if class == "self-signed" {
		how = "a component that makes its own certificate makes a new one when it restarts"
	}
	if left <= 0 {
		return fmt.Sprintf("the serving certificate EXPIRED on %s (%d days ago): clients that verify it refuse it; %s", notAfter.UTC().Format(time.DateOnly), int(-left.Hours()/24), how)
	}
	return fmt.Sprintf("the serving certificate expires on %s, in %d days: %s", notAfter.UTC().Format(time.DateOnly), int(left.Hours()/24), how)
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

// whose names the certificate a target verifies with the cluster CA.
func whose(t Target) string {
	switch t.Component {
	case components.Kubelet:
		return "kubelet's"
	case templates.KubeletApproverComponent:
		return "kubelet approver's metrics"
	}
	return "API server's"
}

// kubeletHint says why a kubelet may still serve a certificate of its own
// with tls.kubeletServingCertificates.
func kubeletHint(t Target) string {
	if t.Component != components.Kubelet {
		return ""
	}
	return ": until EKS Anywhere replaces the node with serverTLSBootstrap: true (eksctl anywhere upgrade cluster -f cluster.yaml) its kubelet serves a self-signed certificate; if it has the setting, check that Deployment " + templates.SystemNS + "/" + templates.KubeletApprover + " runs and that kubectl get csr shows its request approved"
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
