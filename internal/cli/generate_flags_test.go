package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/eksa-metrics/eksa-metrics/internal/testutil"
)

// --force and --prune act on an -o kustomize --output-dir: elsewhere they
// are usage errors that say why (they used to be ignored).
func TestGenerateForceAndPruneNeedKustomize(t *testing.T) {
	spec := filepath.Join(testutil.RepoRoot(), "examples", "docker-bindaddress.yaml")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--force"}, "--force replaces an --output-dir that -o kustomize wrote before, but -o yaml writes to stdout"},
		{[]string{"-o", "json", "--force"}, "-o json writes to stdout"},
		{[]string{"--prune"}, "--prune removes the cluster directories"},
		{[]string{"-o", "json", "--force", "--prune"}, "drop --force, or add -o kustomize --output-dir DIR"},
	} {
		args := append([]string{"generate", "-f", spec}, tc.args...)
		code, stdout, stderr := run(t, "", args...)
		if code != ExitUsage || stdout != "" || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d (want 2), stdout %d bytes, stderr:\n%s(want %q)", args, code, len(stdout), stderr, tc.want)
		}
	}
}

// An --output-dir inside a -f directory is refused before anything is
// written, naming both and what to do: the next run would read the
// cluster.yaml files written there as specs (generate exit 1, validate
// exit 3, on every later run).
func TestGenerateOutputDirInsideInputDir(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "clusters")
	exampleVariant(t, dir, "docker-bindaddress", "dev.yaml")
	if err := os.Symlink(dir, filepath.Join(root, "link")); err != nil {
		t.Fatal(err)
	}
	for _, out := range []string{
		filepath.Join(dir, "out"),
		dir,
		filepath.Join(root, "link", "rendered", "fleet"), // through a symbolic link, not there yet
	} {
		code, _, stderr := run(t, "", "generate", "-f", dir, "-o", "kustomize", "--output-dir", out)
		if code != ExitUsage {
			t.Errorf("--output-dir %s: exit %d, want 2:\n%s", out, code, stderr)
		}
		for _, want := range []string{"--output-dir " + out, "-f " + dir, "choose an --output-dir outside", "clusters-rendered)"} {
			if !strings.Contains(stderr, want) {
				t.Errorf("--output-dir %s: stderr lacks %q:\n%s", out, want, stderr)
			}
		}
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("%s holds %d entries after the refusals, want only the spec", dir, len(entries))
	}
	// Outside the input directory: written, and the next runs work.
	out := filepath.Join(root, "clusters-rendered")
	for i, extra := range [][]string{nil, {"--force"}} {
		args := append([]string{"generate", "-f", dir, "-o", "kustomize", "--output-dir", out}, extra...)
		if code, _, stderr := run(t, "", args...); code != ExitOK {
			t.Fatalf("run %d: exit %d:\n%s", i+1, code, stderr)
		}
	}
	if code, stdout, _ := run(t, "", "validate", "-f", dir); code != ExitOK {
		t.Errorf("validate after generate: exit %d:\n%s", code, stdout)
	}
}

// apply works on one cluster spec: a directory is a usage error that says so.
func TestApplyDirectoryIsUsageError(t *testing.T) {
	dir := t.TempDir()
	exampleVariant(t, dir, "docker-bindaddress", "dev.yaml")
	code, stdout, stderr := run(t, "", "apply", "-f", dir, "--kubeconfig", filepath.Join(dir, "no-such.kubeconfig"))
	if code != ExitUsage || stdout != "" {
		t.Fatalf("exit %d (want 2), stdout %q:\n%s", code, stdout, stderr)
	}
	for _, want := range []string{"-f " + dir + " is a directory", "apply works on one cluster spec", filepath.Join(dir, "<cluster>.yaml")} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
}
