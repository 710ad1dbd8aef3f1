package output_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"testing"

	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/eksa-metrics/eksa-metrics/internal/testutil"
	"github.com/eksa-metrics/eksa-metrics/pkg/output"
	"github.com/eksa-metrics/eksa-metrics/pkg/render"
	"github.com/eksa-metrics/eksa-metrics/pkg/spec"
)

func normalize(t *testing.T, v any) map[string]any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out map[string]any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// The kustomize directory builds, with kustomize's own krusty, to exactly the
// objects of -o yaml.
func TestKustomizeBuildsToTheSameObjects(t *testing.T) {
	inputs, _ := filepath.Glob(filepath.Join(testutil.RepoRoot(), "examples", "*.yaml"))
	if len(inputs) == 0 {
		t.Fatal("no examples")
	}
	for _, in := range inputs {
		t.Run(filepath.Base(in), func(t *testing.T) {
			raw, err := os.ReadFile(in)
			if err != nil {
				t.Fatal(err)
			}
			f, err := spec.Load(in, bytes.NewReader(raw))
			if err != nil {
				t.Fatal(err)
			}
			r, err := render.RenderFile(f, spec.Options{})
			if err != nil {
				t.Fatal(err)
			}
			files, err := output.Files(r)
			if err != nil {
				t.Fatal(err)
			}
			fs := filesys.MakeFsInMemory()
			for name, data := range files {
				if err := fs.WriteFile(path.Join("/out", name), data); err != nil {
					t.Fatal(err)
				}
			}
			want := map[string]map[string]any{}
			for _, o := range r.Objects {
				want[string(o.Destination)+"|"+o.String()] = normalize(t, o.Object)
			}
			got := map[string]map[string]any{}
			k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())
			for _, target := range render.Destinations {
				if _, ok := files[string(target)+"/kustomization.yaml"]; !ok {
					continue // nothing to apply there; a lost object shows in the count below
				}
				resMap, err := k.Run(fs, path.Join("/out", string(target)))
				if err != nil {
					t.Fatalf("kustomize build %s/: %v", target, err)
				}
				for _, res := range resMap.Resources() {
					m, err := res.Map()
					if err != nil {
						t.Fatal(err)
					}
					o := render.Object{Destination: target, Object: m}
					got[string(target)+"|"+o.String()] = normalize(t, m)
				}
			}
			if len(got) != len(want) {
				t.Errorf("kustomize built %d objects, -o yaml has %d", len(got), len(want))
			}
			for key, w := range want {
				if g, ok := got[key]; !ok {
					t.Errorf("missing from the kustomize build: %s", key)
				} else if !reflect.DeepEqual(g, w) {
					gj, _ := json.MarshalIndent(g, "", " ")
					wj, _ := json.MarshalIndent(w, "", " ")
					t.Errorf("%s differs:\nkustomize: %s\n-o yaml: %s", key, gj, wj)
				}
			}
		})
	}
}
