// Package integration checks what generate renders against a real
// kube-apiserver and etcd with the real CRDs (Cluster API's
// KubeadmControlPlane, prometheus-operator's ServiceMonitor and PodMonitor).
package integration

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/eksa-metrics/eksa-metrics/internal/testutil"
	"github.com/eksa-metrics/eksa-metrics/pkg/kubeadm"
	"github.com/eksa-metrics/eksa-metrics/pkg/render"
	"github.com/eksa-metrics/eksa-metrics/pkg/spec"
	"github.com/eksa-metrics/eksa-metrics/test/framework"
)

// kubeVersion is the newest Kubernetes version of the test bed.
var kubeVersion = testutil.KubeVersions[0]

var kcpGVR = func(v string) schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: "controlplane.cluster.x-k8s.io", Version: v, Resource: "kubeadmcontrolplanes"}
}

// renderFixture renders a shared EKS-A spec with a metrics section.
func renderFixture(t *testing.T, specName, metrics string, opts spec.Options) *render.Result {
	t.Helper()
	doc := testutil.WithMetrics(t, filepath.Join(testutil.SharedFixtures(t), "specs", specName+".yaml"), metrics)
	f, err := spec.Load(specName+".yaml", strings.NewReader(doc))
	if err != nil {
		t.Fatal(err)
	}
	r, err := render.RenderFile(f, opts)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// eksaKCP reads the KubeadmControlPlane EKS-A renders for a fixture.
func eksaKCP(t testing.TB, rendered, version string) map[string]any {
	t.Helper()
	for _, doc := range framework.ReadYAML(t, filepath.Join(testutil.SharedFixtures(t), "rendered", rendered+".yaml")) {
		if doc["kind"] == "KubeadmControlPlane" {
			doc["apiVersion"] = "controlplane.cluster.x-k8s.io/" + version // the v1beta1 fixture omits it
			return sanitize(doc).(map[string]any)
		}
	}
	t.Fatalf("%s: no KubeadmControlPlane", rendered)
	return nil
}

// sanitize makes an EKS-A test fixture acceptable to the upstream CRD: the
// fixtures keep template placeholders ("<no value>") and EKS-A's fork adds
// Bottlerocket settings that upstream Cluster API does not declare. Neither
// touches extraArgs.
func sanitize(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for _, fork := range []string{"bottlerocket", "bottlerocketBootstrap", "bottlerocketAdmin", "bottlerocketControl",
			"bottlerocketCustomHostContainers", "bottlerocketCustomBootstrapContainers", "pause", "proxy", "registryMirror", "certBundles"} {
			delete(x, fork)
		}
		for k, val := range x {
			if val == nil {
				delete(x, k) // "value: null" in the fixtures' taints
				continue
			}
			x[k] = sanitize(val)
		}
	case []any:
		for i, val := range x {
			x[i] = sanitize(val)
		}
	case string:
		switch x {
		case "<no value>":
			return "placeholder"
		case "bottlerocket": // the fork's kubeadmConfigSpec.format
			return "cloud-config"
		}
	}
	return v
}

const bindAddressMetrics = `  scrapers:
  - {kind: ServiceAccount, name: prometheus-k8s, namespace: monitoring}
  - {kind: Group, name: "platform:metrics"}
  exposure: bindAddress
  allowInsecure: true
  zPages: {statusz: true, flagz: true}
  components: {etcd: {metricsLevel: extensive}}
  tls: {minVersion: VersionTLS13}
`

// Every object generate renders is accepted by a real API server with the
// real CRDs (schemas, CEL rules), for both CAPI contracts; the eksa-metrics
// items survive EKS-A's own forced server-side apply of the
// KubeadmControlPlane, as on every reconcile and upgrade.
func TestRenderedObjectsApplyAndSurviveEKSAReconcile(t *testing.T) {
	cases := map[string][]struct{ spec, rendered string }{
		spec.CAPIv1beta2: {
			{"docker", "docker.v1beta2"},
			{"tinkerbell-stacked-etcd", "tinkerbell.v1beta2"},
			{"nutanix", "nutanix.v1beta2"},
			{"vsphere-bottlerocket", "vsphere-bottlerocket.v1beta2"},
			{"vsphere-external-etcd", "vsphere-external-etcd.v1beta2"},
		},
		spec.CAPIv1beta1: {
			{"vsphere-external-etcd", "vsphere-external-etcd.v1beta1"},
		},
	}
	for _, capi := range []string{spec.CAPIv1beta2, spec.CAPIv1beta1} {
		t.Run(capi, func(t *testing.T) {
			// One API server per contract: a CRD cannot go back to another storage version.
			cp := framework.StartControlPlane(t, framework.ControlPlaneOptions{Version: kubeVersion})
			cp.InstallCRDs(t, capi)
			for _, tc := range cases[capi] {
				t.Run(tc.rendered, func(t *testing.T) { applyAndReconcile(t, cp, tc.spec, tc.rendered, capi) })
			}
		})
	}
}

func applyAndReconcile(t *testing.T, cp *framework.ControlPlane, specName, rendered, capi string) {
	ctx := context.Background()
	eksa := eksaKCP(t, rendered, capi)
	name := eksa["metadata"].(map[string]any)["name"].(string)
	_ = cp.Dynamic.Resource(kcpGVR(capi)).Namespace("eksa-system").Delete(ctx, name, metav1.DeleteOptions{})
	if err := cp.Apply(ctx, "eks-a-controller", true, eksa); err != nil {
		t.Fatalf("EKS-A's own object: %v", err)
	}
	r := renderFixture(t, specName, bindAddressMetrics, spec.Options{CAPIAPIVersion: capi})
	if r.Change.Empty() {
		t.Fatal("bindAddress rendered no KubeadmControlPlane change")
	}
	var objs []map[string]any
	for _, o := range r.Objects {
		objs = append(objs, o.Object)
	}
	if err := cp.Apply(ctx, framework.FieldManager, false, objs...); err != nil {
		t.Fatalf("the API server refused a rendered object: %v", err)
	}
	// EKS-A reconciles: forced apply of its full object again.
	if err := cp.Apply(ctx, "eks-a-controller", true, eksa); err != nil {
		t.Fatalf("EKS-A's re-apply was refused after eksa-metrics applied (CEL uniqueness?): %v", err)
	}
	live, err := cp.Dynamic.Resource(kcpGVR(capi)).Namespace("eksa-system").Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range r.Change.Items {
		got := liveArgs(t, live, it.Component.Path())
		if got[it.Name] != it.Value {
			t.Errorf("%s --%s: live %q after EKS-A's reconcile, want %q", it.Component, it.Name, got[it.Name], it.Value)
		}
	}
}

// liveArgs reads extraArgs of either shape, failing on a duplicate name.
func liveArgs(t *testing.T, obj *unstructured.Unstructured, path []string) map[string]string {
	t.Helper()
	full := append([]string{"spec", "kubeadmConfigSpec", "clusterConfiguration"}, path...)
	v, _, _ := unstructured.NestedFieldNoCopy(obj.Object, full...)
	out := map[string]string{}
	switch x := v.(type) {
	case []any:
		for _, item := range x {
			m := item.(map[string]any)
			n := m["name"].(string)
			if _, dup := out[n]; dup {
				t.Errorf("live extraArgs %s has %q twice", strings.Join(path, "."), n)
			}
			out[n], _ = m["value"].(string)
		}
	case map[string]any:
		for k, val := range x {
			out[k], _ = val.(string)
		}
	}
	return out
}

// In v1beta2 an extraArgs item is keyed by name AND value. EKS-A renders
// feature-gates=KMSv1=true when etcd encryption is on; an item with the same
// name and a merged value is a different item to server-side apply, and the
// CRD's uniqueness rule refuses the pair. This pins that fact, and that the
// object generate renders for such a cluster (which leaves the merged item
// out) applies next to EKS-A's item and survives EKS-A's re-apply.
func TestMergedFeatureGatesCannotBeServerSideApplied(t *testing.T) {
	ctx := context.Background()
	cp := framework.StartControlPlane(t, framework.ControlPlaneOptions{Version: kubeVersion})
	cp.InstallCRDs(t, spec.CAPIv1beta2)
	eksa := eksaKCP(t, "vsphere-bottlerocket.v1beta2", spec.CAPIv1beta2)
	api := eksa["spec"].(map[string]any)["kubeadmConfigSpec"].(map[string]any)["clusterConfiguration"].(map[string]any)["apiServer"].(map[string]any)
	api["extraArgs"] = append(api["extraArgs"].([]any), map[string]any{"name": "feature-gates", "value": "KMSv1=true"})
	if err := cp.Apply(ctx, "eks-a-controller", true, eksa); err != nil {
		t.Fatal(err)
	}
	example, err := os.ReadFile(filepath.Join(testutil.RepoRoot(), "examples", "bottlerocket-workload.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	f, err := spec.Load("bottlerocket-workload.yaml", bytes.NewReader(bytes.ReplaceAll(example, []byte("store-042"), []byte("test"))))
	if err != nil {
		t.Fatal(err)
	}
	r, err := render.RenderFile(f, spec.Options{})
	if err != nil {
		t.Fatal(err)
	}
	merged := r.Change.Args(kubeadm.APIServer)
	if v, _ := merged.Get("feature-gates"); v != "ComponentFlagz=true,ComponentStatusz=true,KMSv1=true" {
		t.Fatalf("the example should merge the apiserver gates, got %q", v)
	}
	withMerged := map[string]any{
		"apiVersion": "controlplane.cluster.x-k8s.io/v1beta2", "kind": "KubeadmControlPlane",
		"metadata": map[string]any{"name": "test", "namespace": "eksa-system"},
		"spec": map[string]any{"kubeadmConfigSpec": map[string]any{"clusterConfiguration": map[string]any{"apiServer": map[string]any{
			"extraArgs": []any{map[string]any{"name": "feature-gates", "value": "ComponentFlagz=true,ComponentStatusz=true,KMSv1=true"}}}}}},
	}
	err = cp.Apply(ctx, framework.FieldManager, false, withMerged)
	if err == nil || !strings.Contains(err.Error(), "must be unique") {
		t.Fatalf("want the API server to refuse a second feature-gates item, got %v", err)
	}
	if err := cp.Apply(ctx, framework.FieldManager, false, r.Change.Object()); err != nil {
		t.Fatalf("generate's object for this cluster: %v", err)
	}
	if err := cp.Apply(ctx, "eks-a-controller", true, eksa); err != nil {
		t.Fatalf("EKS-A's re-apply: %v", err)
	}
}
