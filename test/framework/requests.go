package framework

import (
	"context"
	"strings"
	"testing"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"k8s.io/client-go/kubernetes"
)

// Request is one series of an API server's apiserver_request_total: its
// labels (verb, resource, code, ...) and the requests it counts.
type Request struct {
	Labels map[string]string
	Count  float64
}

// RequestsOf reads the requests an API server has answered, from its own
// apiserver_request_total (whoever sent them).
func RequestsOf(t testing.TB, client kubernetes.Interface) []Request {
	t.Helper()
	raw, err := client.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(strings.NewReader(string(raw)))
	if err != nil {
		t.Fatal(err)
	}
	var out []Request
	for _, m := range families["apiserver_request_total"].GetMetric() {
		l := map[string]string{}
		for _, p := range m.GetLabel() {
			l[p.GetName()] = p.GetValue()
		}
		out = append(out, Request{Labels: l, Count: m.GetCounter().GetValue()})
	}
	return out
}
