package testutil

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

func TestKubeVersionsMatchTheTestBed(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(RepoRoot(), "hack", "testbed.sh"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^KUBE_VERSIONS=\(([^)]*)\)`).FindSubmatch(raw)
	if m == nil {
		t.Fatal("hack/testbed.sh has no KUBE_VERSIONS=(...) line")
	}
	if got := strings.Fields(string(m[1])); !slices.Equal(got, KubeVersions) {
		t.Fatalf("hack/testbed.sh builds %v, the tests use %v", got, KubeVersions)
	}
}
