package cluster

import (
	"context"
	"fmt"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/eksa-metrics/eksa-metrics/pkg/render"
	"github.com/eksa-metrics/eksa-metrics/pkg/templates"
)

// Prune deletes an object eksa-metrics created that the spec no longer renders.
const Prune Action = "prune"

// prunable are the kinds eksa-metrics creates whole (never the
// KubeadmControlPlane, whose items it releases, nor the Deployments it
// edits). Kinds a cluster does not serve are skipped.
var prunable = []schema.GroupVersionKind{
	{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRole"},
	{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRoleBinding"},
	{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "Role"},
	{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "RoleBinding"},
	{Version: "v1", Kind: "ServiceAccount"},
	{Version: "v1", Kind: "ConfigMap"},
	{Version: "v1", Kind: "Secret"},
	{Version: "v1", Kind: "Service"},
	{Group: "apps", Version: "v1", Kind: "DaemonSet"},
	{Group: "apps", Version: "v1", Kind: "Deployment"},
	{Group: "monitoring.coreos.com", Version: "v1", Kind: "ServiceMonitor"},
	{Group: "monitoring.coreos.com", Version: "v1", Kind: "PrometheusRule"},
	{Group: "packages.eks.amazonaws.com", Version: "v1alpha1", Kind: "Package"},
	{Group: "cert-manager.io", Version: "v1", Kind: "Certificate"},
	{Group: "cert-manager.io", Version: "v1", Kind: "Issuer"},
	// Rendered before the issuers were namespaced: listed so that apply
	// prunes them from a cluster that still has them.
	{Group: "cert-manager.io", Version: "v1", Kind: "ClusterIssuer"},
}

// createdWhole names, for a kind whose objects of other names eksa-metrics
// only edits (the management controllers' Deployments, applied by its
// field manager too), the ones it creates whole: only these are pruned.
var createdWhole = map[string][]string{"Deployment": {templates.KubeletApprover}}

// pruneSteps finds, in one cluster, the objects of the inventory of a cluster
// name (labelled managed-by eksa-metrics and with the cluster's name, and
// applied by field manager eksa-metrics) that keep does not hold.
func (c *Cluster) pruneSteps(ctx context.Context, clusterName string, keep map[string]bool) ([]*Step, error) {
	selector := fmt.Sprintf("%s=%s,%s=%s", templates.ManagedByLabel, templates.Prefix, templates.ClusterLabel, clusterName)
	var steps []*Step
	h := c.heldFor(clusterName) // the Cluster's watches, when it has them here
	for _, gvk := range prunable {
		m, err := c.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if meta.IsNoMatchError(err) {
			continue // not served here (no prometheus-operator, no curated packages)
		}
		if err != nil {
			return nil, err
		}
		items, fromWatches := h.heldPrunable(gvk)
		if !fromWatches {
			var err error
			items, err = c.listAll(ctx, c.Dynamic.Resource(m.Resource), m.Resource, metav1.ListOptions{LabelSelector: selector})
			if apierrors.IsNotFound(err) || apierrors.IsForbidden(err) && slices.Contains([]string{"packages.eks.amazonaws.com", "monitoring.coreos.com", "cert-manager.io"}, gvk.Group) {
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("listing the %s eksa-metrics created for cluster %s in the %s: %w", gvk.Kind, clusterName, c, err)
			}
			if !slices.ContainsFunc(items, func(u unstructured.Unstructured) bool { return ownsByApply(&u) }) {
				h.noneListed(gvk.Kind)
			}
		}
		for i := range items {
			live := &items[i]
			key := inventoryKey(gvk.Kind, live.GetNamespace(), live.GetName())
			// What the watches give is only what eksa-metrics applied.
			if keep[key] || !fromWatches && !ownsByApply(live) {
				continue
			}
			if names, ok := createdWhole[gvk.Kind]; ok && !slices.Contains(names, live.GetName()) {
				continue
			}
			obj := map[string]any{"apiVersion": live.GetAPIVersion(), "kind": live.GetKind(),
				"metadata": map[string]any{"name": live.GetName(), "namespace": live.GetNamespace(), "uid": string(live.GetUID())}}
			if live.GetNamespace() == "" {
				delete(obj["metadata"].(map[string]any), "namespace")
			}
			steps = append(steps, &Step{Cluster: c, Object: obj, Action: Prune, mapping: m,
				Diff: []string{"eksa-metrics created it; the metrics section no longer renders it"}})
		}
	}
	return steps, nil
}

func inventoryKey(kind, namespace, name string) string {
	return templates.ObjectName(kind, namespace, name)
}

// keepSet is the inventory of a render in one cluster.
func keepSet(objs []render.Object) map[string]bool {
	keep := map[string]bool{}
	for _, o := range objs {
		keep[inventoryKey(o.Kind(), o.Namespace(), o.Name())] = true
	}
	return keep
}

// prune deletes the object, only the one planned (its UID).
func (c *Cluster) prune(ctx context.Context, s *Step, dryRun bool) error {
	u := unstructured.Unstructured{Object: s.Object}
	ri, _, err := c.resource(s.Object)
	if err != nil {
		return err
	}
	uid := types.UID(u.GetUID())
	opts := metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}}
	if dryRun {
		opts.DryRun = []string{metav1.DryRunAll}
	}
	err = ri.Delete(ctx, u.GetName(), opts)
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil // gone, or replaced by another object of that name: not ours to delete
	}
	if err != nil {
		return fmt.Errorf("deleting %s from the %s: %w", s.Name(), c, err)
	}
	return nil
}
