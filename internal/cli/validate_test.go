package cli

import (
	"encoding/json"
	"encoding/xml"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/eksa-metrics/eksa-metrics/internal/testutil"
)

// exampleVariant writes an example with replacements into dir.
func exampleVariant(t *testing.T, dir, example, name string, edits ...[2]string) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(testutil.RepoRoot(), "examples", example+".yaml"))
	if err != nil {
		t.Fatal(err)
	}
	text := string(raw)
	for _, e := range edits {
		if !strings.Contains(text, e[0]) {
			t.Fatalf("%s no longer holds %q", example, e[0])
		}
		text = strings.ReplaceAll(text, e[0], e[1])
	}
	return writeSpec(t, dir, name, text)
}

// renderWarnings are the "Warning: " lines generate prints about the spec
// (not the one about what a stream on stdout cannot carry, which -o
// kustomize and apply carry: it says nothing about the spec).
func renderWarnings(t *testing.T, file string) []string {
	t.Helper()
	code, _, stderr := run(t, "", "generate", "-f", file)
	if code != ExitOK {
		t.Fatalf("generate -f %s: exit %d:\n%s", file, code, stderr)
	}
	var out []string
	for _, l := range strings.Split(stderr, "\n") {
		if w, ok := strings.CutPrefix(l, "Warning: "); ok && !strings.Contains(w, "eksa-metrics apply makes them") {
			out = append(out, w)
		}
	}
	return out
}

// Every warning generate prints for a spec is a warn result of a check in
// every format of validate, so --strict fails on it (exit 3).
func TestValidateStrictFailsOnEveryRenderWarning(t *testing.T) {
	dir := t.TempDir()
	mgmt := [2]string{"enabled: false   # only the cluster components in this example", "enabled: true"}
	inputs := map[string]struct{ file, want string }{
		// The Snow sidecar's plain-HTTP listener (a management component note).
		"snow": {exampleVariant(t, dir, "docker-bindaddress", "snow.yaml", [2]string{"DockerDatacenterConfig", "SnowDatacenterConfig"}, mgmt),
			"which the binary keeps serving as plain HTTP"},
		// CloudStack was removed in v0.26 (a spec without eksaVersion).
		"cloudstack": {exampleVariant(t, dir, "docker-bindaddress", "cloudstack.yaml", [2]string{"DockerDatacenterConfig", "CloudStackDatacenterConfig"}, [2]string{"  eksaVersion: v0.26.1\n", ""}, mgmt),
			"CloudStack was removed from EKS Anywhere"},
		// A management catalog newer than the releases it was checked against.
		"newer eksa": {exampleVariant(t, dir, "vsphere-management", "newer.yaml", [2]string{"eksaVersion: v0.26.1", "eksaVersion: v0.29.0"}),
			"newer than the releases the management catalog was checked against"},
		"bottlerocket": {filepath.Join(testutil.RepoRoot(), "examples", "bottlerocket-workload.yaml"), "cannot do next to EKS-A's item"},
		"docker":       {filepath.Join(testutil.RepoRoot(), "examples", "docker-bindaddress.yaml"), "a CIS 1.3.7/1.4.2 deviation"},
	}
	for name, tc := range inputs {
		t.Run(name, func(t *testing.T) {
			file := tc.file
			warnings := renderWarnings(t, file)
			if !strings.Contains(strings.Join(warnings, "\n"), tc.want) {
				t.Fatalf("generate does not warn %q for %s; the test needs it:\n%s", tc.want, file, strings.Join(warnings, "\n"))
			}
			// JSON, without and with --strict.
			for _, strict := range []bool{false, true} {
				args := []string{"validate", "-f", file, "-o", "json"}
				want, wantCode := "warn", ExitOK
				if strict {
					args, want, wantCode = append(args, "--strict"), "fail", ExitInvalid
				}
				code, stdout, stderr := run(t, "", args...)
				if code != wantCode {
					t.Fatalf("%v: exit %d, want %d:\n%s%s", args, code, wantCode, stdout, stderr)
				}
				var rep struct {
					Files []struct {
						Results []struct {
							Name, Status string
							Details      []string
						}
					}
				}
				if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
					t.Fatal(err)
				}
				for _, w := range warnings {
					found := false
					for _, r := range rep.Files[0].Results {
						found = found || r.Status == want && strings.Contains(strings.Join(r.Details, "\n"), w)
					}
					if !found {
						t.Errorf("%v: no %s result names the warning %q:\n%s", args, want, w, stdout)
					}
				}
			}
			// Text and JUnit with --strict.
			code, text, _ := run(t, "", "validate", "-f", file, "--strict")
			if code != ExitInvalid {
				t.Errorf("validate --strict (text): exit %d, want 3", code)
			}
			code, junit, _ := run(t, "", "validate", "-f", file, "--strict", "-o", "junit")
			if code != ExitInvalid {
				t.Errorf("validate --strict -o junit: exit %d, want 3", code)
			}
			var doc struct {
				Suites []struct {
					Cases []struct {
						Name    string `xml:"name,attr"`
						Failure *struct {
							Text string `xml:",chardata"`
						} `xml:"failure"`
					} `xml:"testcase"`
				} `xml:"testsuite"`
			}
			if err := xml.Unmarshal([]byte(junit), &doc); err != nil {
				t.Fatal(err)
			}
			var failures []string
			for _, s := range doc.Suites {
				for _, c := range s.Cases {
					if c.Failure != nil {
						failures = append(failures, c.Failure.Text)
					}
				}
			}
			for _, w := range warnings {
				if !strings.Contains(text, w) {
					t.Errorf("text report lacks %q", w)
				}
				if !strings.Contains(strings.Join(failures, "\n"), w) {
					t.Errorf("no JUnit failure names %q", w)
				}
			}
		})
	}
}

// --from that is missing, a directory or an invalid spec is invalid input
// (exit 3) named in the report.
func TestValidateFromMissingOrInvalid(t *testing.T) {
	dir := t.TempDir()
	good := exampleVariant(t, dir, "docker-bindaddress", "dev.yaml")
	bad := exampleVariant(t, dir, "docker-bindaddress", "base/dev.yaml", [2]string{"exposure: bindAddress", "exposure: sideways"})
	for _, tc := range []struct{ name, from, want string }{
		{"missing", filepath.Join(dir, "base", "nope.yaml"), "nope.yaml: no such file; check the --from path"},
		{"directory", filepath.Join(dir, "base"), "is a directory; --from takes one file"},
		{"invalid", bad, "spec.exposure"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, o := range []string{"text", "json", "junit"} {
				code, stdout, stderr := run(t, "", "validate", "-f", good, "--from", tc.from, "-o", o)
				if code != ExitInvalid {
					t.Errorf("-o %s: exit %d, want 3:\n%s%s", o, code, stdout, stderr)
				}
				if !strings.Contains(stdout, tc.from) || !strings.Contains(stdout, tc.want) {
					t.Errorf("-o %s: the report does not name %s (%q):\n%s", o, tc.from, tc.want, stdout)
				}
			}
		})
	}
}

// A directory eksa-metrics wrote inside a -f directory is refused with a
// usage error naming both (it used to be read as a spec: exit 3).
func TestValidateRefusesRenderedOutputInInputDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "clusters")
	exampleVariant(t, dir, "docker-bindaddress", "dev.yaml")
	out := filepath.Join(filepath.Dir(dir), "out")
	if code, _, stderr := run(t, "", "generate", "-f", dir, "-o", "kustomize", "--output-dir", out); code != ExitOK {
		t.Fatalf("generate: exit %d:\n%s", code, stderr)
	}
	// Rendered output moved under the specs (as an older eksa-metrics let it be written).
	if err := os.Rename(out, filepath.Join(dir, "rendered")); err != nil {
		t.Fatal(err)
	}
	for _, cmd := range []string{"validate", "generate"} {
		args := []string{cmd, "-f", dir}
		if cmd == "generate" {
			args = append(args, "-o", "kustomize", "--output-dir", out)
		}
		code, stdout, stderr := run(t, "", args...)
		if code != ExitUsage || stdout != "" {
			t.Errorf("%s: exit %d, want 2; stdout %q", cmd, code, stdout)
		}
		for _, want := range []string{"-f " + dir, filepath.Join(dir, "rendered", "dev"), "rendered output, not a cluster spec", "move"} {
			if !strings.Contains(stderr, want) {
				t.Errorf("%s: stderr lacks %q:\n%s", cmd, want, stderr)
			}
		}
	}
}

// spec-loads cannot be skipped: an invalid spec would pass with nothing
// checked (exit 0).
func TestValidateCannotSkipSpecLoads(t *testing.T) {
	p := filepath.Join(t.TempDir(), "c.yaml")
	if err := os.WriteFile(p, []byte("apiVersion: anywhere.eks.amazonaws.com/v1alpha1\nkind: Cluster\nmetadata: {name: c}\nspec:\n  kubernetesVersion: \"1.36.2\"\n  datacenterRef: {kind: DockerDatacenterConfig, name: c}\n  metrics:\n    scrapers: [{kind: Group, name: g}]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := run(t, "", "validate", "-f", p, "--skip", "spec-loads")
	if code != ExitUsage || !strings.Contains(stderr, "cannot be skipped") {
		t.Errorf("exit %d:\n%s", code, stderr)
	}
	if code, stdout, _ := run(t, "", "validate", "-f", p); code != ExitInvalid || !strings.Contains(stdout, `write "1.36"`) {
		t.Errorf("the spec itself: exit %d:\n%s", code, stdout)
	}
}

// -o json has one shape, versioned, for one spec and for a directory.
func TestValidateJSONHasOneShape(t *testing.T) {
	dir := t.TempDir()
	one := writeSpec(t, dir, "a.yaml", specWith("a", okScrapers))
	writeSpec(t, dir, "b.yaml", specWith("b", okScrapers))
	for _, args := range [][]string{{"-f", one}, {"-f", dir}} {
		_, stdout, _ := run(t, "", append([]string{"validate", "-o", "json"}, args...)...)
		var rep map[string]json.RawMessage
		if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
			t.Fatalf("%v: %v\n%s", args, err, stdout)
		}
		var files []struct {
			File    string
			Results []json.RawMessage
			Summary map[string]int
		}
		var version string
		_ = json.Unmarshal(rep["apiVersion"], &version)
		if err := json.Unmarshal(rep["files"], &files); err != nil || len(rep) != 3 || rep["summary"] == nil || version != "eksa-metrics.validate/v2" {
			t.Fatalf("%v: keys %v, apiVersion %q, files: %v", args, slices.Collect(maps.Keys(rep)), version, err)
		}
		want := 2
		if args[1] == one {
			want = 1
		}
		if len(files) != want || files[0].File == "" || len(files[0].Results) == 0 || files[0].Summary == nil {
			t.Fatalf("%v: %+v", args, files)
		}
	}
}

// A fleet adopts eksa-metrics cluster by cluster: in a directory, a spec
// with no metrics section yet is "not adopted" (skipped), not a failure,
// while a broken spec still fails, one -f FILE without a section still
// fails, and a directory where nothing is adopted validates nothing (exit 3).
func TestValidateFleetAdoptsGradually(t *testing.T) {
	dir := t.TempDir()
	writeSpec(t, dir, "a.yaml", specWith("a", okScrapers))
	bare := specWith("b", okScrapers)
	bare = bare[:strings.Index(bare, "\n---\n")+1]
	b := writeSpec(t, dir, "b.yaml", bare)
	code, stdout, stderr := run(t, "", "validate", "-f", dir)
	if code != ExitOK || !strings.Contains(stdout, "b.yaml: not adopted: cluster \"b\" has no metrics section yet") {
		t.Fatalf("exit %d\n%s%s", code, stdout, stderr)
	}
	if code, _, _ := run(t, "", "validate", "-f", b); code != ExitInvalid {
		t.Errorf("one -f without a metrics section: exit %d, want %d", code, ExitInvalid)
	}
	writeSpec(t, dir, "c.yaml", strings.Replace(specWith("c", okScrapers), "kubernetesVersion: \"1.34\"", "kubernetesVersion: \"1.99\"", 1))
	if code, stdout, _ := run(t, "", "validate", "-f", dir); code != ExitInvalid || !strings.Contains(stdout, "c.yaml") {
		t.Errorf("a broken spec beside an unadopted one: exit %d\n%s", code, stdout)
	}
	only := t.TempDir()
	writeSpec(t, only, "b.yaml", bare)
	if code, _, stderr := run(t, "", "validate", "-f", only); code != ExitInvalid || !strings.Contains(stderr, "no spec has a metrics section") {
		t.Errorf("nothing adopted: exit %d\n%s", code, stderr)
	}
}

// validate -f DIR --from DIR pairs each spec with its base by path, then by
// cluster name where it moved; a cluster new in the change is compared with
// nothing applied, one whose spec the change removes is a warning (--strict
// fails), one never adopted is left alone; each pair gets the verdict it
// gets given as two files.
func TestValidateFleetFromABaseTree(t *testing.T) {
	base, cur := filepath.Join(t.TempDir(), "base"), filepath.Join(t.TempDir(), "clusters")
	bind, proxy := okScrapers+"  exposure: bindAddress\n  allowInsecure: true\n", okScrapers+"  exposure: proxy\n"
	oldA := writeSpec(t, base, "a.yaml", specWith("a", bind))
	writeSpec(t, base, "old-place/b.yaml", specWith("b", proxy))
	writeSpec(t, base, "gone.yaml", specWith("g", proxy))
	bare := specWith("n", okScrapers)
	writeSpec(t, base, "never.yaml", bare[:strings.Index(bare, "\n---\n")+1])
	curA := writeSpec(t, cur, "a.yaml", specWith("a", proxy))
	writeSpec(t, cur, "moved/b.yaml", specWith("b", proxy))
	writeSpec(t, cur, "e.yaml", specWith("e", proxy))

	pairCode, pairOut, _ := run(t, "", "validate", "-f", curA, "--from", oldA)
	code, stdout, stderr := run(t, "", "validate", "-f", cur, "--from", base)
	if strings.Contains(stdout, "no --from spec to compare with") {
		t.Errorf("a spec was compared with nothing:\n%s", stdout)
	}
	if code != pairCode {
		t.Errorf("exit %d, the pair a.yaml alone %d\n%s%s\n%s", code, pairCode, stdout, stderr, pairOut)
	}
	for _, want := range []string{
		"cluster g has a spec in --from " + base + " and none in -f " + cur,
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("report lacks %q:\n%s", want, stdout)
		}
	}
	if strings.Contains(stdout, "never.yaml") {
		t.Errorf("a cluster never adopted is reported:\n%s", stdout)
	}
	_, js, _ := run(t, "", "validate", "-f", cur, "--from", base, "-o", "json")
	for _, want := range []string{filepath.Join(base, "old-place/b.yaml"), oldA, "new in --from's tree"} {
		if !strings.Contains(js, want) {
			t.Errorf("no upgrade-diff with %s:\n%s", want, js)
		}
	}
	if code, _, _ := run(t, "", "validate", "-f", cur, "--from", base, "--strict"); code != ExitInvalid {
		t.Errorf("--strict with a removed spec: exit %d, want %d", code, ExitInvalid)
	}
	if code, _, stderr := run(t, "", "validate", "-f", cur, "--from", oldA); code != ExitUsage || !strings.Contains(stderr, "must be one too") {
		t.Errorf("-f DIR --from FILE: exit %d\n%s", code, stderr)
	}
}

// --from names one base: a second one is an error, not a silent choice.
func TestValidateFromGivenTwice(t *testing.T) {
	dir := t.TempDir()
	a := writeSpec(t, dir, "a.yaml", specWith("a", okScrapers))
	b := writeSpec(t, dir, "b.yaml", specWith("a", okScrapers))
	if code, _, stderr := run(t, "", "validate", "-f", a, "--from", b, "--from", a); code != ExitUsage || !strings.Contains(stderr, "given twice") {
		t.Errorf("exit %d\n%s", code, stderr)
	}
}

// A directory with no spec fails, and -o json and -o junit still write a
// report with the failed case, which CI publishes.
func TestValidateEmptyDirectoryWritesAFailedReport(t *testing.T) {
	dir := t.TempDir()
	for _, o := range []string{"json", "junit"} {
		code, stdout, stderr := run(t, "", "validate", "-f", dir, "-o", o)
		if code != ExitInvalid || !strings.Contains(stdout, "no cluster spec") || !strings.Contains(stderr, "no cluster spec") {
			t.Errorf("-o %s: exit %d\nstdout: %s\nstderr: %s", o, code, stdout, stderr)
		}
	}
	if _, js, _ := run(t, "", "validate", "-f", dir, "-o", "json"); !strings.Contains(js, `"fail": 1`) {
		t.Errorf("the JSON report counts no failure:\n%s", js)
	}
	if _, x, _ := run(t, "", "validate", "-f", dir, "-o", "junit"); !strings.Contains(x, "<failure") {
		t.Errorf("the JUnit report has no failed case:\n%s", x)
	}
}

// generate -f EMPTYDIR says that it found no spec, whatever -o.
func TestGenerateEmptyDirectory(t *testing.T) {
	dir := t.TempDir()
	for _, args := range [][]string{{"-o", "yaml"}, {"-o", "kustomize", "--output-dir", filepath.Join(t.TempDir(), "out")}} {
		code, _, stderr := run(t, "", append([]string{"generate", "-f", dir}, args...)...)
		if code != ExitInvalid || !strings.Contains(stderr, "no cluster spec") || strings.Contains(stderr, "several specs") {
			t.Errorf("%v: exit %d\n%s", args, code, stderr)
		}
	}
}

// Turning tls.kubeletServingCertificates on or off makes EKS Anywhere
// replace every machine (the cluster.yaml edit): a warning with the order
// in every output format, which --strict fails.
func TestValidateMachineReplacementIsAWarning(t *testing.T) {
	dir := t.TempDir()
	block := func(s string) string {
		// A self-managed cluster: a workload cluster's approver needs the
		// controller, which publishes its Machines.
		s = strings.Replace(s, "managementCluster: {name: mgmt}", "managementCluster: {name: k}", 1)
		return strings.Replace(s, "controlPlaneConfiguration: {count: 1}", "controlPlaneConfiguration:\n    count: 1", 1)
	}
	off := writeSpec(t, dir, "off.yaml", block(specWith("k", okScrapers)))
	on := writeSpec(t, dir, "on.yaml", block(specWith("k", okScrapers+"  images: {eksaMetrics: registry.example.com/eksa-metrics:v1}\n  tls: {kubeletServingCertificates: true}\n")))
	for _, tc := range []struct{ cur, old, order string }{{on, off, "apply first"}, {off, on, "upgrade the cluster with it before this apply"}} {
		for _, o := range []string{"text", "json", "junit"} {
			_, stdout, stderr := run(t, "", "validate", "-f", tc.cur, "--from", tc.old, "-o", o)
			if !strings.Contains(stdout, "replaces every machine") || !strings.Contains(stdout, tc.order) {
				t.Errorf("%s from %s, -o %s: no warning with the order %q\n%s%s", tc.cur, tc.old, o, tc.order, stdout, stderr)
			}
		}
		if code, stdout, _ := run(t, "", "validate", "-f", tc.cur, "--from", tc.old, "--strict"); code != ExitInvalid {
			t.Errorf("--strict: exit %d, want %d\n%s", code, ExitInvalid, stdout)
		}
	}
}

// A -f spec that does not load beside a --from that does: upgrade-diff is
// skipped, not a crash.
func TestValidateUnloadableSpecWithFrom(t *testing.T) {
	dir := t.TempDir()
	old := writeSpec(t, dir, "old.yaml", specWith("k", okScrapers))
	cur := writeSpec(t, dir, "cur.yaml", specWith("k", okScrapers+"  tls: {kubeletServingCertificates: true}\n  images: {eksaMetrics: registry.example.com/e:v1}\n"))
	code, stdout, stderr := run(t, "", "validate", "-f", cur, "--from", old)
	if code != ExitInvalid || !strings.Contains(stdout, "upgrade-diff: the spec does not load") {
		t.Errorf("exit %d\n%s%s", code, stdout, stderr)
	}
}
