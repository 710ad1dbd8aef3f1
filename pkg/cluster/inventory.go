package cluster

import (
	"context"
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/eksa-metrics/eksa-metrics/pkg/templates"
)

// cachedKind is one kind of the inventory, held by watches.
type cachedKind struct {
	gvk       schema.GroupVersionKind
	informers []toolscache.SharedIndexInformer // one per namespace watched
}

// CacheInventory makes what prune and release list in this cluster (the
// objects labelled managed-by eksa-metrics, of the kinds it creates whole)
// come from watches, as metadata, instead of a list per kind and
// namespace for every Cluster planned: the controller's management
// cluster, which every Cluster's plan visits. Where this identity may list
// a kind only in some namespaces (Namespaced), it watches there. It
// returns once the watches have synced; they end with ctx. A stale entry
// costs nothing: a prune deletes by UID, and an object already gone is
// done. An object created a few milliseconds before the next plan of the
// same Cluster may not be seen by that plan's prune yet (the watch
// latency); the Cluster's next plan prunes it.
func (c *Cluster) CacheInventory(ctx context.Context) error {
	cfg := rest.CopyConfig(c.config)
	cfg.Timeout = 0
	mc, err := metadata.NewForConfig(cfg)
	if err != nil {
		return err
	}
	selector := templates.ManagedByLabel + "=" + templates.Prefix
	factories := map[scope]metadatainformer.SharedInformerFactory{}
	inventory := map[schema.GroupVersionResource]*cachedKind{}
	var synced []toolscache.InformerSynced
	for _, gvk := range prunable {
		m, err := c.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if meta.IsNoMatchError(err) {
			continue
		}
		if err != nil {
			return err
		}
		k := &cachedKind{gvk: m.GroupVersionKind}
		for _, sc := range c.scopes(m.Resource) {
			f, ok := factories[sc]
			if !ok {
				f = metadatainformer.NewFilteredSharedInformerFactory(mc, 0, sc.namespace, func(o *metav1.ListOptions) {
					*o = sc.options(*o)
					o.LabelSelector = selector
				})
				factories[sc] = f
			}
			inf := f.ForResource(m.Resource).Informer()
			k.informers = append(k.informers, inf)
			synced = append(synced, inf.HasSynced)
		}
		inventory[m.Resource] = k
	}
	for _, f := range factories {
		f.Start(ctx.Done())
		go func() { <-ctx.Done(); f.Shutdown() }()
	}
	if !toolscache.WaitForCacheSync(ctx.Done(), synced...) {
		return fmt.Errorf("watching the inventory of eksa-metrics in the %s: %w", c, ctx.Err())
	}
	c.inventory = inventory
	return nil
}

// cachedList lists from CacheInventory's watches; false when the kind is
// not cached.
func (c *Cluster) cachedList(gvr schema.GroupVersionResource, opts metav1.ListOptions) ([]unstructured.Unstructured, bool, error) {
	k, ok := c.inventory[gvr]
	if !ok {
		return nil, false, nil
	}
	sel, err := labels.Parse(opts.LabelSelector)
	if err != nil {
		return nil, true, err
	}
	// The watches hold what is labelled managed-by eksa-metrics: a list
	// of anything else goes to the API server.
	reqs, _ := sel.Requirements()
	if !slices.ContainsFunc(reqs, func(r labels.Requirement) bool {
		return r.Key() == templates.ManagedByLabel && r.Operator() == selection.Equals && r.Values().Has(templates.Prefix) && r.Values().Len() == 1
	}) {
		return nil, false, nil
	}
	var out []unstructured.Unstructured
	for _, inf := range k.informers {
		for _, item := range inf.GetStore().List() {
			p, ok := item.(*metav1.PartialObjectMetadata)
			if !ok || !sel.Matches(labels.Set(p.Labels)) {
				continue
			}
			md, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&p.ObjectMeta)
			if err != nil {
				return nil, true, err
			}
			u := unstructured.Unstructured{Object: map[string]any{"metadata": md}}
			u.SetGroupVersionKind(k.gvk)
			out = append(out, u)
		}
	}
	return out, true, nil
}
