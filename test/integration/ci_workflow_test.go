package integration

import (
	"encoding/xml"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/eksa-metrics/eksa-metrics/internal/testutil"
)

// ciStep is the shell of the documented workflow's validate step
// (docs/ci.md, "Validate changed cluster specs"), as a reader copies it.
func ciStep(t *testing.T) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(testutil.RepoRoot(), "docs", "ci.md"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?s)- name: Validate changed cluster specs\n.*?run: \|\n(.*?)\n\n`).FindSubmatch(raw)
	if m == nil {
		t.Fatal("docs/ci.md has no step \"Validate changed cluster specs\" with a run block")
	}
	lines := strings.Split(string(m[1]), "\n")
	indent := len(lines[0]) - len(strings.TrimLeft(lines[0], " "))
	for i, l := range lines {
		if len(l) >= indent {
			lines[i] = l[indent:]
		}
	}
	return strings.Join(lines, "\n") + "\n"
}

// clusterSpec is the Docker example as cluster name's spec; without its
// metrics section when adopted is false.
func clusterSpec(t *testing.T, name string, adopted bool, edit func(string) string) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(testutil.RepoRoot(), "examples", "docker-bindaddress.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	s := strings.ReplaceAll(string(raw), "name: dev\n", "name: "+name+"\n")
	if !adopted {
		s = s[:strings.Index(s, "---\napiVersion: metrics.anywhere.eks.amazonaws.com/v1alpha1")]
	}
	if edit != nil {
		s = edit(s)
	}
	return s
}

// git runs git in dir.
func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-c", "user.name=ci", "-c", "user.email=ci@example.invalid", "-c", "commit.gpgsign=false"}, args...)...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// junitReport is what a JUnit publisher reads of one report.
type junitReport struct {
	Tests    int `xml:"tests,attr"`
	Failures int `xml:"failures,attr"`
}

// docs/ci.md's workflow runs as written, on the repository layout it
// describes (one spec per cluster under clusters/, the base branch as
// --from): a pull request that changes one cluster, adopts eksa-metrics in
// another, adds a third and removes a fourth passes, with one passing
// JUnit report per changed spec; one that breaks a spec fails (exit 3)
// with a report that says so. The whole-tree form (validate -f clusters
// --from base/clusters) gives the same verdicts.
func TestCIWorkflowRunsAsDocumented(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	bin, err := buildBinary()
	if err != nil {
		t.Fatal(err)
	}
	step := ciStep(t)
	repo := t.TempDir()
	write := func(name, content string) {
		t.Helper()
		p := filepath.Join(repo, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	git(t, repo, "init", "-q", "-b", "main")
	write("clusters/prod.yaml", clusterSpec(t, "prod", true, nil))
	write("clusters/staging.yaml", clusterSpec(t, "staging", false, nil))
	write("clusters/old.yaml", clusterSpec(t, "old", true, nil))
	write("README.md", "fleet\n")
	git(t, repo, "add", "-A")
	git(t, repo, "commit", "-q", "-m", "base")
	base := git(t, repo, "rev-parse", "HEAD")

	run := func(script string) (int, string) {
		t.Helper()
		cmd := exec.Command("bash", "-e", "-o", "pipefail", "-c", script)
		cmd.Dir = repo
		cmd.Env = append(os.Environ(), "BASE="+base, "PATH="+filepath.Dir(bin)+string(os.PathListSeparator)+os.Getenv("PATH"))
		out, err := cmd.CombinedOutput()
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode(), string(out)
		} else if err != nil {
			t.Fatal(err)
		}
		return 0, string(out)
	}
	reports := func() map[string]junitReport {
		t.Helper()
		out := map[string]junitReport{}
		files, _ := filepath.Glob(filepath.Join(repo, "reports", "*.xml"))
		for _, f := range files {
			raw, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			var r junitReport
			if err := xml.Unmarshal(raw, &r); err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			out[filepath.Base(f)] = r
		}
		return out
	}
	// The whole-tree form, with the base tree written as the docs say.
	tree := "rm -rf base && mkdir -p base && git archive \"$BASE\" clusters | tar -x -C base\n" +
		"eksa-metrics validate -f clusters --from base/clusters -o junit > tree.xml\n"

	// The pull request: prod changes, staging adopts, new is added, old is removed.
	write("clusters/prod.yaml", clusterSpec(t, "prod", true, func(s string) string {
		return strings.Replace(s, "    flagz: true\n", "    flagz: false\n", 1)
	}))
	write("clusters/staging.yaml", clusterSpec(t, "staging", true, nil))
	write("clusters/new.yaml", clusterSpec(t, "new", true, nil))
	if err := os.Remove(filepath.Join(repo, "clusters", "old.yaml")); err != nil {
		t.Fatal(err)
	}
	git(t, repo, "add", "-A")
	git(t, repo, "commit", "-q", "-m", "change")
	code, out := run(step)
	if code != 0 {
		t.Fatalf("the documented step: exit %d\n%s", code, out)
	}
	got := reports()
	for _, name := range []string{"clusters_prod.yaml.xml", "clusters_staging.yaml.xml", "clusters_new.yaml.xml"} {
		if r, ok := got[name]; !ok || r.Tests == 0 || r.Failures != 0 {
			t.Errorf("report %s: %+v (present %t), want passing checks", name, r, ok)
		}
	}
	if len(got) != 3 {
		t.Errorf("reports %v, want one per changed spec", got)
	}
	if !strings.Contains(out, "upgrade-diff") {
		t.Errorf("the readable log shows no upgrade-diff:\n%s", out)
	}
	if code, out := run(tree); code != 0 {
		t.Errorf("validate -f clusters --from base/clusters: exit %d\n%s", code, out)
	}

	// A pull request that breaks prod fails, and its report says so.
	write("clusters/prod.yaml", clusterSpec(t, "prod", true, func(s string) string {
		return strings.Replace(s, "  exposure: bindAddress\n", "  exposure: everywhere\n", 1)
	}))
	git(t, repo, "commit", "-q", "-am", "break prod")
	if err := os.RemoveAll(filepath.Join(repo, "reports")); err != nil {
		t.Fatal(err)
	}
	code, out = run(step)
	if code != 3 {
		t.Fatalf("a broken spec: exit %d, want 3\n%s", code, out)
	}
	if r := reports()["clusters_prod.yaml.xml"]; r.Failures == 0 {
		t.Errorf("the broken spec's report has no failure: %+v", r)
	}
	if !strings.Contains(out, "exposure") {
		t.Errorf("the readable log does not name the field:\n%s", out)
	}
	if code, out := run(tree); code != 3 {
		t.Errorf("the whole tree with a broken spec: exit %d, want 3\n%s", code, out)
	}
}
