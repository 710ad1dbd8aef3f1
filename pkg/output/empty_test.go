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
	// The KubeadmControlPlane is always there, with no spec when no item is
	// needed: a GitOps tool that applied items there before gives them back,
	// and never prunes EKS Anywhere's object (its marks).
	mgmt := r.ObjectsFor(render.Management)
	if len(mgmt) != 1 || mgmt[0].Kind() != "KubeadmControlPlane" || mgmt[0].Object["spec"] != nil {
		t.Fatalf("the input renders %v to the management cluster; the test needs the KubeadmControlPlane alone, without items", mgmt)
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
	}
	for _, want := range []string{"management/kustomization.yaml", "workload/kustomization.yaml", "prometheus/kustomization.yaml", "prometheus/scrape-configs.yaml"} {
		if _, ok := files[want]; !ok {
			t.Errorf("%s is missing", want)
		}
	}
	if kcp := string(files["management/kubeadmcontrolplane-eksa-system-dev.yaml"]); !strings.Contains(kcp, "kustomize.toolkit.fluxcd.io/prune: disabled") || !strings.Contains(kcp, "argocd.argoproj.io/sync-options: Prune=false,Delete=false") {
		t.Errorf("the KubeadmControlPlane lacks the GitOps tools' do-not-prune marks:\n%s", kcp)
	}
}
