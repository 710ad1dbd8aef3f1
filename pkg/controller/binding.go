package controller

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	metricsv1alpha1 "github.com/eksa-metrics/eksa-metrics/pkg/apis/metrics/v1alpha1"
	"github.com/eksa-metrics/eksa-metrics/pkg/render"
)

// Each Cluster's state is a MetricsConfigBinding in the management cluster,
// written when it changes and read back from the cache: a restarted
// controller knows at once what it applied where, and a MetricsConfig's
// status only sums the bindings up.

// FieldOwner is the controller's server-side apply field manager for the
// objects of its own API (every shard's the same: a Cluster that moves to
// another shard keeps its binding).
const FieldOwner = "eksa-metrics-controller"

// BindingName is the name of the binding of a Cluster and a MetricsConfig:
// <cluster>.<metricsconfig>, so that `kubectl get mcb` sorts by Cluster
// (an EKS Anywhere Cluster's name has no dot).
func BindingName(metricsConfig, cluster string) string { return cluster + "." + metricsConfig }

type bindingKey struct {
	mc      types.NamespacedName
	cluster string
}

// results is what the Cluster controller keeps in memory beside the
// bindings: what this process applied or released (the cache may not have
// the binding yet), the consecutive failures for the backoff, the drift
// repairs not yet recorded, and the last status write of each
// MetricsConfig.
type results struct {
	mu       sync.Mutex
	known    map[bindingKey]bool // true: applied by this process; false: released
	failures map[bindingKey]int
	drifts   map[types.NamespacedName]int64
	written  map[types.NamespacedName]time.Time
}

func newResults() *results {
	return &results{known: map[bindingKey]bool{}, failures: map[bindingKey]int{},
		drifts: map[types.NamespacedName]int64{}, written: map[types.NamespacedName]time.Time{}}
}

// backoff after n consecutive failures: 10 s, doubling, at most 5 minutes.
func backoff(n int) time.Duration {
	d := 10 * time.Second
	for i := 1; i < n && d < 5*time.Minute; i++ {
		d *= 2
	}
	return min(d, 5*time.Minute)
}

// done records an attempt for a Cluster; a failure returns when to try
// again.
func (r *results) done(k bindingKey, failed bool) time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.known[k] = true
	if !failed {
		delete(r.failures, k)
		return 0
	}
	r.failures[k]++
	return backoff(r.failures[k])
}

func (r *results) release(k bindingKey) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.known[k] = false
	delete(r.failures, k)
}

// state: applied (true, true), released (false, true) by this process, or
// not known to it (_, false).
func (r *results) state(k bindingKey) (applied, known bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	applied, known = r.known[k]
	return applied, known
}

func (r *results) forget(mc types.NamespacedName) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for k := range r.known {
		if k.mc == mc {
			delete(r.known, k)
			delete(r.failures, k)
		}
	}
	delete(r.written, mc)
}

// drifted counts a drift repair of a Cluster, recorded in its binding by
// the next write.
func (r *results) drifted(cluster types.NamespacedName) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.drifts[cluster]++
}

func (r *results) pendingDrifts(cluster types.NamespacedName) int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.drifts[cluster]
}

func (r *results) recordedDrifts(cluster types.NamespacedName, n int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.drifts[cluster] -= n; r.drifts[cluster] <= 0 {
		delete(r.drifts, cluster)
	}
}

// bindingOf reads a Cluster's binding from the cache (nil when there is
// none).
func (r *Reconciler) bindingOf(ctx context.Context, mc types.NamespacedName, cluster string) (*metricsv1alpha1.MetricsConfigBinding, error) {
	var b metricsv1alpha1.MetricsConfigBinding
	err := r.Client.Get(ctx, types.NamespacedName{Namespace: mc.Namespace, Name: BindingName(mc.Name, cluster)}, &b)
	switch {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("reading MetricsConfigBinding %s/%s: %w", mc.Namespace, BindingName(mc.Name, cluster), err)
	}
	return &b, nil
}

// stateOf is a Cluster's binding (nil when there is none) and a copy of
// its status, the state a reconcile starts from.
func (r *Reconciler) stateOf(ctx context.Context, k bindingKey) (*metricsv1alpha1.MetricsConfigBinding, metricsv1alpha1.MetricsConfigBindingStatus, error) {
	b, err := r.bindingOf(ctx, k.mc, k.cluster)
	if err != nil || b == nil {
		return nil, metricsv1alpha1.MetricsConfigBindingStatus{}, err
	}
	return b, *b.Status.DeepCopy(), nil
}

// has: what the MetricsConfig applied to the Cluster may still be there
// (this process applied it, or a binding of this MetricsConfig, which the
// controller wrote, says so).
func (r *Reconciler) has(ctx context.Context, mc *metricsv1alpha1.MetricsConfig, cluster string) bool {
	key := client.ObjectKeyFromObject(mc)
	if applied, known := r.results.state(bindingKey{key, cluster}); known {
		return applied
	}
	b, err := r.bindingOf(ctx, key, cluster)
	return err != nil || b != nil && ownedBy(b, mc) // unreadable: assume it is there
}

// writeBinding records a Cluster's state, when it differs from its
// binding's: one server-side apply, creating it or changing it; none at
// rest. The drift repairs counted since the last write are added.
func (r *Reconciler) writeBinding(ctx context.Context, mc *metricsv1alpha1.MetricsConfig, obj *unstructured.Unstructured, prev *metricsv1alpha1.MetricsConfigBinding, st metricsv1alpha1.MetricsConfigBindingStatus) error {
	clusterKey := types.NamespacedName{Namespace: mc.Namespace, Name: obj.GetName()}
	drifts := r.results.pendingDrifts(clusterKey)
	if prev != nil {
		st.DriftRepairs = prev.Status.DriftRepairs
	}
	st.DriftRepairs += drifts
	st.Reason = summaryReason(st.Conditions)
	labels := map[string]string{
		metricsv1alpha1.BindingClusterLabel:       obj.GetName(),
		metricsv1alpha1.BindingMetricsConfigLabel: mc.Name,
	}
	if s := obj.GetLabels()[ShardLabel]; s != "" {
		labels[ShardLabel] = s
	}
	spec := metricsv1alpha1.MetricsConfigBindingSpec{ClusterName: obj.GetName(), MetricsConfigName: mc.Name}
	if prev != nil && equality.Semantic.DeepEqual(prev.Status, st) && equality.Semantic.DeepEqual(prev.Spec, spec) &&
		equality.Semantic.DeepEqual(prev.Labels, labels) && ownedBy(prev, mc) {
		return nil
	}
	b := &metricsv1alpha1.MetricsConfigBinding{
		TypeMeta: metav1.TypeMeta{APIVersion: metricsv1alpha1.APIVersion, Kind: metricsv1alpha1.BindingKind},
		ObjectMeta: metav1.ObjectMeta{Namespace: mc.Namespace, Name: BindingName(mc.Name, obj.GetName()), Labels: labels,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: metricsv1alpha1.APIVersion, Kind: metricsv1alpha1.Kind, Name: mc.Name, UID: mc.UID,
				Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}}},
		Spec:   spec,
		Status: st,
	}
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(b)
	if err != nil {
		return err
	}
	unstructured.RemoveNestedField(u, "metadata", "creationTimestamp")
	obj2 := &unstructured.Unstructured{Object: u}
	if err := r.Client.Patch(ctx, obj2, client.Apply, client.FieldOwner(FieldOwner), client.ForceOwnership); err != nil {
		return fmt.Errorf("writing MetricsConfigBinding %s/%s: %w", b.Namespace, b.Name, err)
	}
	r.results.recordedDrifts(clusterKey, drifts)
	return nil
}

func ownedBy(b *metricsv1alpha1.MetricsConfigBinding, mc *metricsv1alpha1.MetricsConfig) bool {
	refs := b.GetOwnerReferences()
	return len(refs) == 1 && refs[0].UID == mc.UID && refs[0].Kind == metricsv1alpha1.Kind && ptr.Deref(refs[0].Controller, false)
}

// deleteBinding removes a released Cluster's binding.
func (r *Reconciler) deleteBinding(ctx context.Context, mc types.NamespacedName, cluster string) error {
	b := &metricsv1alpha1.MetricsConfigBinding{ObjectMeta: metav1.ObjectMeta{Namespace: mc.Namespace, Name: BindingName(mc.Name, cluster)}}
	if err := r.Client.Delete(ctx, b); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("deleting MetricsConfigBinding %s/%s: %w", b.Namespace, b.Name, err)
	}
	return nil
}

// summaryReason is the reason of the first condition that is not True, in
// the order of a pass; Verified when all are.
func summaryReason(conds []metav1.Condition) string {
	for _, t := range []string{metricsv1alpha1.ConditionRendered, metricsv1alpha1.ConditionApplied, metricsv1alpha1.ConditionVerified} {
		if c := meta.FindStatusCondition(conds, t); c != nil && c.Status != metav1.ConditionTrue {
			return c.Reason
		}
	}
	if meta.IsStatusConditionTrue(conds, metricsv1alpha1.ConditionVerified) {
		return metricsv1alpha1.ReasonVerified
	}
	return ""
}

// inventory lists what a render keeps in the clusters, as the binding
// records it, and the digest of its content.
func inventory(res *render.Result) ([]string, string) {
	var out []string
	h := sha256.New()
	for _, o := range res.Objects {
		if o.Destination == render.Prometheus {
			continue // files, not objects
		}
		out = append(out, string(o.Destination)+" "+o.String())
		data, _ := json.Marshal(o.Object)
		h.Write(data)
	}
	for _, e := range res.DeploymentEdits {
		out = append(out, fmt.Sprintf("management Deployment %s/%s (edited)", e.Component.Namespace, e.Component.Deployment))
		data, _ := json.Marshal(e)
		h.Write(data)
	}
	if res.KubeProxyEdit != nil {
		out = append(out, "workload ConfigMap kube-system/kube-proxy (edited)")
		data, _ := json.Marshal(res.KubeProxyEdit)
		h.Write(data)
	}
	data, _ := json.Marshal(res.Change)
	h.Write(data)
	sort.Strings(out)
	return slices.Compact(out), hex.EncodeToString(h.Sum(nil))
}
