package cli

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/eksa-metrics/eksa-metrics/pkg/spec"
)

// fleetSpec is a generated Docker cluster spec (the kind a fleet repository
// holds one of per store or site).
func fleetSpec(i int) string {
	return fmt.Sprintf(`apiVersion: anywhere.eks.amazonaws.com/v1alpha1
kind: Cluster
metadata:
  name: store-%04d
spec:
  kubernetesVersion: "1.34"
  eksaVersion: v0.26.1
  controlPlaneConfiguration: {count: 1}
  datacenterRef: {kind: DockerDatacenterConfig, name: store-%04d}
  managementCluster: {name: mgmt}
---
apiVersion: anywhere.eks.amazonaws.com/v1alpha1
kind: DockerDatacenterConfig
metadata: {name: store-%04d}
spec: {}
---
apiVersion: metrics.anywhere.eks.amazonaws.com/v1alpha1
kind: MetricsConfig
metadata: {name: store-%04d}
spec:
  scrapers:
  - {kind: ServiceAccount, name: prometheus-k8s, namespace: monitoring}
  zPages: {statusz: true, flagz: true}
  exposure: proxy
`, i, i, i, i)
}

// writeFleet writes n specs; broken maps an index to a change that breaks it.
func writeFleet(tb testing.TB, n int, broken map[int][2]string) string {
	tb.Helper()
	dir := filepath.Join(tb.TempDir(), "clusters")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		tb.Fatal(err)
	}
	// Files a fleet repository also holds, which are not cluster specs.
	if err := os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte("apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n"), 0o644); err != nil {
		tb.Fatal(err)
	}
	for i := 0; i < n; i++ {
		s := fleetSpec(i)
		if b, ok := broken[i]; ok {
			s = strings.Replace(s, b[0], b[1], 1)
		}
		sub := filepath.Join(dir, fmt.Sprintf("site-%d", i%10))
		_ = os.MkdirAll(sub, 0o755)
		if err := os.WriteFile(filepath.Join(sub, fmt.Sprintf("store-%04d.yaml", i)), []byte(s), 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	return dir
}

// 1000 specs with 3 broken: exit 3, the 3 named with file and line, 997
// complete output directories.
func TestGenerateFleet(t *testing.T) {
	dir := writeFleet(t, 1000, map[int][2]string{
		17:  {"exposure: proxy", "exposure: nodePort"},
		404: {"kubernetesVersion: \"1.34\"", "kubernetesVersion: \"1.19\""},
		999: {"  zPages:", "  zPagez:"},
	})
	out := filepath.Join(t.TempDir(), "out")
	code, stdout, stderr := run(t, "", "generate", "-f", dir, "-o", "kustomize", "--output-dir", out)
	if code != ExitInvalid || stdout != "" {
		t.Fatalf("exit %d (want 3), stdout %q", code, stdout)
	}
	for _, want := range []string{
		"site-7/store-0017.yaml:24: spec.exposure",
		"site-4/store-0404.yaml:6: spec.kubernetesVersion",
		"site-9/store-0999.yaml:23: spec.zPagez",
		"3 of 1000 cluster specs failed",
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	entries, err := os.ReadDir(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 997 {
		t.Fatalf("%d output directories, want 997", len(entries))
	}
	for _, e := range entries {
		for _, f := range []string{"PLAN.md", "cluster.yaml", "management/kustomization.yaml", "workload/kustomization.yaml", "prometheus/kustomization.yaml", "prometheus/scrape-configs.yaml"} {
			if _, err := os.Stat(filepath.Join(out, e.Name(), f)); err != nil {
				t.Fatalf("%s/%s: %v", e.Name(), f, err)
			}
		}
	}
	// The same fleet through validate.
	code, stdout, _ = run(t, "", "validate", "-f", dir)
	if code != ExitInvalid || !strings.Contains(stdout, "1000 specs:") || strings.Count(stdout, "❌ spec-loads") != 3 {
		t.Fatalf("validate: exit %d:\n%s", code, stdout[max(0, len(stdout)-2000):])
	}
}

func TestGenerateFleetNeedsAnOutputDir(t *testing.T) {
	dir := writeFleet(t, 2, nil)
	if code, _, stderr := run(t, "", "generate", "-f", dir); code != ExitUsage || !strings.Contains(stderr, "-o kustomize --output-dir") {
		t.Fatalf("exit %d:\n%s", code, stderr)
	}
}

func benchmarkValidateFleet(b *testing.B, n int) {
	dir := writeFleet(b, n, nil)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		f := &Factory{IOStreams: IOStreams{In: strings.NewReader(""), Out: io.Discard, ErrOut: io.Discard}}
		cmd := NewRootCmd(f)
		cmd.SetArgs([]string{"validate", "-f", dir, "-o", "json"})
		if err := cmd.Execute(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N*n), "µs/spec")
}

func BenchmarkValidateFleet100(b *testing.B)  { benchmarkValidateFleet(b, 100) }
func BenchmarkValidateFleet500(b *testing.B)  { benchmarkValidateFleet(b, 500) }
func BenchmarkValidateFleet1000(b *testing.B) { benchmarkValidateFleet(b, 1000) }

// A -f directory's *.yaml that links to a device is refused, not read
// endlessly; a large regular file is read only up to the size limit, and
// spec-loads names it.
func TestFleetInputsAreRegularFilesReadWithALimit(t *testing.T) {
	dir := t.TempDir()
	if err := os.Symlink("/dev/zero", filepath.Join(dir, "zero.yaml")); err != nil {
		t.Skip(err)
	}
	if _, err := expandInputs([]string{dir}); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Fatalf("a link to /dev/zero: %v", err)
	}
	if err := os.Remove(filepath.Join(dir, "zero.yaml")); err != nil {
		t.Fatal(err)
	}
	big := append([]byte("apiVersion: anywhere.eks.amazonaws.com/v1alpha1\nkind: Cluster\n"), bytes.Repeat([]byte("# padding\n"), spec.MaxFileSize/10+10)...)
	if err := os.WriteFile(filepath.Join(dir, "big.yaml"), big, 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := expandInputs([]string{dir})
	if err != nil || len(got) != 1 {
		t.Fatalf("a large spec: %v %v", got, err)
	}
}

// An --output-dir that is a symbolic link, or is reached through one below
// the current directory, is refused before anything is written or pruned
// (a repository can hold a link to anywhere); the link's target keeps what
// eksa-metrics wrote there before.
func TestOutputDirThroughASymlinkIsRefused(t *testing.T) {
	dir := writeFleet(t, 2, nil)
	base := t.TempDir()
	target := filepath.Join(base, "elsewhere")
	if code, _, stderr := run(t, "", "generate", "-f", dir, "-o", "kustomize", "--output-dir", target); code != 0 {
		t.Fatalf("a real directory: exit %d:\n%s", code, stderr)
	}
	before, _ := os.ReadDir(target)
	if err := os.Symlink(target, filepath.Join(base, "out")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(base, "repo"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(base, filepath.Join(base, "repo", "parent")); err != nil {
		t.Fatal(err)
	}
	t.Chdir(base)
	for _, out := range []string{filepath.Join(base, "out"), "out", filepath.Join("repo", "parent", "elsewhere")} {
		code, _, stderr := run(t, "", "generate", "-f", dir, "-o", "kustomize", "--output-dir", out, "--force", "--prune")
		if code != ExitUsage || !strings.Contains(stderr, "is a symbolic link") {
			t.Errorf("--output-dir %s: exit %d, want 2:\n%s", out, code, stderr)
		}
	}
	if after, _ := os.ReadDir(target); len(after) != len(before) {
		t.Errorf("the link's target went from %d to %d entries", len(before), len(after))
	}
}

// validate -f DIR holds one spec per cluster as generate does: the second
// spec of a cluster name fails spec-loads, naming the first.
func TestValidateFleetRefusesTwoSpecsOfOneCluster(t *testing.T) {
	dir := writeFleet(t, 3, nil)
	if err := os.WriteFile(filepath.Join(dir, "site-2", "store-0001-copy.yaml"), []byte(fleetSpec(1)), 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, _ := run(t, "", "validate", "-f", dir)
	if code != ExitInvalid || !strings.Contains(stdout, `cluster "store-0001" is also defined in `) || !strings.Contains(stdout, "store-0001.yaml, which comes first") {
		t.Errorf("exit %d:\n%s", code, stdout)
	}
	if code, _, stderr := run(t, "", "generate", "-f", dir, "-o", "kustomize", "--output-dir", filepath.Join(t.TempDir(), "out")); code != ExitInvalid || !strings.Contains(stderr, `cluster "store-0001" is also defined in`) {
		t.Errorf("generate: exit %d:\n%s", code, stderr)
	}
}

// A fleet adopts eksa-metrics cluster by cluster: generate -f DIR renders
// nothing for a spec with no metrics section yet, says so, and writes the
// others (exit 0), as validate calls that spec "not adopted"; a broken spec
// beside it still fails, and a directory where nothing is adopted renders
// nothing (exit 3).
func TestGenerateFleetAdoptsGradually(t *testing.T) {
	dir := writeFleet(t, 3, nil)
	bare := fleetSpec(1)
	bare = bare[:strings.Index(bare, "\n---\napiVersion: metrics")+1]
	path := filepath.Join(dir, "site-1", "store-0001.yaml")
	if err := os.WriteFile(path, []byte(bare), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "out")
	code, _, stderr := run(t, "", "generate", "-f", dir, "-o", "kustomize", "--output-dir", out)
	if code != ExitOK || !strings.Contains(stderr, "Not adopted: "+path+": cluster \"store-0001\" has no metrics section yet") || !strings.Contains(stderr, "1 specs not adopted yet") {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	entries, err := os.ReadDir(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 2 {
		t.Fatalf("%d output directories, want 2 (store-0000, store-0002)", len(entries))
	}
	if _, err := os.Stat(filepath.Join(out, "store-0001")); !os.IsNotExist(err) {
		t.Errorf("a directory was written for the spec not adopted: %v", err)
	}
	broken := strings.Replace(fleetSpec(2), "exposure: proxy", "exposure: nodePort", 1)
	if err := os.WriteFile(filepath.Join(dir, "site-2", "store-0002.yaml"), []byte(broken), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := run(t, "", "generate", "-f", dir, "-o", "kustomize", "--output-dir", t.TempDir(), "--force"); code != ExitInvalid || !strings.Contains(stderr, "store-0002.yaml:24: spec.exposure") {
		t.Errorf("a broken spec beside one not adopted: exit %d\n%s", code, stderr)
	}
	only := filepath.Join(t.TempDir(), "only")
	if err := os.MkdirAll(only, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(only, "a.yaml"), []byte(bare), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(only, "b.yaml"), []byte(strings.ReplaceAll(bare, "store-0001", "store-0009")), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := run(t, "", "generate", "-f", only, "-o", "kustomize", "--output-dir", t.TempDir(), "--force"); code != ExitInvalid || !strings.Contains(stderr, "no spec has a metrics section") {
		t.Errorf("nothing adopted: exit %d\n%s", code, stderr)
	}
}
