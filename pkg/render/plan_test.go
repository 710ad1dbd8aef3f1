package render_test

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
	"unicode"

	"github.com/eksa-metrics/eksa-metrics/internal/testutil"
	"github.com/eksa-metrics/eksa-metrics/pkg/spec"
	"github.com/eksa-metrics/eksa-metrics/pkg/templates"
)

// No value from the input can forge a line of PLAN.md or reorder its text:
// an osFamily (which nothing else checks) with a newline, a Markdown
// heading, U+202E RIGHT-TO-LEFT OVERRIDE and a terminal escape reaches it
// escaped, on its own line.
func TestPlanEscapesInputStrings(t *testing.T) {
	sp := filepath.Join(testutil.SharedFixtures(t), "specs", "vsphere-stacked-etcd.yaml")
	raw := fixtureWithMetrics(t, sp, "proxy")
	forged := bytes.ReplaceAll(raw, []byte("osFamily: ubuntu"), []byte(`osFamily: "ubuntu\n# forged\u202e\x1b[2J"`))
	if bytes.Equal(forged, raw) {
		t.Fatal("the fixture has no osFamily: ubuntu to replace")
	}
	plan := renderBytes(t, "c.yaml", forged, spec.Options{}).PlanMarkdown()
	for i, line := range strings.Split(plan, "\n") {
		if strings.Contains(line, "# forged") && !strings.Contains(line, `(ubuntu\n# forged\u202e\x1b[2j)`) {
			t.Errorf("line %d carries the forged text unescaped: %q", i+1, line)
		}
	}
	if !strings.Contains(plan, `provider vsphere (ubuntu\n# forged\u202e\x1b[2j), management cluster`) {
		t.Errorf("the osFamily is not in the plan, escaped:\n%s", plan)
	}
	assertPrintable(t, plan)
}

// assertPrintable: every rune of a plan is printable, or a newline.
func assertPrintable(t *testing.T, plan string) {
	t.Helper()
	for i, r := range plan {
		if r != '\n' && !unicode.IsPrint(r) {
			t.Fatalf("byte %d of the plan is %U, not printable: %q", i, r, plan[max(0, i-40):min(len(plan), i+40)])
		}
	}
}

// The plan names every image that runs, where and in which container, and
// every binding with its role and subjects.
func TestPlanNamesImagesAndSubjects(t *testing.T) {
	for _, sp := range fixtureSpecs(t) {
		for _, mode := range modes {
			r := renderBytes(t, "c.yaml", fixtureWithMetrics(t, sp, mode), spec.Options{})
			plan := r.PlanMarkdown()
			assertPrintable(t, plan)
			images := 0
			for _, o := range r.Objects {
				for _, img := range templates.Images(o.Object) {
					images++
					if !strings.Contains(plan, "- `"+img+"`: "+o.String()+", container ") {
						t.Errorf("%s/%s: image %s of %s is not in the plan", filepath.Base(sp), mode, img, o)
					}
				}
				if o.Kind() == "ClusterRoleBinding" {
					if !strings.Contains(plan, "- "+o.String()+" (") {
						t.Errorf("%s/%s: %s is not in the plan's bindings", filepath.Base(sp), mode, o)
					}
				}
			}
			for _, e := range r.DeploymentEdits {
				if e.Sidecar != nil && !strings.Contains(plan, "- `"+e.Sidecar.Image+"`: "+e.Name()+", container "+e.Sidecar.Name+" (management cluster), a sidecar") {
					t.Errorf("%s/%s: the sidecar of %s is not in the plan", filepath.Base(sp), mode, e.Name())
				}
			}
			if mode == "proxy" && (images == 0 || !strings.Contains(plan, "## Images that run")) {
				t.Errorf("%s/%s: no images in the plan", filepath.Base(sp), mode)
			}
		}
	}
	r := renderBytes(t, "c.yaml", fixtureWithMetrics(t, fixtureSpecs(t)[0], "proxy"), spec.Options{})
	if !strings.Contains(r.PlanMarkdown(), "ClusterRoleBinding eksa-metrics-reader (workload cluster): ClusterRole eksa-metrics-reader to ServiceAccount monitoring/") {
		t.Errorf("the reader binding's subjects are not in the plan:\n%s", r.PlanMarkdown())
	}
}
