package verify

import (
	"context"
	"crypto/tls"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/eksa-metrics/eksa-metrics/pkg/components"
)

// Bodies captured from Kubernetes 1.34 components in the test bed: the text
// form changes its delimiter from one process to the next.
func TestParseStatuszText(t *testing.T) {
	for _, body := range []string{
		"\napiserver statusz\nWarning: This endpoint is not meant to be machine parseable, has no formatting compatibility guarantees and is for debugging purposes only.\n\nStarted  Mon Nov 30 04:03:34 UTC 2026\nUp  0 hr 00 min 50 sec\nGo version  go1.26.8\nBinary version  1.34.4\nEmulation version  1.34\nPaths   /flagz /healthz /livez /metrics /readyz /statusz /version\n",
		"\nkube-scheduler statusz\nWarning: This endpoint is not meant to be machine parseable.\n\nStarted= Mon Nov 30 04:03:38 UTC 2026\nUp= 0 hr 00 min 50 sec\nGo version= go1.26.8\nBinary version= 1.34.4\nEmulation version= 1.34\n\n",
		"kube-controller-manager statusz\n\nStarted: Mon Nov 30 04:03:38 UTC 2026\nUp: 0 hr 00 min 50 sec\nGo version: go1.26.8\nBinary version: 1.34.4\nEmulation version: 1.34\n",
	} {
		v, e, up := parseStatusz(body)
		if v != "1.34.4" || e != "1.34" || up != "0 hr 00 min 50 sec" {
			t.Errorf("parseStatusz = %q, %q, %q from:\n%s", v, e, up, body)
		}
	}
}

func TestParseStatuszStructured(t *testing.T) {
	v, e, up := parseStatusz(`{"kind":"Statusz","apiVersion":"config.k8s.io/v1beta1","binaryVersion":"1.36.3","emulationVersion":"1.36","uptimeSeconds":125}`)
	if v != "1.36.3" || e != "1.36" || up != "2m5s" {
		t.Fatalf("got %q %q %q", v, e, up)
	}
}

func TestExpiryProblem(t *testing.T) {
	now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		notAfter time.Time
		class    string
		want     string
	}{
		{now.Add(31 * 24 * time.Hour), "cluster CA", ""},
		{now.Add(10 * 24 * time.Hour), "cluster CA", "expires on 2026-12-11, in 10 days: renew it before then"},
		{now.Add(-48 * time.Hour), "self-signed", "EXPIRED on 2026-11-29 (2 days ago): clients that verify it refuse it; a component that makes its own certificate makes a new one when it restarts"},
	} {
		if got := expiryProblem(c.notAfter, now, c.class); c.want == "" && got != "" || !strings.Contains(got, c.want) {
			t.Errorf("%s: got %q, want %q", c.notAfter, got, c.want)
		}
	}
}

// A target whose certificate expires within 30 days fails with the date.
func TestExpiringCertificateIsReported(t *testing.T) {
	srv := httptest.NewUnstartedServer(&recorder{})
	cert := selfSigned(t) // valid for an hour
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
	srv.StartTLS()
	defer srv.Close()
	res := Run(context.Background(), []Target{{Component: components.KubeProxy, Node: "n", Endpoint: srv.URL, Paths: []string{"/metrics"}}}, tokens)
	if res[0].Pass() || !strings.Contains(strings.Join(res[0].Problems, " "), "the serving certificate expires on") || res[0].Expires == "" {
		t.Fatalf("%+v", res[0])
	}
}
