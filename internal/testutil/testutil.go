// Package testutil holds helpers shared by the tests: golden files and the
// location of the shared EKS Anywhere fixtures.
package testutil

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/pmezard/go-difflib/difflib"
)

var update = flag.Bool("update", false, "rewrite golden files instead of comparing")

// Golden compares got with the golden file at path (relative to the calling
// test's package), or rewrites it with -update.
func Golden(t testing.TB, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading golden file (run make update-golden to create it): %v", err)
	}
	if !bytes.Equal(want, got) {
		diff, _ := difflib.GetUnifiedDiffString(difflib.UnifiedDiff{
			A: difflib.SplitLines(string(want)), B: difflib.SplitLines(string(got)),
			FromFile: path, ToFile: "got", Context: 3,
		})
		t.Errorf("output differs from %s (run make update-golden if the change is intended):\n%s", path, diff)
	}
}

// RepoRoot is the repository's top directory.
func RepoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

// SharedFixtures returns ../shared/fixtures/eksa beside the checkout, or
// skips the test with a message where it is absent.
func SharedFixtures(t testing.TB) string {
	t.Helper()
	dir := filepath.Join(RepoRoot(), "..", "shared", "fixtures", "eksa")
	if _, err := os.Stat(dir); err != nil {
		t.Skipf("shared EKS Anywhere fixtures not found at %s (they live beside the checkout in CI): %v", dir, err)
	}
	return dir
}

// WithMetrics reads a shared EKS-A cluster spec and appends a MetricsConfig
// document for its Cluster (the fixtures name it test or eksa-unit-test);
// body is the MetricsConfig spec, its lines indented by two spaces.
func WithMetrics(t testing.TB, specPath, body string) string {
	t.Helper()
	raw, err := os.ReadFile(specPath)
	if err != nil {
		t.Fatal(err)
	}
	name := "test"
	if strings.Contains(string(raw), "name: eksa-unit-test") {
		name = "eksa-unit-test"
	}
	return strings.TrimRight(string(raw), "\n") + "\n---\napiVersion: metrics.anywhere.eks.amazonaws.com/v1alpha1\nkind: MetricsConfig\nmetadata: {name: " + name + "}\nspec:\n" + body
}

// KubeVersions are the Kubernetes versions of the test bed, newest first:
// hack/testbed.sh builds them (TestKubeVersionsMatchTheTestBed keeps the two
// lists equal), the integration tests use the first, the end-to-end tests
// both. One version per purpose: 1.37, the newest (z-pages beta and on,
// statusz v1beta1, native histograms on); 1.34, z-pages behind alpha gates
// that eksa-metrics sets, statusz as text. 1.36 is not built: it proves
// nothing 1.37 does not, and each version is about 24 CPU-minutes of a cold
// build (about 12 minutes of both cores).
var KubeVersions = []string{"v1.37.2", "v1.34.4"}
