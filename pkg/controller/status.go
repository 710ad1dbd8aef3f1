package controller

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	metricsv1alpha1 "github.com/eksa-metrics/eksa-metrics/pkg/apis/metrics/v1alpha1"
	"github.com/eksa-metrics/eksa-metrics/pkg/cluster"
)

// maxListed bounds status.clusters: the Clusters not applied first, then by
// name. A MetricsConfig's status is one object, which the API server
// refuses past 1.5 MiB; the counts and the Ready condition cover all.
const maxListed = 100

// results holds each Cluster's state, per MetricsConfig, as the Cluster
// controller last left it: what the MetricsConfig controller writes into
// the status. After a restart it is empty until each Cluster has been
// reconciled again; the status keeps the entries written before.
type results struct {
	mu      sync.Mutex
	m       map[types.NamespacedName]map[string]*result
	written map[types.NamespacedName]time.Time // the last status write
}

type result struct {
	status   metricsv1alpha1.ClusterStatus
	released bool // taken back: the status drops it
	failures int  // consecutive, for the backoff
}

func newResults() *results {
	return &results{m: map[types.NamespacedName]map[string]*result{}, written: map[types.NamespacedName]time.Time{}}
}

// backoff after n consecutive failures: 10 s, doubling, at most 5 minutes.
func backoff(n int) time.Duration {
	d := 10 * time.Second
	for i := 1; i < n && d < 5*time.Minute; i++ {
		d *= 2
	}
	return min(d, 5*time.Minute)
}

// set records a Cluster's state; a failure returns when to try again.
func (r *results) set(mc types.NamespacedName, st metricsv1alpha1.ClusterStatus, failed bool) time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.m[mc] == nil {
		r.m[mc] = map[string]*result{}
	}
	prev := r.m[mc][st.Name]
	res := &result{status: st}
	observe(mc, st, time.Now())
	if failed {
		res.failures = 1
		if prev != nil {
			res.failures = prev.failures + 1
		}
		r.m[mc][st.Name] = res
		return backoff(res.failures)
	}
	r.m[mc][st.Name] = res
	return 0
}

func (r *results) status(mc types.NamespacedName, name string) metricsv1alpha1.ClusterStatus {
	r.mu.Lock()
	defer r.mu.Unlock()
	if res, ok := r.m[mc][name]; ok && !res.released {
		return *res.status.DeepCopy()
	}
	return metricsv1alpha1.ClusterStatus{Name: name}
}

func (r *results) has(mc types.NamespacedName, name string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	res, ok := r.m[mc][name]
	return ok && !res.released
}

// any: some MetricsConfig of the Cluster's namespace has state for it.
func (r *results) any(cluster types.NamespacedName) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for mc, byName := range r.m {
		if res, ok := byName[cluster.Name]; ok && mc.Namespace == cluster.Namespace && !res.released {
			return true
		}
	}
	return false
}

func (r *results) release(mc types.NamespacedName, name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.m[mc] == nil {
		r.m[mc] = map[string]*result{}
	}
	r.m[mc][name] = &result{status: metricsv1alpha1.ClusterStatus{Name: name}, released: true}
	unobserve(mc, name)
}

func (r *results) forget(mc types.NamespacedName) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.m, mc)
	delete(r.written, mc)
	unobserve(mc, "")
}

// snapshot copies a MetricsConfig's states.
func (r *results) snapshot(mc types.NamespacedName) map[string]result {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string]result, len(r.m[mc]))
	for name, res := range r.m[mc] {
		out[name] = result{status: *res.status.DeepCopy(), released: res.released}
	}
	return out
}

// notify wakes the MetricsConfig controller for a MetricsConfig whose
// Clusters' states changed.
func (r *Reconciler) notify(mc types.NamespacedName) {
	r.configEvents <- event.GenericEvent{Object: &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: mc.Namespace, Name: mc.Name}}}
}

// reconcileConfig keeps a MetricsConfig's finalizer and writes its status
// from its Clusters' states; it applies nothing itself.
func (r *Reconciler) reconcileConfig(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	var mc metricsv1alpha1.MetricsConfig
	if err := r.Client.Get(ctx, req.NamespacedName, &mc); err != nil {
		if client.IgnoreNotFound(err) == nil {
			r.results.forget(req.NamespacedName)
		}
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if !mc.DeletionTimestamp.IsZero() {
		if !controllerutil.ContainsFinalizer(&mc, r.finalizer()) {
			return reconcile.Result{}, nil
		}
		st, pending, err := r.summary(ctx, &mc)
		if err != nil {
			return reconcile.Result{}, err
		}
		if pending == 0 {
			// Every Cluster it applied to is released: let it go.
			before := mc.DeepCopy()
			controllerutil.RemoveFinalizer(&mc, r.finalizer())
			if err := r.Client.Patch(ctx, &mc, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
				return reconcile.Result{}, err
			}
			r.results.forget(req.NamespacedName)
			return reconcile.Result{}, nil
		}
		return reconcile.Result{}, r.writeStatus(ctx, &mc, st)
	}
	if !controllerutil.ContainsFinalizer(&mc, r.finalizer()) {
		// A patch of the finalizer only (an Update would claim every
		// defaulted field of the spec). Its event starts the Clusters.
		before := mc.DeepCopy()
		controllerutil.AddFinalizer(&mc, r.finalizer())
		return reconcile.Result{}, r.Client.Patch(ctx, &mc, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{}))
	}
	// At most one status write per statusInterval: a fleet's first pass
	// changes a Cluster's state many times a second.
	if wait := r.results.throttle(req.NamespacedName, time.Now()); wait > 0 {
		return reconcile.Result{RequeueAfter: wait}, nil
	}
	st, _, err := r.summary(ctx, &mc)
	if err != nil {
		return reconcile.Result{}, err
	}
	return reconcile.Result{}, r.writeStatus(ctx, &mc, st)
}

// statusInterval is the least time between two status writes of one
// MetricsConfig.
const statusInterval = 2 * time.Second

// throttle says how long to wait before the next status write of a
// MetricsConfig (zero: now, and the write is counted).
func (r *results) throttle(mc types.NamespacedName, now time.Time) time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	if last, ok := r.written[mc]; ok && now.Sub(last) < statusInterval {
		return statusInterval - now.Sub(last)
	}
	r.written[mc] = now
	return 0
}

// writeStatus writes the status when it changed: at rest, nothing is
// sent. The unsharded controller patches the top-level fields; a shard
// applies its own entry of status.shards (server-side apply, a field
// manager per shard), so that shards never overwrite each other.
func (r *Reconciler) writeStatus(ctx context.Context, mc *metricsv1alpha1.MetricsConfig, st metricsv1alpha1.MetricsConfigStatus) error {
	if r.Shard != "" {
		shard := metricsv1alpha1.ShardStatus{Name: r.Shard, ObservedGeneration: st.ObservedGeneration, SelectedClusters: st.SelectedClusters,
			ReadyClusters: st.ReadyClusters, Conditions: st.Conditions, Clusters: st.Clusters}
		if i := slices.IndexFunc(mc.Status.Shards, func(s metricsv1alpha1.ShardStatus) bool { return s.Name == r.Shard }); i >= 0 && equality.Semantic.DeepEqual(mc.Status.Shards[i], shard) {
			return nil
		}
		entry, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&shard)
		if err != nil {
			return err
		}
		u := &unstructured.Unstructured{Object: map[string]any{"status": map[string]any{"shards": []any{entry}}}}
		u.SetGroupVersionKind(metricsv1alpha1.GroupVersion.WithKind("MetricsConfig"))
		u.SetNamespace(mc.Namespace)
		u.SetName(mc.Name)
		return r.Client.Status().Patch(ctx, u, client.Apply, client.FieldOwner("eksa-metrics-controller-shard-"+r.Shard), client.ForceOwnership)
	}
	st.Shards = mc.Status.Shards // the shards' own
	if equality.Semantic.DeepEqual(mc.Status, st) {
		return nil
	}
	original := mc.DeepCopy()
	mc.Status = st
	// The controller is the top level's only writer: a patch, not an update
	// that a newer resourceVersion (its own finalizer patch) would refuse.
	return r.Client.Status().Patch(ctx, mc, client.MergeFrom(original))
}

// selectsNothing says why a MetricsConfig selects no Cluster, and what to set.
func selectsNothing(mc *metricsv1alpha1.MetricsConfig, shard string) string {
	where := fmt.Sprintf("in namespace %s", mc.Namespace)
	if shard != "" {
		where += fmt.Sprintf(" that shard %s keeps", shard)
	}
	switch {
	case mc.Spec.ClusterRef != nil:
		return fmt.Sprintf("selects no Cluster: spec.clusterRef names %q, and no EKS Anywhere Cluster of that name is %s", mc.Spec.ClusterRef.Name, where)
	case mc.Spec.ClusterSelector != nil && len(mc.Spec.ClusterSelector.MatchLabels) == 0 && len(mc.Spec.ClusterSelector.MatchExpressions) == 0:
		return "selects no Cluster: an empty spec.clusterSelector selects nothing (a fleet is chosen, never implied); give it matchLabels or matchExpressions"
	case mc.Spec.ClusterSelector != nil:
		return fmt.Sprintf("selects no Cluster: spec.clusterSelector matches no EKS Anywhere Cluster %s; label the Clusters to keep or change the selector", where)
	}
	return "selects no Cluster: set spec.clusterRef (one Cluster of this namespace) or spec.clusterSelector (Clusters by label)"
}

// summary computes a MetricsConfig's status from its Clusters' states (an
// entry written before a restart stands until its Cluster is reconciled
// again), and how many Clusters still hold what it applied.
func (r *Reconciler) summary(ctx context.Context, mc *metricsv1alpha1.MetricsConfig) (metricsv1alpha1.MetricsConfigStatus, int, error) {
	var clusters unstructured.UnstructuredList
	clusters.SetGroupVersionKind(ClusterGVK)
	if err := r.clusters.List(ctx, &clusters, client.InNamespace(mc.Namespace)); err != nil {
		return mc.Status, 0, fmt.Errorf("listing EKS Anywhere Clusters: %w", err)
	}
	exists, selected := map[string]bool{}, map[string]bool{}
	for i := range clusters.Items {
		c := &clusters.Items[i]
		if !r.keeps(c) {
			continue
		}
		exists[c.GetName()] = true
		if ok, _ := selects(mc, c.GetName(), c.GetLabels()); ok && c.GetDeletionTimestamp().IsZero() && mc.DeletionTimestamp.IsZero() {
			selected[c.GetName()] = true
		}
	}
	states := r.results.snapshot(client.ObjectKeyFromObject(mc))
	prev := mc.Status
	if r.Shard != "" {
		prev = metricsv1alpha1.MetricsConfigStatus{}
		for _, s := range mc.Status.Shards {
			if s.Name == r.Shard {
				prev = metricsv1alpha1.MetricsConfigStatus{ObservedGeneration: s.ObservedGeneration, Conditions: s.Conditions, Clusters: s.Clusters}
			}
		}
	}
	entries := map[string]metricsv1alpha1.ClusterStatus{}
	for _, s := range prev.Clusters {
		if exists[s.Name] {
			entries[s.Name] = s
		}
	}
	for name, res := range states {
		switch {
		case res.released || !exists[name]:
			delete(entries, name)
		default:
			entries[name] = res.status
		}
	}
	st := metricsv1alpha1.MetricsConfigStatus{ObservedGeneration: prev.ObservedGeneration, Conditions: slices.Clone(prev.Conditions)}
	st.SelectedClusters = int32(len(selected))
	current, failing := true, false
	for name := range selected {
		e, ok := entries[name]
		if !ok || e.ObservedGeneration != mc.Generation {
			current = false
		}
		if ok && meta.IsStatusConditionTrue(e.Conditions, metricsv1alpha1.ConditionApplied) {
			st.ReadyClusters++
		}
	}
	for name, e := range entries {
		if e.LastError != "" || !selected[name] {
			failing = true // a Cluster being released, or failing to be
		}
	}
	if current {
		st.ObservedGeneration = mc.Generation
	}
	names := slices.Collect(maps.Keys(entries))
	applied := func(n string) bool {
		return meta.IsStatusConditionTrue(entries[n].Conditions, metricsv1alpha1.ConditionApplied)
	}
	sort.Slice(names, func(i, j int) bool {
		if a, b := applied(names[i]), applied(names[j]); a != b {
			return !a
		}
		return names[i] < names[j]
	})
	listedNote := ""
	if len(names) > maxListed {
		listedNote = fmt.Sprintf("; status.clusters lists %d of %d (those not applied first)", maxListed, len(names))
		names = names[:maxListed]
	}
	sort.Strings(names)
	for _, n := range names {
		st.Clusters = append(st.Clusters, entries[n])
	}
	summary := metav1.Condition{Type: metricsv1alpha1.ConditionReady, Status: metav1.ConditionTrue, Reason: metricsv1alpha1.ReasonApplied,
		Message: fmt.Sprintf("%d of %d selected Clusters applied%s", st.ReadyClusters, st.SelectedClusters, listedNote), ObservedGeneration: mc.Generation}
	switch {
	case len(selected) == 0 && len(entries) == 0 && mc.DeletionTimestamp.IsZero():
		summary.Status, summary.Reason, summary.Message = metav1.ConditionFalse, metricsv1alpha1.ReasonSelectsNothing, selectsNothing(mc, r.Shard)
	case st.ReadyClusters != st.SelectedClusters || failing || !current:
		summary.Status, summary.Reason = metav1.ConditionFalse, metricsv1alpha1.ReasonNotAllApplied
	}
	meta.SetStatusCondition(&st.Conditions, summary)
	pending := 0
	for name := range entries {
		if !selected[name] {
			pending++
		}
	}
	if !mc.DeletionTimestamp.IsZero() {
		// Selected before the deletion, and not yet released.
		for i := range clusters.Items {
			c := &clusters.Items[i]
			if ok, _ := selects(mc, c.GetName(), c.GetLabels()); ok && r.keeps(c) {
				if res, seen := states[c.GetName()]; !seen || !res.released {
					if _, counted := entries[c.GetName()]; !counted {
						pending++
					}
				}
			}
		}
	}
	return st, pending, nil
}

// untilRenewal is how long until the earliest of the certificate renewals
// (zero, no requeue, when none is due; a minute at least).
func untilRenewal(renewals []time.Time, now time.Time) time.Duration {
	next := cluster.Earliest(renewals)
	if next.IsZero() {
		return 0
	}
	return max(next.Sub(now), time.Minute)
}
