package kubeadm

import (
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
	for _, comp := range Components() {
		args := c.args(comp, false)
		if len(args) == 0 {
			continue
		}
		setPath(cc, comp.Path(), args.Encode(c.APIVersion))
	}
	obj := map[string]any{
		"apiVersion": Group + "/" + c.APIVersion,
		"kind":       "KubeadmControlPlane",
		"metadata": map[string]any{"name": c.ClusterName, "namespace": Namespace, "annotations": map[string]any{
			FluxPruneAnnotation: FluxPruneDisabled, ArgoSyncOptionsAnnotation: ArgoNoPruneNoDelete}},
	}
	if len(cc) > 0 {
		obj["spec"] = map[string]any{"kubeadmConfigSpec": map[string]any{"clusterConfiguration": cc}}
	}
	return obj
}

// The marks that keep GitOps tools from deleting EKS Anywhere's
// KubeadmControlPlane, of which eksa-metrics renders only a part: Flux
// deletes every object of its inventory that a revision no longer renders
// unless it carries FluxPruneAnnotation: disabled (Flux's Kustomization
// docs, "Garbage collection"; fluxcd/pkg ssa's DeleteAll skips objects with
// it); Argo CD prunes such an object, and deletes it with its Application,
// unless its sync options say Prune=false and Delete=false (argoproj/argo-cd
// docs/user-guide/sync-options.md). The object is rendered on every
// cluster, with no spec when eksa-metrics needs no item in it, so that no
// change of spec drops it from a GitOps tool's revision, and its apply
// gives back the items the tool applied before.
const (
	FluxPruneAnnotation       = "kustomize.toolkit.fluxcd.io/prune"
	FluxPruneDisabled         = "disabled"
	ArgoSyncOptionsAnnotation = "argocd.argoproj.io/sync-options"
	ArgoNoPruneNoDelete       = "Prune=false,Delete=false"
)

// Applicable reports whether the change has any item server-side apply can own.
func (c Change) Applicable() bool {
	for _, it := range c.Items {
		if !it.Merged {
			return true
		}
	}
	return false
}

// Encode gives the extraArgs in a contract's shape: a map (v1beta1) or a
// list of {name, value} (v1beta2).
func (args Args) Encode(apiVersion string) any {
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
