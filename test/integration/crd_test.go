package integration

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/eksa-metrics/eksa-metrics/internal/testutil"
	"github.com/eksa-metrics/eksa-metrics/test/framework"
)

// The MetricsConfig CRD in config/crd is what controller-gen makes of the Go
// types (make generate), and a real API server accepts it (the controller
// test installs it from `eksa-metrics controller manifests`).
func TestCRDIsGeneratedFromTheTypes(t *testing.T) {
	gen := framework.Binary(t, "controller-gen")
	out := t.TempDir()
	cmd := exec.Command(gen, "crd", "paths=./pkg/apis/...", "output:crd:dir="+out)
	cmd.Dir = testutil.RepoRoot()
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("controller-gen: %v\n%s", err, b)
	}
	name := "metrics.anywhere.eks.amazonaws.com_metricsconfigs.yaml"
	want, err := os.ReadFile(filepath.Join(out, name))
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(testutil.RepoRoot(), "config", "crd", name))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("config/crd/%s is not what controller-gen makes of pkg/apis: run make generate", name)
	}
}
