package render_test

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/eksa-metrics/eksa-metrics/pkg/render"
	"github.com/eksa-metrics/eksa-metrics/pkg/spec"
)

// By default no rendered ServiceMonitor reads a file of the scraper's pod:
// the token comes from a Secret (authorization) and the CA from a
// ConfigMap (tlsConfig.ca), as Grafana Alloy 1.19, the OpenTelemetry
// Target Allocator and a Prometheus that denies file access require. With
// scrapeConfig.credentials: file they do, which shows the check can fail.
func TestServiceMonitorsReferenceCredentialsByDefault(t *testing.T) {
	for _, sp := range fixtureSpecs(t) {
		base := strings.TrimSuffix(filepath.Base(sp), ".yaml")
		for _, mode := range modes {
			data := fixtureWithMetrics(t, sp, mode)
			byReference, files := fileReferences(t, renderBytes(t, base+".yaml", data, spec.Options{}))
			if len(files) > 0 || byReference == 0 {
				t.Errorf("%s/%s: %d endpoints authenticate by reference; file references: %v", base, mode, byReference, files)
			}
			at := bytes.LastIndex(data, []byte("kind: MetricsConfig\n"))
			if at < 0 || !bytes.Contains(data[at:], []byte("\nspec:\n")) {
				t.Fatalf("%s: no MetricsConfig spec to set credentials in", mode)
			}
			asked := append(bytes.Clone(data[:at]), bytes.Replace(data[at:], []byte("\nspec:\n"), []byte("\nspec:\n  scrapeConfig: {credentials: file}\n"), 1)...)
			if n, files := fileReferences(t, renderBytes(t, base+".yaml", asked, spec.Options{})); n > 0 || len(files) == 0 {
				t.Errorf("%s/%s with credentials: file: %d by reference, %d file references", base, mode, n, len(files))
			}
		}
	}
}

// fileReferences counts the ServiceMonitor endpoints with authorization
// and lists those that read a file.
func fileReferences(t *testing.T, r *render.Result) (int, []string) {
	t.Helper()
	byReference := 0
	var files []string
	for _, o := range r.Objects {
		if o.Kind() != "ServiceMonitor" {
			continue
		}
		sm := o.Object
		name := sm["metadata"].(map[string]any)["name"].(string)
		for _, ep := range sm["spec"].(map[string]any)["endpoints"].([]any) {
			e := ep.(map[string]any)
			if e["authorization"] != nil {
				byReference++
			}
			if e["bearerTokenFile"] != nil {
				files = append(files, name+" bearerTokenFile")
			}
			tls, _ := e["tlsConfig"].(map[string]any)
			for _, k := range []string{"caFile", "certFile", "keyFile"} {
				if tls[k] != nil {
					files = append(files, name+" tlsConfig."+k)
				}
			}
		}
	}
	return byReference, files
}
