package framework

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/restmapper"
)

// FieldManager is the field manager eksa-metrics applies with.
const FieldManager = "eksa-metrics"

// Apply server-side-applies objects (as rendered: plain maps) with a field
// manager, creating namespaces as needed. It returns the first error.
func (cp *ControlPlane) Apply(ctx context.Context, manager string, force bool, objs ...map[string]any) error {
	mapper := cp.Mapper()
	for _, o := range objs {
		u := &unstructured.Unstructured{Object: o}
		gvk := u.GroupVersionKind()
		res, err := cp.Resource(mapper, gvk, u.GetNamespace())
		if err != nil {
			return err
		}
		if ns := u.GetNamespace(); ns != "" {
			cp.ensureNamespace(ctx, ns)
		}
		data, err := json.Marshal(o)
		if err != nil {
			return err
		}
		if _, err := res.Patch(ctx, u.GetName(), types.ApplyPatchType, data, metav1.PatchOptions{FieldManager: manager, Force: &force}); err != nil {
			return &ApplyError{Object: gvk.Kind + " " + u.GetNamespace() + "/" + u.GetName(), Err: err}
		}
	}
	return nil
}

// Mapper maps kinds to resources by the API server's discovery.
func (cp *ControlPlane) Mapper() meta.RESTMapper {
	return restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(discovery.NewDiscoveryClientForConfigOrDie(cp.Admin)))
}

// Resource is the dynamic client of a kind, in namespace when the kind is
// namespaced.
func (cp *ControlPlane) Resource(mapper meta.RESTMapper, gvk schema.GroupVersionKind, namespace string) (dynamic.ResourceInterface, error) {
	m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return nil, err
	}
	ri := cp.Dynamic.Resource(m.Resource)
	if m.Scope.Name() == meta.RESTScopeNameNamespace {
		return ri.Namespace(namespace), nil
	}
	return ri, nil
}

// ApplyError names the object an apply failed for.
type ApplyError struct {
	Object string
	Err    error
}

func (e *ApplyError) Error() string { return "applying " + e.Object + ": " + e.Err.Error() }
func (e *ApplyError) Unwrap() error { return e.Err }

func (cp *ControlPlane) ensureNamespace(ctx context.Context, ns string) {
	gvr := schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
	obj := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": ns}}}
	_, err := cp.Dynamic.Resource(gvr).Create(ctx, obj, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		panic(err)
	}
}

// ReadYAML decodes every document of a YAML file into maps.
func ReadYAML(t testing.TB, path string) []map[string]any {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return DecodeYAML(t, raw)
}

// DecodeYAML decodes a YAML stream into maps (through JSON, so that numbers
// and nested values have the types the API machinery expects).
func DecodeYAML(t testing.TB, raw []byte) []map[string]any {
	t.Helper()
	dec := yaml.NewDecoder(bytes.NewReader(raw))
	var out []map[string]any
	for {
		var doc map[string]any
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		if doc == nil {
			continue
		}
		b, _ := json.Marshal(doc)
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		out = append(out, m)
	}
}

// InstallCRDDir installs every CRD of bin/crds/<dir>, each serving and
// storing only its storage version with no conversion (conversion webhooks
// do not run here).
func (cp *ControlPlane) InstallCRDDir(t testing.TB, dir string) {
	t.Helper()
	if err := phaseHas(filepath.Join("crds", dir)); err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(BinDir(), "crds", dir, "*.yaml"))
	if len(files) == 0 {
		if os.Getenv("EKSA_METRICS_BIN") != "" {
			t.Fatalf("no CRDs in %s: run make testbed", filepath.Join(BinDir(), "crds", dir))
		}
		t.Skip("CRDs missing: run make testbed")
	}
	for _, f := range files {
		for _, crd := range ReadYAML(t, f) {
			cp.InstallStorageVersion(t, crd)
		}
	}
}

// InstallStorageVersion installs a CRD serving only its storage version,
// without conversion, and waits until it is established.
func (cp *ControlPlane) InstallStorageVersion(t testing.TB, crd map[string]any) {
	t.Helper()
	ctx := context.Background()
	gvr := schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	spec := crd["spec"].(map[string]any)
	var keep []any
	for _, v := range spec["versions"].([]any) {
		if vm := v.(map[string]any); vm["storage"] == true {
			keep = append(keep, vm)
		}
	}
	spec["versions"] = keep
	spec["conversion"] = map[string]any{"strategy": "None"}
	data, _ := json.Marshal(crd)
	force := true
	name := crd["metadata"].(map[string]any)["name"].(string)
	if _, err := cp.Dynamic.Resource(gvr).Patch(ctx, name, types.ApplyPatchType, data, metav1.PatchOptions{FieldManager: "testbed", Force: &force}); err != nil {
		t.Fatalf("installing CRD %s: %v", name, err)
	}
	cp.waitEstablished(t, name)
}

// InstallCRDs installs the real CRDs copied from the Go modules by
// hack/fetch-crds.sh (bin/crds/<project>/). kcpVersion selects which
// KubeadmControlPlane version the CRD serves: its conversion webhook does not
// run here, so the copy serves and stores only that version.
func (cp *ControlPlane) InstallCRDs(t testing.TB, kcpVersion string) {
	t.Helper()
	ctx := context.Background()
	var files []string
	for _, dir := range []string{"cluster-api", "prometheus-operator"} {
		if err := phaseHas(filepath.Join("crds", dir)); err != nil {
			t.Fatal(err)
		}
		m, _ := filepath.Glob(filepath.Join(BinDir(), "crds", dir, "*.yaml"))
		if len(m) == 0 {
			if os.Getenv("EKSA_METRICS_BIN") != "" {
				t.Fatalf("no CRDs in %s: run make testbed", filepath.Join(BinDir(), "crds", dir))
			}
			t.Skip("CRDs missing: run make testbed")
		}
		files = append(files, m...)
	}
	gvr := schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	var names []string
	for _, f := range files {
		for _, crd := range ReadYAML(t, f) {
			spec := crd["spec"].(map[string]any)
			if spec["group"] == "controlplane.cluster.x-k8s.io" {
				var keep []any
				for _, v := range spec["versions"].([]any) {
					vm := v.(map[string]any)
					if vm["name"] == kcpVersion {
						vm["served"], vm["storage"] = true, true
						keep = append(keep, vm)
					}
				}
				if len(keep) != 1 {
					t.Fatalf("the KubeadmControlPlane CRD has no version %s", kcpVersion)
				}
				spec["versions"] = keep
				spec["conversion"] = map[string]any{"strategy": "None"}
			}
			data, _ := json.Marshal(crd)
			name := crd["metadata"].(map[string]any)["name"].(string)
			force := true
			if _, err := cp.Dynamic.Resource(gvr).Patch(ctx, name, types.ApplyPatchType, data, metav1.PatchOptions{FieldManager: "testbed", Force: &force}); err != nil {
				t.Fatalf("installing CRD %s: %v", name, err)
			}
			names = append(names, name)
		}
	}
	for _, name := range names {
		cp.waitEstablished(t, name)
	}
}

func (cp *ControlPlane) waitEstablished(t testing.TB, name string) {
	t.Helper()
	gvr := schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	WaitFor(t, "CRD "+name+" established", 30*time.Second, func() (bool, error) {
		u, err := cp.Dynamic.Resource(gvr).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
		for _, c := range conds {
			if cm := c.(map[string]any); cm["type"] == "Established" && cm["status"] == "True" {
				return true, nil
			}
		}
		return false, nil
	})
}
