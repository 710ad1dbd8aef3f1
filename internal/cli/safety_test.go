package cli

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/eksa-metrics/eksa-metrics/internal/testutil"
)

// specWith is a small valid spec; metrics is the MetricsConfig spec, indented
// by two spaces.
func specWith(name, metrics string) string {
	return fmt.Sprintf(`apiVersion: anywhere.eks.amazonaws.com/v1alpha1
kind: Cluster
metadata:
  name: %s
spec:
  kubernetesVersion: "1.34"
  eksaVersion: v0.26.1
  controlPlaneConfiguration: {count: 1}
  datacenterRef: {kind: DockerDatacenterConfig, name: dc}
  managementCluster: {name: mgmt}
---
apiVersion: metrics.anywhere.eks.amazonaws.com/v1alpha1
kind: MetricsConfig
metadata:
  name: %s
spec:
%s`, name, name, metrics)
}

const okScrapers = "  scrapers:\n  - {kind: ServiceAccount, name: prometheus-k8s, namespace: monitoring}\n"

func writeSpec(t *testing.T, dir, file, content string) string {
	t.Helper()
	p := filepath.Join(dir, file)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func tree(t *testing.T, root string) string {
	t.Helper()
	var b strings.Builder
	_ = filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		content := ""
		if d.Type().IsRegular() {
			raw, _ := os.ReadFile(p)
			content = string(raw)
		}
		fmt.Fprintf(&b, "%s %v %q\n", rel, d.Type(), content)
		return nil
	})
	return b.String()
}

// The reported data loss: generate --force into a git checkout that holds the
// spec deleted the checkout. Now it refuses and the checkout is unchanged.
func TestGenerateForceNeverDeletesARepository(t *testing.T) {
	repo := t.TempDir()
	writeSpec(t, repo, ".git/HEAD", "ref: refs/heads/main\n")
	in := writeSpec(t, repo, "cluster.yaml", specWith("c1", okScrapers))
	before := tree(t, repo)
	for _, out := range []string{repo, filepath.Join(repo, ".")} {
		code, _, stderr := run(t, "", "generate", "-f", in, "-o", "kustomize", "--output-dir", out, "--force")
		if code == ExitOK || !strings.Contains(stderr, "refusing to replace") {
			t.Fatalf("exit %d, stderr:\n%s", code, stderr)
		}
	}
	if after := tree(t, repo); after != before {
		t.Fatalf("the repository changed:\n%s", after)
	}
}

// A cluster named ".." or "../x" once wrote, and with --force deleted,
// outside --output-dir. Such names are refused as Kubernetes names.
func TestFleetClusterNamesStayInsideTheOutputDirectory(t *testing.T) {
	root := t.TempDir()
	writeSpec(t, root, "keep/precious.txt", "keep me\n")
	specs := filepath.Join(root, "specs")
	for i, name := range []string{"..", "../keep", "Upper", "a.b", "ok\nname"} {
		writeSpec(t, specs, fmt.Sprintf("s%d.yaml", i), strings.Replace(specWith("placeholder", okScrapers), "placeholder", fmt.Sprintf("%q", name), 2))
	}
	writeSpec(t, specs, "good.yaml", specWith("good", okScrapers))
	before := tree(t, filepath.Join(root, "keep"))
	out := filepath.Join(root, "out")
	code, _, stderr := run(t, "", "generate", "-f", specs, "-o", "kustomize", "--output-dir", out, "--force")
	if code != ExitInvalid || strings.Count(stderr, "metadata.name") < 5 {
		t.Fatalf("exit %d (want 3), stderr:\n%s", code, stderr)
	}
	if after := tree(t, filepath.Join(root, "keep")); after != before {
		t.Fatalf("a file outside --output-dir changed:\n%s", after)
	}
	if entries, _ := os.ReadDir(out); len(entries) != 1 || entries[0].Name() != "good" {
		t.Fatalf("output directory holds %v, want only good/", entries)
	}
}

// A fleet run names the directories of clusters whose spec is gone; --prune
// removes them, and only them.
func TestFleetStaleClusterDirectories(t *testing.T) {
	root := t.TempDir()
	specs := filepath.Join(root, "specs")
	a := writeSpec(t, specs, "a.yaml", specWith("a", okScrapers))
	writeSpec(t, specs, "b.yaml", specWith("b", okScrapers))
	out := filepath.Join(root, "out")
	if code, _, stderr := run(t, "", "generate", "-f", specs, "-o", "kustomize", "--output-dir", out); code != ExitOK {
		t.Fatalf("exit %d:\n%s", code, stderr)
	}
	writeSpec(t, out, "README.md", "our fleet\n")
	if err := os.Remove(a); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := run(t, "", "generate", "-f", specs, "-o", "kustomize", "--output-dir", out, "--force")
	if code != ExitOK || !strings.Contains(stderr, `cluster "a", which no input defines any more`) || !strings.Contains(stderr, "--prune") {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr)
	}
	if _, err := os.Stat(filepath.Join(out, "a", "PLAN.md")); err != nil {
		t.Fatalf("the stale directory went away without --prune: %v", err)
	}
	if code, _, stderr := run(t, "", "generate", "-f", specs, "-o", "kustomize", "--output-dir", out, "--prune"); code != ExitUsage {
		t.Fatalf("--prune without --force: exit %d:\n%s", code, stderr)
	}
	code, _, stderr = run(t, "", "generate", "-f", specs, "-o", "kustomize", "--output-dir", out, "--force", "--prune")
	if code != ExitOK || !strings.Contains(stderr, "Removed "+filepath.Join(out, "a")) {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr)
	}
	for path, want := range map[string]bool{"a": false, "b/PLAN.md": true, "README.md": true} {
		if _, err := os.Stat(filepath.Join(out, path)); (err == nil) != want {
			t.Errorf("%s exists: %t, want %t", path, err == nil, want)
		}
	}
}

// Two files for one cluster: the first in input order wins, every time.
func TestFleetDuplicatesAreResolvedInInputOrder(t *testing.T) {
	specs := t.TempDir()
	writeSpec(t, specs, "1-first.yaml", specWith("same", okScrapers+"  exposure: proxy\n"))
	writeSpec(t, specs, "2-second.yaml", specWith("same", okScrapers+"  exposure: bindAddress\n  allowInsecure: true\n"))
	var first string
	for i := 0; i < 8; i++ {
		out := filepath.Join(t.TempDir(), "out")
		code, _, stderr := run(t, "", "generate", "-f", specs, "-o", "kustomize", "--output-dir", out)
		if code != ExitInvalid || !strings.Contains(stderr, "2-second.yaml: metadata.name: cluster \"same\" is also defined in "+filepath.Join(specs, "1-first.yaml")) {
			t.Fatalf("exit %d, stderr:\n%s", code, stderr)
		}
		plan, _ := os.ReadFile(filepath.Join(out, "same", "PLAN.md"))
		if !strings.Contains(string(plan), "exposure `proxy`") {
			t.Fatalf("run %d wrote the second file's cluster", i)
		}
		stderr = strings.ReplaceAll(stderr, out, "OUT")
		if i == 0 {
			first = stderr
		} else if stderr != first {
			t.Fatalf("run %d reported differently:\n%s\nvs\n%s", i, stderr, first)
		}
	}
}

// Scrapers that stand for everybody are refused; shared identities warned.
func TestScrapersThatGrantEverybody(t *testing.T) {
	dir := t.TempDir()
	for _, s := range []string{
		"{kind: User, name: system:anonymous}",
		"{kind: Group, name: system:unauthenticated}",
		"{kind: Group, name: system:authenticated}",
		"{kind: Group, name: system:serviceaccounts}",
		"{kind: Group, name: \"system:serviceaccounts:monitoring\"}",
	} {
		in := writeSpec(t, dir, "s.yaml", specWith("c", "  scrapers:\n  - "+s+"\n"))
		for _, cmd := range []string{"generate", "validate"} {
			code, stdout, stderr := run(t, "", cmd, "-f", in)
			if code != ExitInvalid || !strings.Contains(stdout+stderr, "scrapers[0].name: Forbidden") {
				t.Errorf("%s with %s: exit %d:\n%s%s", cmd, s, code, stdout, stderr)
			}
		}
	}
	in := writeSpec(t, dir, "d.yaml", specWith("c", "  scrapers:\n  - {kind: ServiceAccount, name: default, namespace: monitoring}\n"))
	if code, _, stderr := run(t, "", "generate", "-f", in); code != ExitOK || !strings.Contains(stderr, "Warning: "+in+":18: spec.scrapers[0].name: the default ServiceAccount") {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr)
	}
}

// Identity strings are checked with the ecosystem's parsers: newlines never
// reach PLAN.md, NUL and ; never reach an image.
func TestIdentityStringsAreValidated(t *testing.T) {
	dir := t.TempDir()
	for name, metrics := range map[string]string{
		"image with ;":        okScrapers + "  images: {kubeRBACProxy: \"quay.io/brancz/kube-rbac-proxy:v0.19.1;rm\"}\n",
		"image with NUL":      okScrapers + "  images: {haproxy: \"haproxy:3.0\\0\"}\n",
		"image upper case":    okScrapers + "  images: {haproxy: \"Docker.io/HAProxy\"}\n",
		"user with a newline": "  scrapers:\n  - {kind: User, name: \"alice\\nbob\"}\n",
	} {
		in := writeSpec(t, dir, "s.yaml", specWith("c", metrics))
		if code, _, stderr := run(t, "", "generate", "-f", in); code != ExitInvalid {
			t.Errorf("%s: exit %d:\n%s", name, code, stderr)
		}
	}
	in := writeSpec(t, dir, "latest.yaml", specWith("c", okScrapers+"  images: {haproxy: \"haproxy:latest\"}\n"))
	if code, _, stderr := run(t, "", "generate", "-f", in); code != ExitOK || !strings.Contains(stderr, "spec.images.haproxy: uses the mutable tag latest") {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr)
	}
}

// generate's stream cannot carry the Deployment edits: it says so.
func TestGenerateNamesWhatOnlyApplyDoes(t *testing.T) {
	ex := filepath.Join(testutil.RepoRoot(), "examples", "vsphere-management.yaml")
	code, stdout, stderr := run(t, "", "generate", "-f", ex)
	if code != ExitOK || !strings.Contains(stderr, "cannot be expressed as objects") || !strings.Contains(stdout, "# - Deployment eksa-packages/eks-anywhere-packages (management cluster)") {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr)
	}
}

// The CAPI contract: said when defaulted, a contradiction refused.
func TestCAPIContractIsExplained(t *testing.T) {
	dir := t.TempDir()
	noVersion := writeSpec(t, dir, "a.yaml", strings.Replace(specWith("c", okScrapers), "  eksaVersion: v0.26.1\n", "", 1))
	if code, _, stderr := run(t, "", "generate", "-f", noVersion); code != ExitOK || !strings.Contains(stderr, "rendered for CAPI v1beta2 by default") {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr)
	}
	withVersion := writeSpec(t, dir, "b.yaml", specWith("c", okScrapers))
	if code, _, stderr := run(t, "", "generate", "-f", withVersion, "--capi-api-version", "v1beta1"); code != ExitInvalid || !strings.Contains(stderr, "--capi-api-version says v1beta1") {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr)
	}
}

// A misspelt kind or key gets its line and a suggestion.
func TestDidYouMean(t *testing.T) {
	dir := t.TempDir()
	in := writeSpec(t, dir, "k.yaml", strings.Replace(specWith("c", okScrapers), "kind: MetricsConfig", "kind: MetricConfig", 1))
	if code, _, stderr := run(t, "", "generate", "-f", in); code != ExitInvalid || !strings.Contains(stderr, in+`:13: kind: no metrics section found; this document has kind "MetricConfig": did you mean "MetricsConfig"?`) {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr)
	}
	inline := writeSpec(t, dir, "i.yaml", "apiVersion: anywhere.eks.amazonaws.com/v1alpha1\nkind: Cluster\nmetadata: {name: c}\nspec:\n  kubernetesVersion: \"1.34\"\n  datacenterRef: {kind: DockerDatacenterConfig, name: c}\n  metrcis:\n    scrapers: []\n")
	if code, _, stderr := run(t, "", "generate", "-f", inline); code != ExitInvalid || !strings.Contains(stderr, inline+":7: spec.metrcis: no metrics section found; did you mean spec.metrics?") {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr)
	}
}

// A cluster written as JSON with spec.metrics inline renders, and its
// cluster.yaml is the same JSON without the section.
func TestInlineJSONCluster(t *testing.T) {
	dir := t.TempDir()
	in := writeSpec(t, dir, "c.json", `{
  "apiVersion": "anywhere.eks.amazonaws.com/v1alpha1",
  "kind": "Cluster",
  "metadata": {"name": "c"},
  "spec": {
    "kubernetesVersion": "1.34",
    "eksaVersion": "v0.26.1",
    "metrics": {"scrapers": [{"kind": "ServiceAccount", "name": "p", "namespace": "monitoring"}]},
    "datacenterRef": {"kind": "DockerDatacenterConfig", "name": "c"}
  }
}
`)
	out := filepath.Join(dir, "out")
	if code, _, stderr := run(t, "", "generate", "-f", in, "-o", "kustomize", "--output-dir", out); code != ExitOK {
		t.Fatalf("exit %d:\n%s", code, stderr)
	}
	got, _ := os.ReadFile(filepath.Join(out, "cluster.yaml"))
	want := `{
  "apiVersion": "anywhere.eks.amazonaws.com/v1alpha1",
  "kind": "Cluster",
  "metadata": {"name": "c"},
  "spec": {
    "kubernetesVersion": "1.34",
    "eksaVersion": "v0.26.1",
    "datacenterRef": {"kind": "DockerDatacenterConfig", "name": "c"}
  }
}
`
	if string(got) != want {
		t.Fatalf("cluster.yaml:\n%s", got)
	}
}

// apply and verify take one -f; a second one is a usage error, not a silent
// replacement.
func TestOneSpecForApplyAndVerify(t *testing.T) {
	for _, cmd := range []string{"apply", "verify"} {
		code, _, stderr := run(t, "", cmd, "-f", "a.yaml", "-f", "b.yaml", "--kubeconfig", "k")
		if code != ExitUsage || !strings.Contains(stderr, "given twice") {
			t.Errorf("%s: exit %d:\n%s", cmd, code, stderr)
		}
	}
}

// Without --kubeconfig, apply and verify use $KUBECONFIG as kubectl does; a
// missing file there is invalid input (exit 3) that says where it came from.
func TestApplyAndVerifyReadKUBECONFIG(t *testing.T) {
	ex := filepath.Join(testutil.RepoRoot(), "examples", "docker-bindaddress.yaml")
	missing := filepath.Join(t.TempDir(), "from-env.kubeconfig")
	t.Setenv("KUBECONFIG", missing)
	for _, cmd := range []string{"apply", "verify"} {
		code, _, stderr := run(t, "", cmd, "-f", ex)
		if code != ExitInvalid || !strings.Contains(stderr, `"`+missing+`" (from $KUBECONFIG)`) {
			t.Errorf("%s: exit %d (want 3 naming $KUBECONFIG):\n%s", cmd, code, stderr)
		}
	}
}

// validate: --from must be the same cluster, and never advises deleting an
// object eksa-metrics does not own.
func TestValidateUpgradeAdvice(t *testing.T) {
	dir := t.TempDir()
	old := writeSpec(t, dir, "old.yaml", specWith("c", okScrapers+"  exposure: bindAddress\n  allowInsecure: true\n"))
	cur := writeSpec(t, dir, "new.yaml", specWith("c", okScrapers+"  exposure: proxy\n"))
	_, stdout, _ := run(t, "", "validate", "-f", cur, "--from", old)
	if strings.Contains(stdout, "delete KubeadmControlPlane") || !strings.Contains(stdout, "edit KubeadmControlPlane eksa-system/c (management cluster): eksa-metrics' extraArgs items change (EKS Anywhere owns the object and its other items)") {
		t.Fatalf("upgrade advice:\n%s", stdout)
	}
	other := writeSpec(t, dir, "other.yaml", specWith("d", okScrapers))
	code, stdout, _ := run(t, "", "validate", "-f", cur, "--from", other)
	if code != ExitInvalid || !strings.Contains(stdout, `--from is a spec of cluster "d" and -f of cluster "c"`) {
		t.Fatalf("exit %d:\n%s", code, stdout)
	}
}

// validate against an unreachable cluster still reports every offline check.
func TestValidateUnreachableClusterKeepsOfflineResults(t *testing.T) {
	dir := t.TempDir()
	kubeconfig := writeSpec(t, dir, "k", "apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: \"https://127.0.0.1:1\"}}]\nusers: [{name: u, user: {token: fake-not-a-secret}}]\ncontexts: [{name: c, context: {cluster: c, user: u}}]\ncurrent-context: c\n")
	in := writeSpec(t, dir, "s.yaml", specWith("c", okScrapers))
	code, stdout, _ := run(t, "", "validate", "-f", in, "--kubeconfig", kubeconfig, "-o", "json")
	var rep struct {
		Files []struct {
			Results []struct{ Name, Status string }
		}
		Summary map[string]int
	}
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatalf("exit %d, not JSON: %v\n%s", code, err, stdout)
	}
	status := map[string]string{}
	for _, r := range rep.Files[0].Results {
		status[r.Name] = r.Status
	}
	if code != ExitRuntime || status["spec-loads"] != "pass" || status["rbac-least-privilege"] != "pass" || status["drift"] != "error" || rep.Summary["error"] != 7 {
		t.Fatalf("exit %d, %v %v", code, status, rep.Summary)
	}
	if _, ok := rep.Summary["warn"]; !ok {
		t.Fatalf("zero counts are dropped from the JSON summary: %v", rep.Summary)
	}
}

// validate: a directory without specs fails; --strict failures show in JUnit;
// fleet totals add up.
func TestValidateReportsCountHonestly(t *testing.T) {
	empty := t.TempDir()
	writeSpec(t, empty, "kustomization.yaml", "kind: Kustomization\n")
	if code, _, stderr := run(t, "", "validate", "-f", empty); code != ExitInvalid || !strings.Contains(stderr, "no cluster spec") {
		t.Fatalf("empty directory: exit %d:\n%s", code, stderr)
	}
	dir := t.TempDir()
	warnOnly := writeSpec(t, dir, "w.yaml", specWith("w", okScrapers+"  exposure: bindAddress\n  allowInsecure: true\n"))
	code, stdout, _ := run(t, "", "validate", "-f", warnOnly, "--strict", "-o", "junit")
	var doc struct {
		Failures int `xml:"failures,attr"`
	}
	if err := xml.Unmarshal([]byte(stdout), &doc); err != nil || code != ExitInvalid || doc.Failures == 0 {
		t.Fatalf("--strict JUnit: exit %d, failures %d (%v):\n%s", code, doc.Failures, err, stdout)
	}
	writeSpec(t, dir, "ok.yaml", specWith("ok", okScrapers))
	_, stdout, _ = run(t, "", "validate", "-f", dir)
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	total := lines[len(lines)-1]
	var pass, warn, fail, skipped, errs int
	if _, err := fmt.Sscanf(total, "2 specs: %d passed, %d warnings, %d failed, %d skipped, %d could not run", &pass, &warn, &fail, &skipped, &errs); err != nil {
		t.Fatalf("totals line %q: %v", total, err)
	}
	checks := 0
	for _, l := range lines {
		var p, w, f, s, e int
		if _, err := fmt.Sscanf(l[strings.Index(l, ": ")+2:], "%d passed, %d warnings, %d failed, %d skipped, %d could not run", &p, &w, &f, &s, &e); err == nil && !strings.HasPrefix(l, "2 specs") {
			checks += p + w + f + s + e
		}
	}
	if checks != pass+warn+fail+skipped+errs || checks == 0 {
		t.Fatalf("per-file counts add up to %d, totals to %d:\n%s", checks, pass+warn+fail+skipped+errs, stdout)
	}
}

// The pull request that adopts eksa-metrics: its base has no metrics
// section, which is "nothing before" (everything is created), not invalid
// input; the JSON report lists each change as an entry a CI job can read.
func TestValidateAdoption(t *testing.T) {
	dir := t.TempDir()
	base := specWith("c", okScrapers)
	base = base[:strings.Index(base, "---\napiVersion: metrics")]
	old := writeSpec(t, dir, "base.yaml", base)
	cur := writeSpec(t, dir, "new.yaml", specWith("c", okScrapers+"  exposure: proxy\n"))
	code, stdout, stderr := run(t, "", "validate", "-f", cur, "--from", old, "-o", "json")
	if code != ExitOK {
		t.Fatalf("exit %d:\n%s\n%s", code, stdout, stderr)
	}
	var report struct {
		Files []struct {
			Results []struct {
				Name    string
				Status  string
				Message string
				Changes []struct {
					Cluster, Kind, Namespace, Name, Action, Reason string
					RollsControlPlane                              bool
				}
			}
		}
	}
	if err := json.Unmarshal([]byte(stdout), &report); err != nil {
		t.Fatal(err)
	}
	for _, r := range report.Files[0].Results {
		if r.Name != "upgrade-diff" {
			continue
		}
		if r.Status != "pass" || !strings.Contains(r.Message, "(no metrics section: nothing of eksa-metrics was applied before)") {
			t.Fatalf("upgrade-diff: %s %s", r.Status, r.Message)
		}
		created := 0
		for _, ch := range r.Changes {
			switch {
			case ch.Action == "create":
				created++
			case ch.Kind == "KubeadmControlPlane" && ch.Action == "edit" && !ch.RollsControlPlane:
			default:
				t.Errorf("adopting proxy mode on 1.34 %s %s %s/%s: %s", ch.Action, ch.Kind, ch.Namespace, ch.Name, ch.Reason)
			}
		}
		if created < 10 {
			t.Errorf("only %d objects created: %+v", created, r.Changes)
		}
		return
	}
	t.Fatalf("no upgrade-diff result:\n%s", stdout)
}

// The metrics section removed: validate --from lists the uninstall (every
// object deleted), every other check has nothing to check; apply without
// --uninstall names that flag and sends nothing.
func TestValidateAndApplyUninstall(t *testing.T) {
	dir := t.TempDir()
	old := writeSpec(t, dir, "base.yaml", specWith("c", okScrapers+"  exposure: proxy\n"))
	removed := specWith("c", okScrapers)
	removed = removed[:strings.Index(removed, "---\napiVersion: metrics")]
	cur := writeSpec(t, dir, "new.yaml", removed)
	code, stdout, stderr := run(t, "", "validate", "-f", cur, "--from", old, "-o", "json")
	if code != ExitOK {
		t.Fatalf("exit %d:\n%s\n%s", code, stdout, stderr)
	}
	var report struct {
		Files []struct {
			Results []struct {
				Name, Status, Message string
				Changes               []struct{ Kind, Namespace, Name, Action string }
			}
		}
	}
	if err := json.Unmarshal([]byte(stdout), &report); err != nil {
		t.Fatal(err)
	}
	seen := false
	for _, r := range report.Files[0].Results {
		switch {
		case r.Name == "upgrade-diff":
			seen = true
			if !strings.Contains(r.Message, "apply --uninstall") {
				t.Errorf("upgrade-diff: %s", r.Message)
			}
			deleted := 0
			for _, ch := range r.Changes {
				switch {
				case ch.Action == "delete":
					deleted++
				case ch.Kind == "KubeadmControlPlane":
				default:
					t.Errorf("uninstall: %s %s %s/%s", ch.Action, ch.Kind, ch.Namespace, ch.Name)
				}
			}
			if deleted < 10 {
				t.Errorf("only %d objects deleted: %+v", deleted, r.Changes)
			}
		case r.Name == "spec-loads" && r.Status != "pass", r.Name != "spec-loads" && r.Status == "fail":
			t.Errorf("%s: %s %s", r.Name, r.Status, r.Message)
		}
	}
	if !seen {
		t.Fatal("no upgrade-diff")
	}

	code, _, stderr = run(t, "", "apply", "-f", cur, "--kubeconfig", filepath.Join(dir, "none.kubeconfig"))
	if code != ExitUsage || !strings.Contains(stderr, "eksa-metrics apply -f "+cur+" --uninstall") {
		t.Errorf("apply of a spec without a metrics section: exit %d\n%s", code, stderr)
	}
}
