package kubeadm_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	metricsv1alpha1 "github.com/eksa-metrics/eksa-metrics/pkg/apis/metrics/v1alpha1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"go.yaml.in/yaml/v3"
	kcpv1beta1 "sigs.k8s.io/cluster-api/api/controlplane/kubeadm/v1beta1"
	kcpv1beta2 "sigs.k8s.io/cluster-api/api/controlplane/kubeadm/v1beta2"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/eksa-metrics/eksa-metrics/internal/testutil"
	"github.com/eksa-metrics/eksa-metrics/pkg/kubeadm"
	"github.com/eksa-metrics/eksa-metrics/pkg/spec"
)

// renderedKCP reads the KubeadmControlPlane document of an EKS-A rendered file.
func renderedKCP(t *testing.T, path string) map[string]any {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(raw))
	for {
		var doc map[string]any
		if err := dec.Decode(&doc); err != nil {
			t.Fatalf("%s: no KubeadmControlPlane: %v", path, err)
		}
		if doc["kind"] == "KubeadmControlPlane" {
			// Through JSON, so that values are the types the API machinery uses.
			b, _ := json.Marshal(doc)
			var out map[string]any
			if err := json.Unmarshal(b, &out); err != nil {
				t.Fatal(err)
			}
			return out
		}
	}
}

func config(t *testing.T, specPath string, exposure metricsv1alpha1.Exposure, capi string) *spec.Config {
	t.Helper()
	doc := testutil.WithMetrics(t, specPath, "  scrapers: [{kind: Group, name: g}]\n  exposure: "+string(exposure)+"\n  allowInsecure: true\n  zPages: {statusz: true, flagz: true}\n  components: {etcd: {metricsLevel: extensive}}\n")
	f, err := spec.Load("c.yaml", strings.NewReader(doc))
	if err != nil {
		t.Fatal(err)
	}
	c := spec.Default(f.Input(), spec.Options{CAPIAPIVersion: capi})
	if errs := spec.Validate(f.Input(), c, spec.Options{CAPIAPIVersion: capi}).Errors(); len(errs) > 0 {
		err := &spec.FieldError{Issues: errs}
		t.Fatal(err)
	}
	return c
}

// The change merged into what EKS-A renders for the same spec: v1beta2 lists
// keep unique names, v1beta1 keeps maps, and the result decodes into the
// Cluster API types of that contract.
func TestMergeIntoEKSARenderedKCP(t *testing.T) {
	dir := testutil.SharedFixtures(t)
	pairs := []struct{ spec, rendered, capi string }{
		{"vsphere-external-etcd", "vsphere-external-etcd.v1beta1", spec.CAPIv1beta1},
		{"vsphere-external-etcd", "vsphere-external-etcd.v1beta2", spec.CAPIv1beta2},
		{"vsphere-bottlerocket", "vsphere-bottlerocket.v1beta2", spec.CAPIv1beta2},
		{"docker", "docker.v1beta2", spec.CAPIv1beta2},
		{"tinkerbell-stacked-etcd", "tinkerbell.v1beta2", spec.CAPIv1beta2},
		{"nutanix", "nutanix.v1beta2", spec.CAPIv1beta2},
	}
	for _, p := range pairs {
		for _, mode := range []metricsv1alpha1.Exposure{metricsv1alpha1.ExposureBindAddress, metricsv1alpha1.ExposureProxy} {
			t.Run(p.rendered+"/"+string(mode), func(t *testing.T) {
				cfg := config(t, filepath.Join(dir, "specs", p.spec+".yaml"), mode, p.capi)
				change := kubeadm.ChangeFor(cfg)
				kcp := renderedKCP(t, filepath.Join(dir, "rendered", p.rendered+".yaml"))
				if err := mergeInto(kcp, change); err != nil {
					t.Fatalf("merge: %v", err)
				}
				cc := kcp["spec"].(map[string]any)["kubeadmConfigSpec"].(map[string]any)["clusterConfiguration"].(map[string]any)
				for _, comp := range kubeadm.Components() {
					got := lookup(cc, comp.Path())
					if got == nil {
						continue
					}
					names := map[string]string{}
					switch x := got.(type) {
					case []any:
						if p.capi != spec.CAPIv1beta2 {
							t.Fatalf("%s: a list in a v1beta1 object", comp)
						}
						for _, item := range x {
							m := item.(map[string]any)
							n := m["name"].(string)
							if _, dup := names[n]; dup {
								t.Errorf("%s: extraArgs name %q appears twice", comp, n)
							}
							names[n], _ = m["value"].(string)
						}
					case map[string]any:
						if p.capi != spec.CAPIv1beta1 {
							t.Fatalf("%s: a map in a v1beta2 object", comp)
						}
						for k, v := range x {
							names[k], _ = v.(string)
						}
					}
					for _, a := range change.Args(comp) {
						if names[a.Name] != a.Value {
							t.Errorf("%s: %s=%q after merge, want %q", comp, a.Name, names[a.Name], a.Value)
						}
					}
				}
				if mode == metricsv1alpha1.ExposureBindAddress && len(change.Args(kubeadm.ControllerManager)) == 0 {
					t.Fatalf("bindAddress rendered nothing for the controller manager")
				}
				decodeTyped(t, kcp, p.capi)
			})
		}
	}
}

func lookup(m map[string]any, path []string) any {
	var cur any = m
	for _, k := range path {
		mm, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = mm[k]
	}
	return cur
}

// decodeTyped proves the shape against the Cluster API types. EKS-A's fork
// adds Bottlerocket fields the upstream types do not know, so unknown fields
// are allowed; a wrong extraArgs shape still fails.
func decodeTyped(t *testing.T, kcp map[string]any, capi string) {
	t.Helper()
	b, err := json.Marshal(kcp)
	if err != nil {
		t.Fatal(err)
	}
	switch capi {
	case spec.CAPIv1beta1:
		var obj kcpv1beta1.KubeadmControlPlane
		if err := sigsyaml.Unmarshal(b, &obj); err != nil {
			t.Fatalf("v1beta1 decode: %v", err)
		}
		if obj.Spec.KubeadmConfigSpec.ClusterConfiguration == nil {
			t.Fatal("v1beta1: no clusterConfiguration")
		}
	default:
		var obj kcpv1beta2.KubeadmControlPlane
		if err := sigsyaml.Unmarshal(b, &obj); err != nil {
			t.Fatalf("v1beta2 decode: %v", err)
		}
	}
}

// With etcd encryption EKS-A renders feature-gates=KMSv1=true on the
// apiserver; the z-page gates are merged into that one item.
func TestMergeFeatureGatesWithEKSAKMSv1(t *testing.T) {
	dir := testutil.SharedFixtures(t)
	kcp := renderedKCP(t, filepath.Join(dir, "rendered", "vsphere-bottlerocket.v1beta2.yaml"))
	cc := kcp["spec"].(map[string]any)["kubeadmConfigSpec"].(map[string]any)["clusterConfiguration"].(map[string]any)
	api := cc["apiServer"].(map[string]any)
	api["extraArgs"] = append(api["extraArgs"].([]any), map[string]any{"name": "feature-gates", "value": "KMSv1=true"})

	cfg := &spec.Config{ClusterName: "test", KubeVersion: spec.KubeVersion{Major: 1, Minor: 35}, Provider: spec.ProviderVSphere,
		CAPIVersion: spec.CAPIv1beta2, EtcdEncryption: true, Exposure: metricsv1alpha1.ExposureProxy, TLSMinVersion: metricsv1alpha1.TLS12,
		APIServer: true, ControllerManager: true, Scheduler: true, Statusz: true, Flagz: true}
	change := kubeadm.ChangeFor(cfg)
	if err := mergeInto(kcp, change); err != nil {
		t.Fatal(err)
	}
	var gates []string
	for _, item := range api["extraArgs"].([]any) {
		if m := item.(map[string]any); m["name"] == "feature-gates" {
			gates = append(gates, m["value"].(string))
		}
	}
	if len(gates) != 1 || gates[0] != "ComponentFlagz=true,ComponentStatusz=true,KMSv1=true" {
		t.Fatalf("apiServer feature-gates items: %q", gates)
	}
	decodeTyped(t, kcp, spec.CAPIv1beta2)
}

func TestMergeIntoRefusesEtcdArgsWithExternalEtcd(t *testing.T) {
	kcp := map[string]any{"apiVersion": "controlplane.cluster.x-k8s.io/v1beta2", "spec": map[string]any{"kubeadmConfigSpec": map[string]any{
		"clusterConfiguration": map[string]any{"etcd": map[string]any{"external": map[string]any{"endpoints": []any{"https://x:2379"}}}}}}}
	ch := kubeadm.Change{APIVersion: spec.CAPIv1beta2, Items: []kubeadm.Item{{Component: kubeadm.Etcd, Arg: kubeadm.Arg{Name: "metrics", Value: "extensive"}}}}
	if err := mergeInto(kcp, ch); err == nil {
		t.Fatal("want an error for etcd args with external etcd")
	}
}

func TestMergeIntoRefusesDuplicateNames(t *testing.T) {
	kcp := map[string]any{"apiVersion": "controlplane.cluster.x-k8s.io/v1beta2", "spec": map[string]any{"kubeadmConfigSpec": map[string]any{
		"clusterConfiguration": map[string]any{"scheduler": map[string]any{"extraArgs": []any{
			map[string]any{"name": "profiling", "value": "false"}, map[string]any{"name": "profiling", "value": "true"}}}}}}}
	ch := kubeadm.Change{APIVersion: spec.CAPIv1beta2, Items: []kubeadm.Item{{Component: kubeadm.Scheduler, Arg: kubeadm.Arg{Name: "bind-address", Value: "0.0.0.0"}}}}
	if err := mergeInto(kcp, ch); err == nil || !strings.Contains(err.Error(), `"profiling" appears twice`) {
		t.Fatalf("got %v", err)
	}
}

// mergeInto applies the whole change, merged items included, to a complete
// KubeadmControlPlane object (as EKS-A renders it, decoded into maps): the
// configuration the components should end up with. (The test's model of
// what kubeadm then runs.)
func mergeInto(kcp map[string]any, c kubeadm.Change) error {
	apiVersion, _ := kcp["apiVersion"].(string)
	version := spec.CAPIv1beta2
	if apiVersion == kubeadm.Group+"/"+spec.CAPIv1beta1 || apiVersion == "" && c.APIVersion == spec.CAPIv1beta1 {
		version = spec.CAPIv1beta1
	}
	spc, _ := kcp["spec"].(map[string]any)
	if spc == nil {
		return fmt.Errorf("KubeadmControlPlane has no spec")
	}
	kcs, _ := spc["kubeadmConfigSpec"].(map[string]any)
	if kcs == nil {
		return fmt.Errorf("KubeadmControlPlane has no spec.kubeadmConfigSpec")
	}
	cc, _ := kcs["clusterConfiguration"].(map[string]any)
	if cc == nil {
		cc = map[string]any{}
		kcs["clusterConfiguration"] = cc
	}
	for _, comp := range kubeadm.Components() {
		ours := c.Args(comp)
		if len(ours) == 0 {
			continue
		}
		if comp == kubeadm.Etcd {
			if etcd, _ := cc["etcd"].(map[string]any); etcd != nil && etcd["external"] != nil {
				return fmt.Errorf("KubeadmControlPlane uses external etcd; etcd extraArgs must not be set")
			}
		}
		live, _, _ := unstructured.NestedFieldNoCopy(cc, comp.Path()...)
		existing, err := decodeArgs(live)
		if err != nil {
			return fmt.Errorf("clusterConfiguration.%s: %w", strings.Join(comp.Path(), "."), err)
		}
		for _, a := range ours {
			existing = existing.Set(a.Name, a.Value)
		}
		if err := unstructured.SetNestedField(cc, existing.Encode(version), comp.Path()...); err != nil {
			return err
		}
	}
	return nil
}

// decodeArgs reads extraArgs in either shape. A duplicate name in a list is an
// error: the API server would refuse it.
func decodeArgs(v any) (kubeadm.Args, error) {
	var out kubeadm.Args
	switch x := v.(type) {
	case nil:
	case map[string]any:
		for k, val := range x {
			out = out.Set(k, fmt.Sprint(val))
		}
	case []any:
		seen := map[string]bool{}
		for i, item := range x {
			m, ok := item.(map[string]any)
			if !ok {
				return nil, fmt.Errorf("item %d is not a {name, value} mapping", i)
			}
			name, _ := m["name"].(string)
			if seen[name] {
				return nil, fmt.Errorf("name %q appears twice", name)
			}
			seen[name] = true
			out = append(out, kubeadm.Arg{Name: name, Value: fmt.Sprint(m["value"])})
		}
	default:
		return nil, fmt.Errorf("extraArgs is neither a map (v1beta1) nor a list (v1beta2)")
	}
	return out, nil
}

// A user's apiServerExtraArgs feature-gates is an item EKS-A renders: the
// z-page gates are merged into its value (with KMSv1 when EKS-A sets that
// too), never rendered as a second feature-gates item, in either contract;
// once the user's value holds the gates, there is nothing left to change.
func TestUserAPIServerFeatureGatesMergeIntoOneItem(t *testing.T) {
	dir := testutil.SharedFixtures(t)
	for _, tc := range []struct {
		capi, rendered string
		encryption     bool
		user, want     string
	}{
		{spec.CAPIv1beta2, "vsphere-bottlerocket.v1beta2.yaml", false, "MyGate=true", "ComponentFlagz=true,ComponentStatusz=true,MyGate=true"},
		{spec.CAPIv1beta2, "vsphere-bottlerocket.v1beta2.yaml", true, "MyGate=true", "ComponentFlagz=true,ComponentStatusz=true,KMSv1=true,MyGate=true"},
		{spec.CAPIv1beta1, "vsphere-external-etcd.v1beta1.yaml", false, "MyGate=false, ComponentFlagz=true", "ComponentFlagz=true,ComponentStatusz=true,MyGate=false"},
	} {
		t.Run(tc.capi+"/"+tc.user, func(t *testing.T) {
			cfg := &spec.Config{ClusterName: "test", KubeVersion: spec.KubeVersion{Major: 1, Minor: 35}, Provider: spec.ProviderVSphere,
				CAPIVersion: tc.capi, EtcdEncryption: tc.encryption, Exposure: metricsv1alpha1.ExposureProxy, TLSMinVersion: metricsv1alpha1.TLS12,
				APIServer: true, ControllerManager: true, Scheduler: true, Statusz: true, Flagz: true,
				APIServerExtraArgs: map[string]string{"feature-gates": tc.user, "audit-log-maxage": "7"}}
			change := kubeadm.ChangeFor(cfg)
			var api []kubeadm.Item
			for _, it := range change.Items {
				if it.Component == kubeadm.APIServer {
					api = append(api, it)
				}
			}
			if len(api) != 1 || api[0].Name != "feature-gates" || api[0].Value != tc.want || !api[0].Merged || !api[0].User {
				t.Fatalf("apiServer items: %+v, want one merged user feature-gates=%s", api, tc.want)
			}
			// The rendered object never carries a second feature-gates item.
			cc := change.Object()["spec"].(map[string]any)["kubeadmConfigSpec"].(map[string]any)["clusterConfiguration"].(map[string]any)
			if _, ok := cc["apiServer"]; ok {
				t.Fatalf("apiServer extraArgs rendered: %v", cc["apiServer"])
			}
			// What the components end up with: one item, every gate.
			kcp := renderedKCP(t, filepath.Join(dir, "rendered", tc.rendered))
			kcc := kcp["spec"].(map[string]any)["kubeadmConfigSpec"].(map[string]any)["clusterConfiguration"].(map[string]any)
			apiBlock := kcc["apiServer"].(map[string]any)
			eksaGates, _ := kubeadm.EKSADefaults(cfg)[kubeadm.APIServer].Get("feature-gates")
			if tc.capi == spec.CAPIv1beta2 {
				apiBlock["extraArgs"] = append(apiBlock["extraArgs"].([]any), map[string]any{"name": "feature-gates", "value": eksaGates})
			} else {
				apiBlock["extraArgs"].(map[string]any)["feature-gates"] = eksaGates
			}
			if err := mergeInto(kcp, change); err != nil {
				t.Fatal(err)
			}
			decodeTyped(t, kcp, tc.capi)

			// The user sets the merged value: nothing left for the apiServer.
			cfg.APIServerExtraArgs = map[string]string{"feature-gates": tc.want}
			for _, it := range kubeadm.ChangeFor(cfg).Items {
				if it.Component == kubeadm.APIServer {
					t.Errorf("the user's gates already hold the z-page gates, yet %+v", it)
				}
			}
		})
	}
}
