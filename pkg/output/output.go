// Package output writes a render result as a YAML stream, a JSON List, or a
// kustomize directory (written atomically).
package output

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"sort"
	"strings"

	yamlv2 "go.yaml.in/yaml/v2"

	"github.com/eksa-metrics/eksa-metrics/pkg/render"
	"github.com/eksa-metrics/eksa-metrics/pkg/templates"
)

// WriteYAML writes every object as one YAML stream, each document headed by
// a comment naming the cluster it is for.
func WriteYAML(w io.Writer, r *render.Result) error {
	var buf bytes.Buffer
	if edits := r.ApplyOnly(); len(edits) > 0 {
		buf.WriteString("# eksa-metrics: these changes are not objects and are not in this stream; eksa-metrics apply makes them:\n")
		for _, e := range edits {
			fmt.Fprintf(&buf, "# - %s\n", e)
		}
	}
	for i, o := range r.Objects {
		if i > 0 {
			buf.WriteString("---\n")
		}
		fmt.Fprintf(&buf, "# eksa-metrics: %s\n", targetNote(o.Destination))
		b, err := marshal(o.Object)
		if err != nil {
			return fmt.Errorf("encoding %s: %w", o, err)
		}
		buf.Write(b)
	}
	_, err := w.Write(buf.Bytes())
	return err
}

func targetNote(t render.Destination) string {
	switch t {
	case render.Management:
		return "apply to the management cluster"
	case render.Prometheus:
		return "scrape configuration; apply where Prometheus runs (the workload cluster)"
	}
	return "apply to the workload cluster"
}

// WriteJSON writes every object in one v1 List.
func WriteJSON(w io.Writer, r *render.Result) error {
	items := make([]templates.Object, len(r.Objects))
	for i, o := range r.Objects {
		items[i] = o.Object
	}
	b, err := json.MarshalIndent(map[string]any{"apiVersion": "v1", "kind": "List", "items": items}, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding JSON: %w", err)
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// Files lays the result out as the kustomize directory of `-o kustomize`:
// cluster.yaml, PLAN.md, and management/, workload/ and prometheus/ each with
// a kustomization.yaml; a destination with nothing to apply is left out (no
// empty kustomization). Paths are relative and slash-separated.
func Files(r *render.Result) (map[string][]byte, error) {
	files := map[string][]byte{
		"cluster.yaml": r.ClusterYAML,
		"PLAN.md":      []byte(r.PlanMarkdown()),
	}
	for name, content := range r.Files {
		files[string(render.Prometheus)+"/"+name] = content
	}
	for name, content := range r.Dashboards {
		files[string(render.Prometheus)+"/dashboards/"+name] = content
	}
	for _, t := range render.Destinations {
		var resources []string
		kust := map[string]any{"apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization"}
		for _, o := range r.ObjectsFor(t) {
			if t == render.Prometheus && o.Kind() == "ConfigMap" && o.Name() == templates.ScrapeConfigMap {
				// Kept as plain Prometheus files too (the scrape jobs, the
				// rules), generated into the ConfigMap.
				data, _ := o.Object["data"].(map[string]any)
				var keys []any
				for _, k := range slices.Sorted(maps.Keys(data)) {
					content, _ := data[k].(string)
					files[string(t)+"/"+k] = []byte(content)
					keys = append(keys, k)
				}
				md, _ := o.Object["metadata"].(map[string]any)
				kust["configMapGenerator"] = []any{map[string]any{
					"name":      o.Name(),
					"namespace": o.Namespace(),
					"files":     keys,
					"options":   map[string]any{"disableNameSuffixHash": true, "labels": md["labels"]},
				}}
				continue
			}
			name := fileName(o)
			b, err := marshal(o.Object)
			if err != nil {
				return nil, fmt.Errorf("encoding %s: %w", o, err)
			}
			files[string(t)+"/"+name] = b
			resources = append(resources, name)
		}
		if len(resources) == 0 && kust["configMapGenerator"] == nil {
			// Nothing to apply there: no empty kustomization (PLAN.md leaves
			// the destination out too).
			continue
		}
		sort.Strings(resources)
		if len(resources) > 0 {
			kust["resources"] = resources
		}
		b, err := marshal(kust)
		if err != nil {
			return nil, err
		}
		header := fmt.Sprintf("# Rendered by eksa-metrics: %s.\n# kubectl apply --server-side --field-manager=eksa-metrics -k %s/\n", targetNote(t), t)
		files[string(t)+"/kustomization.yaml"] = append([]byte(header), b...)
	}
	return files, nil
}

// marshal encodes a rendered object. The objects are already plain JSON
// shapes, so yaml.v2 encodes them directly: the same bytes as
// sigs.k8s.io/yaml, which first goes through JSON and back, at a fraction of
// the cost (the profile's largest item in generate).
func marshal(obj map[string]any) ([]byte, error) {
	return yamlv2.Marshal(obj)
}

// fileName is "<kind>-<namespace>-<name>.yaml" in lower case, safe for any file system.
func fileName(o render.Object) string {
	parts := []string{strings.ToLower(o.Kind())}
	if ns := o.Namespace(); ns != "" {
		parts = append(parts, ns)
	}
	parts = append(parts, o.Name())
	name := strings.Join(parts, "-")
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r == '.' {
			return r
		}
		return '-'
	}, name) + ".yaml"
}
