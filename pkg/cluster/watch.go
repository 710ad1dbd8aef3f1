package cluster

import (
	"context"
	"fmt"
	"hash/fnv"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/eksa-metrics/eksa-metrics/pkg/render"
	"github.com/eksa-metrics/eksa-metrics/pkg/templates"
)

// Drift is a change someone else made to an object of a Cluster's
// inventory: what the controller re-plans that Cluster for.
type Drift struct {
	// Object is Kind namespace/name; Action "edited" or "deleted".
	Object, Action string
}

// WatchInventory watches, in this cluster and until ctx ends, the objects
// eksa-metrics creates for clusterName (of the kinds given, the ones it
// renders there: label-selected for that Cluster) and the serving
// certificates' Secrets and CA bundles (label-selected as certificates),
// as metadata only: no Secret or ConfigMap content is held. It calls
// drifted for each that another writer creates, edits or deletes.
// eksa-metrics' own writes (the latest entry of the object's managedFields
// is its field manager), status-only updates (the generation is unchanged)
// and the initial list are not drift, nor is an object that left the label
// selection because it now carries another Cluster's label (two Clusters
// pointed at one API server). Where this identity may list a kind only in
// some namespaces (Namespaced), it watches there.
//
// Each watch is a client-go Reflector (it lists, watches, and relists with
// backoff while the cluster is unreachable) feeding a store that keeps, per
// object, only what tells a change (resourceVersion, generation, a hash of
// the labels and annotations): a controller holds these watches for every
// workload cluster of a fleet, and an informer per kind (its object store,
// its event queue and the 1024-slot buffer of each handler) costs several
// times that. Every selector names what is ours alone, so that no watch
// receives the writes of other Clusters' objects: with many Clusters
// behind one API server, a selector on the managed-by label alone sent
// every Cluster each other's writes.
func (c *Cluster) WatchInventory(ctx context.Context, clusterName string, kinds []string, drifted func(Drift)) error {
	cfg := rest.CopyConfig(c.config)
	cfg.Timeout = 0 // a watch is long-lived; the server ends it
	mc, err := metadata.NewForConfig(cfg)
	if err != nil {
		return err
	}
	type watched struct {
		gvk       schema.GroupVersionKind
		selector  string
		ours      func(metav1.Object) bool
		inventory bool // the Cluster's inventory, what plans read (held)
	}
	inventory := fmt.Sprintf("%s=%s,%s=%s", templates.ManagedByLabel, templates.Prefix, templates.ClusterLabel, clusterName)
	certificates := templates.ManagedByLabel + "=" + templates.Prefix + "," + templates.CertificateLabel
	var watches []watched
	for _, gvk := range prunable {
		if slices.Contains(kinds, gvk.Kind) {
			watches = append(watches, watched{gvk, inventory, func(o metav1.Object) bool { return o.GetLabels()[templates.ClusterLabel] == clusterName }, true})
		}
		if gvk.Group == "" && (gvk.Kind == "Secret" || gvk.Kind == "ConfigMap") {
			// The serving certificates' Secrets and CA bundles are the
			// workload cluster's, not one Cluster name's.
			watches = append(watches, watched{gvk, certificates, func(metav1.Object) bool { return true }, false})
		}
	}
	h := newHeld()
	var reflectors []*toolscache.Reflector
	for _, w := range watches {
		m, err := c.mapper.RESTMapping(w.gvk.GroupKind(), w.gvk.Version)
		if meta.IsNoMatchError(err) {
			continue // not served here
		}
		if err != nil {
			return err
		}
		// Where this identity may not watch cluster-wide (the controller on
		// its management cluster), in the namespaces where it may, and
		// there by name where it may read only named objects (Secrets).
		for _, sc := range c.scopes(m.Resource) {
			ns := sc.namespace
			client := mc.Resource(m.Resource).Namespace(ns)
			selector := w.selector
			store := &driftStore{kind: w.gvk.Kind, ours: w.ours, drifted: drifted, listed: make(chan struct{}), current: func(namespace, name string) (metav1.Object, error) {
				ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
				defer cancel()
				// From the API server's watch cache, which the event came from:
				// as new as the event, and no read of etcd.
				return mc.Resource(m.Resource).Namespace(namespace).Get(ctx, name, metav1.GetOptions{ResourceVersion: "0"})
			}}
			lw := toolscache.ToListWatcherWithWatchListSemantics(&toolscache.ListWatch{
				ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
					o = sc.options(o)
					o.LabelSelector = selector
					out, err := client.List(ctx, o)
					store.failed(err)
					return out, err
				},
				WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
					o = sc.options(o)
					o.LabelSelector = selector
					out, err := client.Watch(ctx, o)
					store.failed(err)
					return out, err
				},
			}, mc)
			if w.inventory {
				h.stores[kindIn{w.gvk.Kind, ns, sc.name}] = store
			}
			reflectors = append(reflectors, toolscache.NewReflectorWithOptions(lw, &metav1.PartialObjectMetadata{}, store,
				toolscache.ReflectorOptions{Name: clusterName + " " + m.Resource.String()}))
		}
	}
	// Retried with backoff; the reconcile reports what it cannot reach, so
	// the watches' own errors are not logged.
	quiet := klog.NewContext(ctx, logr.Discard())
	for _, r := range reflectors {
		go r.RunWithContext(quiet)
	}
	c.hold(clusterName, h)
	go func() { <-ctx.Done(); c.release(clusterName, h) }()
	// The first plan after the watches start reads what they list (it
	// reads the API server for a kind not listed within the wait).
	wait := time.NewTimer(syncWait)
	defer wait.Stop()
	for _, s := range h.stores {
		select {
		case <-s.listed:
		case <-wait.C:
			return nil
		case <-ctx.Done():
			return nil
		}
	}
	return nil
}

// syncWait is how long WatchInventory waits for its watches' first lists.
const syncWait = 30 * time.Second

// InventoryKinds are the kinds of the objects a render result puts into a
// cluster, sorted: what WatchInventory watches there. dests are the
// destinations that cluster is (both for the management Cluster itself).
func InventoryKinds(res *render.Result, dests ...render.Destination) []string {
	var kinds []string
	for _, o := range res.Objects {
		if slices.Contains(dests, o.Destination) && !slices.Contains(kinds, o.Kind()) {
			kinds = append(kinds, o.Kind())
		}
	}
	slices.Sort(kinds)
	return kinds
}

// driftStore is a Reflector's store that keeps only what tells a change
// and reports drift; the first list is what is there, not drift.
type driftStore struct {
	kind    string
	ours    func(metav1.Object) bool
	drifted func(Drift)
	// current reads the object as it is now (nil: not read): a watch
	// reports an object that left its label selection as deleted.
	current func(namespace, name string) (metav1.Object, error)

	// listed is closed by the first list.
	listed chan struct{}
	// refused: the last list or watch was refused (failed).
	refused atomic.Bool
	mu      sync.Mutex
	seen    map[string]seen // by namespace/name
}

type seen struct {
	resourceVersion string
	generation      int64
	meta            uint64 // hash of the labels and annotations
	ours            bool
	uid             types.UID
	byApply         bool // eksa-metrics holds an Apply entry of its managed fields
}

func (s *driftStore) seenOf(o metav1.Object) seen {
	return seen{resourceVersion: o.GetResourceVersion(), generation: o.GetGeneration(), meta: metaHash(o), ours: s.ours(o), uid: o.GetUID(), byApply: ownsByApply(o)}
}

// synced says whether the first list has been stored.
func (s *driftStore) synced() bool {
	select {
	case <-s.listed:
		return !s.refused.Load()
	default:
		return false
	}
}

// failed notes a list or watch the API server refused (forbidden, or the
// credentials no longer accepted): what the store holds may be stale, so
// plans read the API server instead, until a list succeeds again (Replace).
func (s *driftStore) failed(err error) {
	if apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err) {
		s.refused.Store(true)
	}
}

// get is what the store holds of namespace/name.
func (s *driftStore) get(key string) (seen, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	o, ok := s.seen[key]
	return o, ok
}

// snapshot is a copy of what the store holds, by namespace/name.
func (s *driftStore) snapshot() map[string]seen {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.seen)
}

func splitKey(key string) (namespace, name string) {
	namespace, name, _ = strings.Cut(key, "/")
	return namespace, name
}

func (s *driftStore) name(o metav1.Object) string {
	return templates.ObjectName(s.kind, o.GetNamespace(), o.GetName())
}

func objectKey(o metav1.Object) string { return o.GetNamespace() + "/" + o.GetName() }

func (s *driftStore) Add(obj any) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if o, ok := obj.(metav1.Object); ok {
		s.add(o)
	}
	return nil
}

func (s *driftStore) add(o metav1.Object) {
	if prev, ok := s.seen[objectKey(o)]; ok {
		s.update(prev, o)
		return
	}
	if s.ours(o) && !ownWrite(o) {
		s.drifted(Drift{Object: s.name(o), Action: "created"})
	}
	s.seen[objectKey(o)] = s.seenOf(o)
}

func (s *driftStore) Update(obj any) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if o, ok := obj.(metav1.Object); ok {
		s.add(o)
	}
	return nil
}

func (s *driftStore) update(prev seen, n metav1.Object) {
	now := s.seenOf(n)
	if (prev.ours || now.ours) && changed(prev, now) && !ownWrite(n) {
		s.drifted(Drift{Object: s.name(n), Action: "edited"})
	}
	s.seen[objectKey(n)] = now
}

func (s *driftStore) Delete(obj any) error {
	if t, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	o, ok := obj.(metav1.Object)
	if !ok {
		return nil
	}
	s.mu.Lock()
	delete(s.seen, objectKey(o))
	s.mu.Unlock()
	// Read without the lock: a plan reading the store does not wait on it.
	if s.ours(o) && !s.movedAway(o.GetNamespace(), o.GetName()) {
		s.drifted(Drift{Object: s.name(o), Action: "deleted"})
	}
	return nil
}

// movedAway says whether an object reported gone still exists and is no
// longer ours: it carries another Cluster's label (two Clusters pointed at
// one API server take the same objects in turn) or lost our labels. The
// watch reports such an object as deleted, with its content before the
// change; re-planning for it would take it back, and the other Cluster
// would take it again, without end. An object that is gone, or that cannot
// be read, is drift.
func (s *driftStore) movedAway(namespace, name string) bool {
	if s.current == nil {
		return false
	}
	now, err := s.current(namespace, name)
	return err == nil && !s.ours(now)
}

// Replace is the first list (recorded) or a relist after the watch was
// lost: what changed or went meanwhile is drift as a watch event would be.
func (s *driftStore) Replace(list []any, _ string) error {
	defer s.refused.Store(false)
	for _, k := range s.replace(list) {
		ns, name := splitKey(k)
		if !s.movedAway(ns, name) {
			s.drifted(Drift{Object: templates.ObjectName(s.kind, ns, name), Action: "deleted"})
		}
	}
	return nil
}

// replace stores a list and returns the keys of the objects of ours it
// no longer holds.
func (s *driftStore) replace(list []any) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.seen == nil {
		s.seen = make(map[string]seen, len(list))
		for _, obj := range list {
			if o, ok := obj.(metav1.Object); ok {
				s.seen[objectKey(o)] = s.seenOf(o)
			}
		}
		if s.listed != nil {
			close(s.listed)
		}
		return nil
	}
	gone := maps.Clone(s.seen)
	for _, obj := range list {
		if o, ok := obj.(metav1.Object); ok {
			delete(gone, objectKey(o))
			s.add(o)
		}
	}
	var ours []string
	for k, prev := range gone {
		if prev.ours {
			ours = append(ours, k)
		}
		delete(s.seen, k)
	}
	slices.Sort(ours)
	return ours
}

func (s *driftStore) Resync() error { return nil }

// changed: a spec (generation), label or annotation change, or any change
// of an object without a generation (RBAC, ConfigMaps, Secrets, Services).
func changed(o, n seen) bool {
	if o.resourceVersion == n.resourceVersion {
		return false // the same object again
	}
	if n.generation == 0 {
		return true
	}
	return o.generation != n.generation || o.meta != n.meta
}

// metaHash hashes an object's labels and annotations.
func metaHash(o metav1.Object) uint64 {
	h := fnv.New64a()
	for i, m := range []map[string]string{o.GetLabels(), o.GetAnnotations()} {
		for _, k := range slices.Sorted(maps.Keys(m)) {
			fmt.Fprintf(h, "%d\x00%s\x00%s\x00", i, k, m[k])
		}
	}
	return h.Sum64()
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
