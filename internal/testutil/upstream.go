package testutil

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"go.yaml.in/yaml/v3"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// clusterctlVariable is a clusterctl template variable: ${NAME}, ${NAME=default}
// or ${NAME:=default}.
var clusterctlVariable = regexp.MustCompile(`\$\{[A-Za-z_][A-Za-z0-9_]*(?::?=([^}]*))?\}`)

// UpstreamManifest reads one of the real upstream manifests of the EKS-A
// management components (../shared/fixtures/eksa/manifests/upstream/<name>)
// as a management cluster holds it: clusterctl's template variables replaced
// by their defaults, as clusterctl does when EKS-A installs a provider with
// no variables set (a variable without a default, which EKS-A always sets,
// stays as text). Documents come back in file order.
func UpstreamManifest(t testing.TB, name string) []map[string]any {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(SharedFixtures(t), "manifests", "upstream", name))
	if err != nil {
		t.Fatal(err)
	}
	raw = clusterctlVariable.ReplaceAllFunc(raw, func(v []byte) []byte {
		if !bytes.Contains(v, []byte("=")) {
			return v // no default: EKS-A sets it (the Snow image); kept as text
		}
		return clusterctlVariable.FindSubmatch(v)[1]
	})
	var docs []map[string]any
	dec := yaml.NewDecoder(bytes.NewReader(raw))
	for {
		var doc map[string]any
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			return docs
		}
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if doc != nil {
			docs = append(docs, doc)
		}
	}
}

// UpstreamDeployment returns the Deployment namespace/name of a manifest, typed.
func UpstreamDeployment(t testing.TB, docs []map[string]any, namespace, name string) *appsv1.Deployment {
	t.Helper()
	for _, doc := range docs {
		md, _ := doc["metadata"].(map[string]any)
		if doc["kind"] == "Deployment" && md["namespace"] == namespace && md["name"] == name {
			var d appsv1.Deployment
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(doc, &d); err != nil {
				t.Fatalf("Deployment %s/%s: %v", namespace, name, err)
			}
			return &d
		}
	}
	return nil
}
