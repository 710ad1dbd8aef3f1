package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf16"

	"github.com/eksa-metrics/eksa-metrics/internal/testutil"
)

// run executes the root command in-process.
func run(t *testing.T, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = Main(context.Background(), args, IOStreams{In: strings.NewReader(stdin), Out: &out, ErrOut: &errOut})
	return code, out.String(), errOut.String()
}

// wants reads the "# want: ..." lines of a testdata file.
func wants(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		if w, ok := strings.CutPrefix(l, "# want: "); ok {
			out = append(out, w)
		}
	}
	if len(out) == 0 {
		t.Fatalf("%s has no '# want:' line", path)
	}
	return out
}

func TestGenerateInvalidInputs(t *testing.T) {
	files, _ := filepath.Glob("testdata/invalid-*.yaml")
	if len(files) < 30 {
		t.Fatalf("want at least 30 invalid inputs, found %d", len(files))
	}
	for _, f := range files {
		t.Run(strings.TrimSuffix(filepath.Base(f), ".yaml"), func(t *testing.T) {
			outDir := filepath.Join(t.TempDir(), "out")
			for _, args := range [][]string{
				{"generate", "-f", f},
				{"generate", "-f", f, "-o", "json"},
				{"generate", "-f", f, "-o", "kustomize", "--output-dir", outDir},
			} {
				code, stdout, stderr := run(t, "", args...)
				if code != ExitInvalid {
					t.Errorf("%v: exit %d, want %d; stderr:\n%s", args, code, ExitInvalid, stderr)
				}
				if stdout != "" {
					t.Errorf("%v: wrote to stdout on invalid input:\n%s", args, stdout)
				}
				for _, w := range wants(t, f) {
					if !strings.Contains(stderr, filepath.Dir(f)+"/"+w) {
						t.Errorf("%v: stderr lacks %q:\n%s", args, w, stderr)
					}
				}
				if strings.Count(stderr, "Error:") != 1 {
					t.Errorf("%v: want exactly one Error: line, got:\n%s", args, stderr)
				}
			}
			if _, err := os.Stat(outDir); !os.IsNotExist(err) {
				t.Errorf("output directory was created for an invalid input (stat: %v)", err)
			}
		})
	}
}

func TestGenerateReportsEveryProblemInOneRun(t *testing.T) {
	f := "testdata/invalid-many-problems.yaml"
	code, _, stderr := run(t, "", "generate", "-f", f)
	if code != ExitInvalid {
		t.Fatalf("exit %d, want 3", code)
	}
	ws := wants(t, f)
	if len(ws) < 4 {
		t.Fatalf("the test file should list several problems, has %d", len(ws))
	}
	for _, w := range ws {
		if !strings.Contains(stderr, w) {
			t.Errorf("stderr lacks %q:\n%s", w, stderr)
		}
	}
}

func TestGenerateOversizedFile(t *testing.T) {
	big := filepath.Join(t.TempDir(), "big.yaml")
	data := bytes.Repeat([]byte("# padding padding padding padding padding padding padding\n"), 80000)
	if err := os.WriteFile(big, data, 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := run(t, "", "generate", "-f", big)
	if code != ExitInvalid || stdout != "" || !strings.Contains(stderr, big+": file is larger than 4 MiB") {
		t.Fatalf("exit %d, stdout %q, stderr:\n%s", code, stdout, stderr)
	}
}

func TestGenerateMissingFile(t *testing.T) {
	code, _, stderr := run(t, "", "generate", "-f", "testdata/does-not-exist.yaml")
	if code != ExitInvalid || !strings.Contains(stderr, "testdata/does-not-exist.yaml: no such file") {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr)
	}
}

func TestUsageErrors(t *testing.T) {
	for name, args := range map[string][]string{
		"no filename":                   {"generate"},
		"bad output":                    {"generate", "-f", "x.yaml", "-o", "xml"},
		"kustomize without dir":         {"generate", "-f", "x.yaml", "-o", "kustomize"},
		"dir without kustomize":         {"generate", "-f", "x.yaml", "--output-dir", "d"},
		"bad capi version":              {"generate", "-f", "x.yaml", "--capi-api-version", "v1alpha4"},
		"bad capi version for validate": {"validate", "-f", "x.yaml", "--capi-api-version", "v9"},
		"bad capi version for apply":    {"apply", "-f", "x.yaml", "--capi-api-version", "v9"},
		"bad capi version for verify":   {"verify", "-f", "x.yaml", "--capi-api-version", "v9"},
		"unknown flag":                  {"generate", "--frobnicate"},
		"unknown command":               {"frobnicate"},
		"extra argument":                {"generate", "-f", "x.yaml", "extra"},
	} {
		t.Run(name, func(t *testing.T) {
			code, stdout, stderr := run(t, "", args...)
			if code != ExitUsage || stdout != "" || !strings.HasPrefix(stderr, "Error: ") {
				t.Fatalf("exit %d (want 2), stdout %q, stderr:\n%s", code, stdout, stderr)
			}
		})
	}
}

// The examples are what the README tells a newcomer to run: their full output
// is pinned, in each format.
func TestGenerateExamplesGolden(t *testing.T) {
	// A relative path, so that the golden stderr does not depend on the checkout.
	examples, _ := filepath.Glob(filepath.Join("..", "..", "examples", "*.yaml"))
	if len(examples) < 3 {
		t.Fatalf("want at least 3 examples, found %d", len(examples))
	}
	for _, ex := range examples {
		name := strings.TrimSuffix(filepath.Base(ex), ".yaml")
		t.Run(name, func(t *testing.T) {
			rel := ex
			code, stdout, stderr := run(t, "", "generate", "-f", rel)
			if code != ExitOK {
				t.Fatalf("exit %d:\n%s", code, stderr)
			}
			testutil.Golden(t, filepath.Join("testdata", "golden", name+".yaml"), []byte(stdout))
			testutil.Golden(t, filepath.Join("testdata", "golden", name+".stderr"), []byte(stderr))

			code, stdout, _ = run(t, "", "generate", "-f", rel, "-o", "json")
			if code != ExitOK || !strings.HasPrefix(stdout, "{\n  \"apiVersion\": \"v1\",\n  \"items\": [") {
				t.Fatalf("-o json: exit %d, output starts %.80q", code, stdout)
			}
		})
	}
}

func TestGenerateFromStdinMatchesFile(t *testing.T) {
	ex := filepath.Join(testutil.RepoRoot(), "examples", "docker-bindaddress.yaml")
	data, err := os.ReadFile(ex)
	if err != nil {
		t.Fatal(err)
	}
	_, fromFile, _ := run(t, "", "generate", "-f", ex)
	code, fromStdin, stderr := run(t, string(data), "generate", "-f", "-")
	if code != ExitOK || fromStdin != fromFile {
		t.Fatalf("exit %d; stdin output differs from file output; stderr:\n%s", code, stderr)
	}
	if !strings.Contains(stderr, "<stdin>:") {
		t.Errorf("warnings should name <stdin>:\n%s", stderr)
	}
}

func TestGenerateKustomizeDirectory(t *testing.T) {
	ex := filepath.Join(testutil.RepoRoot(), "examples", "vsphere-management.yaml")
	dir := filepath.Join(t.TempDir(), "out")
	if code, _, stderr := run(t, "", "generate", "-f", ex, "-o", "kustomize", "--output-dir", dir); code != ExitOK {
		t.Fatalf("exit %d:\n%s", code, stderr)
	}
	for _, f := range []string{"cluster.yaml", "PLAN.md", "management/kustomization.yaml", "workload/kustomization.yaml", "prometheus/kustomization.yaml", "prometheus/scrape-configs.yaml"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("missing %s: %v", f, err)
		}
	}
	// A second run refuses to overwrite without --force and changes nothing.
	marker := filepath.Join(dir, "PLAN.md")
	if err := os.WriteFile(marker, []byte("edited by hand\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := run(t, "", "generate", "-f", ex, "-o", "kustomize", "--output-dir", dir)
	if code != ExitRuntime || !strings.Contains(stderr, "pass --force") {
		t.Fatalf("without --force: exit %d, stderr:\n%s", code, stderr)
	}
	if b, _ := os.ReadFile(marker); string(b) != "edited by hand\n" {
		t.Fatalf("the refused run changed PLAN.md")
	}
	// An invalid input with --force leaves the directory as it was.
	if code, _, _ := run(t, "", "generate", "-f", "testdata/invalid-bad-exposure.yaml", "-o", "kustomize", "--output-dir", dir, "--force"); code != ExitInvalid {
		t.Fatalf("invalid input with --force: exit %d", code)
	}
	if b, _ := os.ReadFile(marker); string(b) != "edited by hand\n" {
		t.Fatalf("an invalid input changed the output directory")
	}
	if code, _, stderr := run(t, "", "generate", "-f", ex, "-o", "kustomize", "--output-dir", dir, "--force"); code != ExitOK {
		t.Fatalf("--force: exit %d:\n%s", code, stderr)
	}
	if b, _ := os.ReadFile(marker); string(b) == "edited by hand\n" {
		t.Fatalf("--force did not replace the directory")
	}
	entries, _ := os.ReadDir(filepath.Dir(dir))
	if len(entries) != 1 {
		t.Errorf("temporary directories left behind: %v", entries)
	}
}

func TestVersion(t *testing.T) {
	code, stdout, _ := run(t, "", "version")
	if code != 0 || !strings.HasPrefix(stdout, "eksa-metrics ") {
		t.Fatalf("exit %d, %q", code, stdout)
	}
}

// A spec saved as UTF-16 with a byte-order mark (some Windows editors) is
// refused naming the encoding, and nothing is written: cluster.yaml, which
// is the file's own bytes less the metrics section, would be wrong.
func TestGenerateRefusesUTF16(t *testing.T) {
	raw, err := os.ReadFile("../../examples/docker-bindaddress.yaml")
	if err != nil {
		t.Fatal(err)
	}
	u := []byte{0xFF, 0xFE}
	for _, r := range utf16.Encode([]rune(string(raw))) {
		u = append(u, byte(r), byte(r>>8))
	}
	p := filepath.Join(t.TempDir(), "cluster.yaml")
	if err := os.WriteFile(p, u, 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "out")
	code, stdout, stderr := run(t, "", "generate", "-f", p, "-o", "kustomize", "--output-dir", out)
	if code != ExitInvalid || stdout != "" || !strings.Contains(stderr, p+": the file is UTF-16 (little-endian) with a byte-order mark") {
		t.Errorf("exit %d, stdout %q, stderr:\n%s", code, stdout, stderr)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("something was written: %v", err)
	}
}
