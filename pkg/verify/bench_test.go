package verify

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/eksa-metrics/eksa-metrics/pkg/components"
)

// simulated serves what a target serves, after a fixed latency, and records
// how many requests were in flight at most.
func simulated(latency time.Duration) (*httptest.Server, *atomic.Int64) {
	var inFlight, most atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := inFlight.Add(1)
		defer inFlight.Add(-1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		time.Sleep(latency)
		switch r.Header.Get("Authorization") {
		case "Bearer scraper":
			io.WriteString(w, "# TYPE up gauge\nup 1\n")
		case "":
			w.WriteHeader(http.StatusUnauthorized)
		default:
			w.WriteHeader(http.StatusForbidden)
		}
	}))
	srv.EnableHTTP2 = false
	srv.StartTLS()
	return srv, &most
}

func simulatedTargets(n int, endpoint string) []Target {
	out := make([]Target, n)
	for i := range out {
		out[i] = Target{Component: components.KubeProxy, Node: fmt.Sprintf("node-%03d", i), Endpoint: endpoint, Paths: []string{"/metrics"}}
	}
	return out
}

func TestRunRespectsTheConcurrencyBound(t *testing.T) {
	srv, most := simulated(5 * time.Millisecond)
	defer srv.Close()
	results := Run(context.Background(), simulatedTargets(60, srv.URL), Options{ScraperToken: "scraper", UnboundToken: "unbound", Concurrency: 4})
	for _, r := range results {
		if !r.Pass() || r.Samples != 1 || r.Unbound != 403 || r.Anonymous != 401 || r.TLS != "unknown CA" && r.TLS != "self-signed" {
			t.Fatalf("%s: %+v", r.Target, r)
		}
	}
	if m := most.Load(); m > 4 {
		t.Fatalf("%d requests in flight at once, want at most 4", m)
	}
	if results[0].Target.Node != "node-000" || results[59].Target.Node != "node-059" {
		t.Fatal("rows are not in target order")
	}
}

// BenchmarkVerify500 checks 500 simulated targets on loopback, each answering
// after 20ms, and reports the total as a multiple of one target alone.
func BenchmarkVerify500(b *testing.B) {
	srv, _ := simulated(20 * time.Millisecond)
	defer srv.Close()
	opts := Options{ScraperToken: "scraper", UnboundToken: "unbound"}
	start := time.Now()
	Run(context.Background(), simulatedTargets(1, srv.URL), opts)
	single := time.Since(start)
	for _, conc := range []int{16, 64, 256} {
		b.Run(fmt.Sprintf("concurrency=%d", conc), func(b *testing.B) {
			o := opts
			o.Concurrency = conc
			targets := simulatedTargets(500, srv.URL)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				for _, r := range Run(context.Background(), targets, o) {
					if !r.Pass() {
						b.Fatalf("%s: %s", r.Target, strings.Join(r.Problems, "; "))
					}
				}
			}
			per := b.Elapsed() / time.Duration(b.N)
			b.ReportMetric(per.Seconds(), "s/500-targets")
			b.ReportMetric(float64(per)/float64(single), "x-one-target")
		})
	}
}
