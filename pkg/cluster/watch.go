package cluster

import (
	"context"
	"fmt"
	"maps"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/eksa-metrics/eksa-metrics/pkg/templates"
)

// Drift is a change someone else made to an object of a Cluster's
// inventory: what the controller re-plans that Cluster for.
type Drift struct {
	// Object is Kind namespace/name; Action "edited" or "deleted".
	Object, Action string
}

// WatchInventory watches, in this cluster and until ctx ends, the objects
// eksa-metrics creates for clusterName (the kinds it creates whole,
// label-selected for that Cluster, and the serving certificates' Secrets
// and CA bundles, as metadata only: no Secret or ConfigMap content is
// held) and calls drifted for each that another writer creates, edits or
// deletes. eksa-metrics' own writes (the latest entry of the object's
// managedFields is its field manager), status-only updates (the generation
// is unchanged) and the initial list are not drift, nor is an object that
// left the label selection because it now carries another Cluster's label
// (two Clusters pointed at one API server). Where this identity may list
// a kind only in some namespaces (Namespaced), it watches there. The
// watches are client-go's informers: they relist and rewatch with backoff
// while the cluster is unreachable.
func (c *Cluster) WatchInventory(ctx context.Context, clusterName string, drifted func(Drift)) error {
	cfg := rest.CopyConfig(c.config)
	cfg.Timeout = 0 // a watch is long-lived; the server ends it
	mc, err := metadata.NewForConfig(cfg)
	if err != nil {
		return err
	}
	inventory := fmt.Sprintf("%s=%s,%s=%s", templates.ManagedByLabel, templates.Prefix, templates.ClusterLabel, clusterName)
	// The serving certificates' Secrets and CA bundles are the workload
	// cluster's, not one Cluster name's: labelled as certificates, and
	// watched with the rest of what eksa-metrics manages.
	managedBy := templates.ManagedByLabel + "=" + templates.Prefix
	factories := map[string]metadatainformer.SharedInformerFactory{}
	factory := func(namespace, selector string) metadatainformer.SharedInformerFactory {
		key := namespace + " " + selector
		if f, ok := factories[key]; ok {
			return f
		}
		f := metadatainformer.NewFilteredSharedInformerFactory(mc, 0, namespace, func(o *metav1.ListOptions) { o.LabelSelector = selector })
		factories[key] = f
		return f
	}
	ours := func(o metav1.Object) bool {
		l := o.GetLabels()
		return l[templates.ClusterLabel] == clusterName || l[templates.CertificateLabel] != ""
	}
	for _, gvk := range prunable {
		m, err := c.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if meta.IsNoMatchError(err) {
			continue // not served here
		}
		if err != nil {
			return err
		}
		selectors := []string{inventory}
		if gvk.Group == "" && (gvk.Kind == "Secret" || gvk.Kind == "ConfigMap") {
			// One watch for both the inventory and the certificates (each
			// watch holds buffers: a fleet has thousands).
			selectors = []string{managedBy}
		}
		// Where this identity may not watch cluster-wide (the controller on
		// its management cluster), in the namespaces where it may.
		namespaces, scoped := c.Namespaced[m.Resource.Group+"/"+m.Resource.Resource]
		if !scoped {
			namespaces = []string{metav1.NamespaceAll}
		}
		for _, ns := range namespaces {
			for _, sel := range selectors {
				if err := watchKind(factory(ns, sel).ForResource(m.Resource).Informer(), gvk.Kind, ours, drifted); err != nil {
					return err
				}
			}
		}
	}
	for _, f := range factories {
		f.Start(ctx.Done())
		go func() { <-ctx.Done(); f.Shutdown() }()
	}
	return nil
}

func watchKind(inf toolscache.SharedIndexInformer, kind string, ours func(metav1.Object) bool, drifted func(Drift)) error {
	name := func(o metav1.Object) string { return templates.ObjectName(kind, o.GetNamespace(), o.GetName()) }
	_ = inf.SetWatchErrorHandlerWithContext(func(context.Context, *toolscache.Reflector, error) {}) // retried; the reconcile reports what it cannot reach
	_, err := inf.AddEventHandler(toolscache.ResourceEventHandlerDetailedFuncs{
		AddFunc: func(obj any, initial bool) {
			if o, ok := obj.(metav1.Object); ok && !initial && ours(o) && !ownWrite(o) {
				drifted(Drift{Object: name(o), Action: "created"})
			}
		},
		UpdateFunc: func(oldObj, newObj any) {
			o, ok1 := oldObj.(metav1.Object)
			n, ok2 := newObj.(metav1.Object)
			if ok1 && ok2 && (ours(o) || ours(n)) && changed(o, n) && !ownWrite(n) {
				drifted(Drift{Object: name(n), Action: "edited"})
			}
		},
		DeleteFunc: func(obj any) {
			if t, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
				obj = t.Obj
			}
			if o, ok := obj.(metav1.Object); ok && ours(o) {
				drifted(Drift{Object: name(o), Action: "deleted"})
			}
		},
	})
	return err
}

// changed: a spec (generation), label or annotation change, or any change
// of an object without a generation (RBAC, ConfigMaps, Secrets, Services).
func changed(o, n metav1.Object) bool {
	if o.GetResourceVersion() == n.GetResourceVersion() {
		return false // a resync
	}
	if n.GetGeneration() == 0 {
		return true
	}
	return o.GetGeneration() != n.GetGeneration() || !maps.Equal(o.GetLabels(), n.GetLabels()) || !maps.Equal(o.GetAnnotations(), n.GetAnnotations())
}

// ownWrite: every managedFields entry of the latest time is eksa-metrics'.
func ownWrite(o metav1.Object) bool {
	var latest metav1.Time
	for _, mf := range o.GetManagedFields() {
		if mf.Time != nil && mf.Time.After(latest.Time) {
			latest = *mf.Time
		}
	}
	own := false
	for _, mf := range o.GetManagedFields() {
		if mf.Time == nil || !mf.Time.Equal(&latest) {
			continue
		}
		if mf.Manager != FieldManager {
			return false
		}
		own = true
	}
	return own
}
