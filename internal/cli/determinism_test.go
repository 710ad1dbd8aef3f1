package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/eksa-metrics/eksa-metrics/internal/testutil"
)

// The same input gives the same bytes, every time: every example, every
// shared EKS-A fixture in both modes, and every invalid input (the order of
// its problems), through -o yaml, -o json and -o kustomize.
func TestOutputIsDeterministic(t *testing.T) {
	inputs, _ := filepath.Glob(filepath.Join(testutil.RepoRoot(), "examples", "*.yaml"))
	invalid, _ := filepath.Glob("testdata/invalid-*.yaml")
	inputs = append(inputs, invalid...)
	if dir := sharedSpecs(t); dir != "" {
		fixtures, _ := filepath.Glob(filepath.Join(dir, "*.yaml"))
		for _, f := range fixtures {
			for _, mode := range []string{"proxy", "bindaddress"} {
				inputs = append(inputs, fixtureWithMetrics(t, f, mode))
			}
		}
	}
	if len(inputs) < 50 {
		t.Fatalf("only %d inputs", len(inputs))
	}
	const runs = 20
	for _, in := range inputs {
		var first string
		for i := 0; i < runs; i++ {
			var b strings.Builder
			for _, format := range []string{"yaml", "json"} {
				code, stdout, stderr := run(t, "", "generate", "-f", in, "-o", format)
				b.WriteString(strings.Join([]string{format, string(rune('0' + code)), stdout, stderr}, "\x00"))
			}
			out := filepath.Join(t.TempDir(), "out")
			code, _, stderr := run(t, "", "generate", "-f", in, "-o", "kustomize", "--output-dir", out)
			b.WriteString(strings.ReplaceAll(stderr, out, "OUT") + string(rune('0'+code)) + tree(t, out))
			if i == 0 {
				first = b.String()
			} else if b.String() != first {
				t.Fatalf("%s: run %d differs from run 1", in, i+1)
			}
		}
	}
}

// sharedSpecs is the shared fixture specs' directory, or "" where absent.
func sharedSpecs(t *testing.T) string {
	dir := filepath.Join(testutil.RepoRoot(), "..", "shared", "fixtures", "eksa", "specs")
	if _, err := os.Stat(dir); err != nil {
		t.Logf("shared EKS Anywhere fixtures not found at %s: only the examples and testdata are checked", dir)
		return ""
	}
	return dir
}

// fixtureWithMetrics writes a shared EKS-A spec with a metrics section
// appended (the fixtures' Cluster is named test or eksa-unit-test).
func fixtureWithMetrics(t *testing.T, specPath, mode string) string {
	t.Helper()
	exposure := "proxy"
	if mode == "bindaddress" {
		exposure = "bindAddress\n  allowInsecure: true"
	}
	doc := testutil.WithMetrics(t, specPath, "  scrapers: [{kind: ServiceAccount, name: prometheus, namespace: monitoring}]\n  zPages: {statusz: true, flagz: true}\n  exposure: "+exposure+"\n")
	p := filepath.Join(t.TempDir(), filepath.Base(specPath)+"."+mode+".yaml")
	if err := os.WriteFile(p, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}
