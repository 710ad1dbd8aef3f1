package kubeadm

import (
	"fmt"
	"strings"

	"github.com/eksa-metrics/eksa-metrics/pkg/spec"
)

// Group of the KubeadmControlPlane API.
const Group = "controlplane.cluster.x-k8s.io"

// Object renders the change as a server-side-apply partial object: only the
// fields eksa-metrics owns, so the EKS-A controller keeps everything else.
//
// Items that merge a value EKS-A renders itself (Merged) are left out. In
// CAPI v1beta2 an extraArgs item is keyed by name and value, so applying
// feature-gates with a merged value would add a second feature-gates item
// next to EKS-A's and the CRD's uniqueness rule refuses the object; replacing
// EKS-A's item instead would make EKS-A's own next apply fail the same way.
// Those items are reported in the plan for a deliberate manual edit.
func (c Change) Object() map[string]any {
	cc := map[string]any{}
	for _, comp := range Components {
		args := c.args(comp, false)
		if len(args) == 0 {
			continue
		}
		setPath(cc, comp.Path(), encodeArgs(c.APIVersion, args))
	}
	return map[string]any{
		"apiVersion": Group + "/" + c.APIVersion,
		"kind":       "KubeadmControlPlane",
		"metadata":   map[string]any{"name": c.ClusterName, "namespace": Namespace},
		"spec": map[string]any{
			"kubeadmConfigSpec": map[string]any{"clusterConfiguration": cc},
		},
	}
}

// Applicable reports whether the change has any item server-side apply can own.
func (c Change) Applicable() bool {
	for _, it := range c.Items {
		if !it.Merged {
			return true
		}
	}
	return false
}

func encodeArgs(apiVersion string, args Args) any {
	if apiVersion == spec.CAPIv1beta1 {
		m := map[string]any{}
		for _, a := range args {
			m[a.Name] = a.Value
		}
		return m
	}
	list := make([]any, len(args))
	for i, a := range args {
		list[i] = map[string]any{"name": a.Name, "value": a.Value}
	}
	return list
}

func setPath(m map[string]any, path []string, v any) {
	for _, p := range path[:len(path)-1] {
		next, ok := m[p].(map[string]any)
		if !ok {
			next = map[string]any{}
			m[p] = next
		}
		m = next
	}
	m[path[len(path)-1]] = v
}

// MergeInto applies the whole change, merged items included, to a complete
// KubeadmControlPlane object (as EKS-A renders it, decoded into maps): the
// configuration the components should end up with. An item with the same
// name is replaced, never duplicated; blocks that are missing (Tinkerbell's
// controllerManager, Nutanix's scheduler) are created. The object's
// apiVersion decides the extraArgs shape.
func MergeInto(kcp map[string]any, c Change) error {
	apiVersion, _ := kcp["apiVersion"].(string)
	version := spec.CAPIv1beta2
	if apiVersion == Group+"/"+spec.CAPIv1beta1 || apiVersion == "" && c.APIVersion == spec.CAPIv1beta1 {
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
	for _, comp := range Components {
		ours := c.Args(comp)
		if len(ours) == 0 {
			continue
		}
		if comp == Etcd {
			if etcd, _ := cc["etcd"].(map[string]any); etcd != nil && etcd["external"] != nil {
				return fmt.Errorf("KubeadmControlPlane uses external etcd; etcd extraArgs must not be set")
			}
		}
		existing, err := decodeArgs(getPath(cc, comp.Path()))
		if err != nil {
			return fmt.Errorf("clusterConfiguration.%s: %w", strings.Join(comp.Path(), "."), err)
		}
		for _, a := range ours {
			existing = existing.Set(a.Name, a.Value)
		}
		setPath(cc, comp.Path(), encodeArgs(version, existing))
	}
	return nil
}

func getPath(m map[string]any, path []string) any {
	var cur any = m
	for _, p := range path {
		mm, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = mm[p]
	}
	return cur
}

// decodeArgs reads extraArgs in either shape. A duplicate name in a list is an
// error: the API server would refuse it.
func decodeArgs(v any) (Args, error) {
	var out Args
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
			out = append(out, Arg{name, fmt.Sprint(m["value"])})
		}
	default:
		return nil, fmt.Errorf("extraArgs is neither a map (v1beta1) nor a list (v1beta2)")
	}
	return out, nil
}
