package output_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/eksa-metrics/eksa-metrics/internal/testutil"
	"github.com/eksa-metrics/eksa-metrics/pkg/output"
	"github.com/eksa-metrics/eksa-metrics/pkg/render"
	"github.com/eksa-metrics/eksa-metrics/pkg/spec"
)

// A destination with nothing to apply gets no kustomization (an empty
// resource list), and no file of the directory is empty. The Docker example
// with proxy exposure and no z-pages changes nothing on the management
// cluster: no KubeadmControlPlane item, no management component.
func TestKustomizeLeavesOutEmptyParts(t *testing.T) {
	path := filepath.Join(testutil.RepoRoot(), "examples", "docker-bindaddress.yaml")
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	text := string(raw)
	for _, e := range [][2]string{
		{"exposure: bindAddress", "exposure: proxy"},
		{"allowInsecure: true", "allowInsecure: false"},
		{"  zPages:\n    statusz: true\n    flagz: true\n", ""},
	} {
		if !strings.Contains(text, e[0]) {
			t.Fatalf("the example no longer holds %q", e[0])
		}
		text = strings.Replace(text, e[0], e[1], 1)
	}
	f, err := spec.Load(path, strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	r, err := render.RenderFile(f, spec.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(r.ObjectsFor(render.Management)); n != 0 {
		t.Fatalf("the input renders %d management objects; the test needs none", n)
	}
	files, err := output.Files(r)
	if err != nil {
		t.Fatal(err)
	}
	for name, b := range files {
		if len(bytes.TrimSpace(b)) == 0 {
			t.Errorf("%s is empty", name)
		}
		if bytes.Contains(b, []byte("resources: []")) {
			t.Errorf("%s has an empty resource list:\n%s", name, b)
		}
		if strings.HasPrefix(name, string(render.Management)+"/") {
			t.Errorf("%s is written, but nothing goes to the management cluster", name)
		}
	}
	for _, want := range []string{"workload/kustomization.yaml", "prometheus/kustomization.yaml", "prometheus/scrape-configs.yaml"} {
		if _, ok := files[want]; !ok {
			t.Errorf("%s is missing", want)
		}
	}
	if plan := string(files["PLAN.md"]); strings.Contains(plan, "-k management/") {
		t.Errorf("PLAN.md tells to apply management/, which is not written")
	}
}
