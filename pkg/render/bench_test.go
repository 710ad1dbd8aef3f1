package render_test

import (
	"bytes"
	"path"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/eksa-metrics/eksa-metrics/pkg/output"
	"github.com/eksa-metrics/eksa-metrics/pkg/render"
	"github.com/eksa-metrics/eksa-metrics/pkg/spec"
)

// BenchmarkRender loads and renders each shared fixture, in both modes, to
// the YAML stream: the whole of generate but the process start.
func BenchmarkRender(b *testing.B) {
	for _, sp := range fixtureSpecs(b) {
		base := strings.TrimSuffix(filepath.Base(sp), ".yaml")
		for _, mode := range modes {
			data := fixtureWithMetrics(b, sp, mode)
			b.Run(base+"/"+mode, func(b *testing.B) {
				b.ReportAllocs()
				var buf bytes.Buffer
				for i := 0; i < b.N; i++ {
					f, err := spec.Load("c.yaml", bytes.NewReader(data))
					if err != nil {
						b.Fatal(err)
					}
					r, err := render.RenderFile(f, spec.Options{})
					if err != nil {
						b.Fatal(err)
					}
					buf.Reset()
					if err := output.WriteYAML(&buf, r); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkLoadRender is loading and rendering alone, without encoding.
func BenchmarkLoadRender(b *testing.B) {
	for _, sp := range fixtureSpecs(b)[:2] {
		data := fixtureWithMetrics(b, sp, "proxy")
		b.Run(strings.TrimSuffix(filepath.Base(sp), ".yaml"), func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				f, err := spec.Load("c.yaml", bytes.NewReader(data))
				if err != nil {
					b.Fatal(err)
				}
				if _, err := render.RenderFile(f, spec.Options{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkKustomizeBuild builds the -o kustomize directory of one fixture
// with kustomize's own krusty (what kubectl kustomize runs), to compare with
// BenchmarkRender producing the same objects.
func BenchmarkKustomizeBuild(b *testing.B) {
	sp := fixtureSpecs(b)[0]
	f, _ := spec.Load("c.yaml", bytes.NewReader(fixtureWithMetrics(b, sp, "proxy")))
	r, err := render.RenderFile(f, spec.Options{})
	if err != nil {
		b.Fatal(err)
	}
	files, _ := output.Files(r)
	fs := filesys.MakeFsInMemory()
	for name, data := range files {
		_ = fs.WriteFile(path.Join("/out", name), data)
	}
	k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		for _, t := range render.Destinations {
			if _, err := k.Run(fs, path.Join("/out", string(t))); err != nil {
				b.Fatal(err)
			}
		}
	}
}
