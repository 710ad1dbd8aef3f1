package controller

import (
	"context"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	metricsv1alpha1 "github.com/eksa-metrics/eksa-metrics/pkg/apis/metrics/v1alpha1"
	"github.com/eksa-metrics/eksa-metrics/pkg/cluster"
)

// configReconciler is the MetricsConfig controller: it keeps each
// MetricsConfig's finalizer and sums its bindings up into its status; it
// applies nothing.
type configReconciler struct {
	shard
	client   client.Client
	clusters client.Reader
	results  *results
	recorder events.EventRecorder
}

// reconcileConfig keeps a MetricsConfig's finalizer and writes its status
// from its Clusters' states; it applies nothing itself.
func (r *configReconciler) reconcileConfig(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	var mc metricsv1alpha1.MetricsConfig
	if err := r.client.Get(ctx, req.NamespacedName, &mc); err != nil {
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
			if err := r.client.Patch(ctx, &mc, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
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
		return reconcile.Result{}, r.client.Patch(ctx, &mc, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{}))
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
	r.selectsNothing(&mc, st)
	return reconcile.Result{}, r.writeStatus(ctx, &mc, st)
}

// selectsNothing records a Warning event when a MetricsConfig comes to
// select nothing (or selects nothing for another reason than before):
// `kubectl describe mc` and `kubectl events` show it beside the condition.
func (r *configReconciler) selectsNothing(mc *metricsv1alpha1.MetricsConfig, st metricsv1alpha1.MetricsConfigStatus) {
	next := meta.FindStatusCondition(st.Conditions, metricsv1alpha1.ConditionReady)
	if r.recorder == nil || next == nil || next.Reason != metricsv1alpha1.ReasonSelectsNothing {
		return
	}
	conds := mc.Status.Conditions
	if r.shard != "" {
		conds = nil
		for _, s := range mc.Status.Shards {
			if s.Name == string(r.shard) {
				conds = s.Conditions
			}
		}
	}
	if prev := meta.FindStatusCondition(conds, metricsv1alpha1.ConditionReady); prev != nil && prev.Reason == next.Reason && prev.Message == next.Message {
		return
	}
	r.recorder.Eventf(mc, nil, corev1.EventTypeWarning, metricsv1alpha1.ReasonSelectsNothing, "Select", "%s", next.Message)
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
func (r *configReconciler) writeStatus(ctx context.Context, mc *metricsv1alpha1.MetricsConfig, st metricsv1alpha1.MetricsConfigStatus) error {
	if string(r.shard) != "" {
		shard := metricsv1alpha1.ShardStatus{Name: string(r.shard), ObservedGeneration: st.ObservedGeneration, SelectedClusters: st.SelectedClusters,
			ReadyClusters: st.ReadyClusters, Conditions: st.Conditions}
		if i := slices.IndexFunc(mc.Status.Shards, func(s metricsv1alpha1.ShardStatus) bool { return s.Name == string(r.shard) }); i >= 0 && equality.Semantic.DeepEqual(mc.Status.Shards[i], shard) {
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
		return r.client.Status().Patch(ctx, u, client.Apply, client.FieldOwner("eksa-metrics-controller-shard-"+string(r.shard)), client.ForceOwnership)
	}
	st.Shards = mc.Status.Shards // the shards' own
	if equality.Semantic.DeepEqual(mc.Status, st) {
		return nil
	}
	original := mc.DeepCopy()
	mc.Status = st
	// The controller is the top level's only writer: a patch, not an update
	// that a newer resourceVersion (its own finalizer patch) would refuse.
	return r.client.Status().Patch(ctx, mc, client.MergeFrom(original))
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

// summary computes a MetricsConfig's status from its Clusters' bindings
// (in the cache: complete at once after a restart), and how many Clusters
// still hold what it applied.
func (r *configReconciler) summary(ctx context.Context, mc *metricsv1alpha1.MetricsConfig) (metricsv1alpha1.MetricsConfigStatus, int, error) {
	var clusters unstructured.UnstructuredList
	clusters.SetGroupVersionKind(ClusterGVK)
	if err := r.clusters.List(ctx, &clusters, client.InNamespace(mc.Namespace)); err != nil {
		return mc.Status, 0, fmt.Errorf("listing EKS Anywhere Clusters: %w", err)
	}
	var bindings metricsv1alpha1.MetricsConfigBindingList
	// Read only: the cache's objects, not a copy of each (2,000 at a time).
	if err := r.client.List(ctx, &bindings, client.InNamespace(mc.Namespace), client.MatchingLabels{metricsv1alpha1.BindingMetricsConfigLabel: mc.Name}, client.UnsafeDisableDeepCopy); err != nil {
		return mc.Status, 0, fmt.Errorf("listing MetricsConfigBindings: %w", err)
	}
	mcKey := client.ObjectKeyFromObject(mc)
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
	entries := map[string]*metricsv1alpha1.MetricsConfigBinding{}
	for i := range bindings.Items {
		b := &bindings.Items[i]
		name := b.Spec.ClusterName
		if b.Labels[ShardLabel] != string(r.shard) || !ownedBy(b, mc) {
			continue // another shard's, or an earlier MetricsConfig's of that name
		}
		if applied, known := r.results.state(bindingKey{mcKey, name}); known && !applied {
			continue // released; the cache has not seen its deletion yet
		}
		entries[name] = b
	}
	prev := mc.Status
	if string(r.shard) != "" {
		prev = metricsv1alpha1.MetricsConfigStatus{}
		for _, s := range mc.Status.Shards {
			if s.Name == string(r.shard) {
				prev = metricsv1alpha1.MetricsConfigStatus{ObservedGeneration: s.ObservedGeneration, Conditions: s.Conditions}
			}
		}
	}
	st := metricsv1alpha1.MetricsConfigStatus{ObservedGeneration: prev.ObservedGeneration, Conditions: slices.Clone(prev.Conditions)}
	st.SelectedClusters = int32(len(selected))
	current, failing, pending := true, 0, 0
	for name := range selected {
		b, ok := entries[name]
		if !ok || b.Status.ObservedGeneration != mc.Generation {
			current = false
		}
		if ok && meta.IsStatusConditionTrue(b.Status.Conditions, metricsv1alpha1.ConditionApplied) {
			st.ReadyClusters++
		}
	}
	for name, b := range entries {
		if !selected[name] {
			pending++ // a Cluster being released, or failing to be
		}
		if b.Status.LastError != "" || !selected[name] || !exists[name] {
			failing++
		}
	}
	if current {
		st.ObservedGeneration = mc.Generation
	}
	summary := metav1.Condition{Type: metricsv1alpha1.ConditionReady, Status: metav1.ConditionTrue, Reason: metricsv1alpha1.ReasonApplied,
		Message: fmt.Sprintf("%d of %d selected Clusters applied", st.ReadyClusters, st.SelectedClusters), ObservedGeneration: mc.Generation}
	switch {
	case len(selected) == 0 && len(entries) == 0 && mc.DeletionTimestamp.IsZero():
		summary.Status, summary.Reason, summary.Message = metav1.ConditionFalse, metricsv1alpha1.ReasonSelectsNothing, selectsNothing(mc, string(r.shard))
	case st.ReadyClusters != st.SelectedClusters || failing > 0 || !current:
		summary.Status, summary.Reason = metav1.ConditionFalse, metricsv1alpha1.ReasonNotAllApplied
		if failing > 0 {
			summary.Message += fmt.Sprintf("; %d failing or being released (kubectl -n %s get %s -l %s=%s)", failing, mc.Namespace, bindingResource, metricsv1alpha1.BindingMetricsConfigLabel, mc.Name)
		}
	}
	meta.SetStatusCondition(&st.Conditions, summary)
	if !mc.DeletionTimestamp.IsZero() {
		// Selected before the deletion, and not yet released.
		for i := range clusters.Items {
			c := &clusters.Items[i]
			if ok, _ := selects(mc, c.GetName(), c.GetLabels()); ok && r.keeps(c) {
				if applied, known := r.results.state(bindingKey{mcKey, c.GetName()}); !known || applied {
					if _, counted := entries[c.GetName()]; !counted {
						pending++
					}
				}
			}
		}
	}
	return st, pending, nil
}

// bindingResource is the bindings' resource, for the commands we print.
const bindingResource = "metricsconfigbindings"

// untilRenewal is how long until the earliest of the certificate renewals
// (zero, no requeue, when none is due; a minute at least).
func untilRenewal(renewals []time.Time, now time.Time) time.Duration {
	next := cluster.Earliest(renewals)
	if next.IsZero() {
		return 0
	}
	return max(next.Sub(now), time.Minute)
}
