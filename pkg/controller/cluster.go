package controller

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	metricsv1alpha1 "github.com/eksa-metrics/eksa-metrics/pkg/apis/metrics/v1alpha1"
	"github.com/eksa-metrics/eksa-metrics/pkg/cluster"
	"github.com/eksa-metrics/eksa-metrics/pkg/engine"
)

// clusterWork is what the fetch phase found for one Cluster: the Cluster
// (nil when it is gone), the MetricsConfig that keeps it, and those that
// applied to it before and no longer select it.
type clusterWork struct {
	key       types.NamespacedName
	obj       *unstructured.Unstructured
	selecting []*metricsv1alpha1.MetricsConfig
	releasing []*metricsv1alpha1.MetricsConfig
}

// reconcileCluster is the unit of work: one Cluster, whatever the event.
// ReconcileTimeout bounds one Cluster's reconcile: longer than a pass with
// cert-manager's issuance (engine.DefaultIssueTimeout) takes.
const ReconcileTimeout = 4 * time.Minute

func (r *Reconciler) reconcileCluster(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	// A deadline: a workload API server that answers each request just
	// before the client's timeout must not hold a worker for long.
	ctx, cancel := context.WithTimeout(ctx, ReconcileTimeout)
	defer cancel()
	w, err := r.fetch(ctx, req.NamespacedName)
	if err != nil {
		return reconcile.Result{}, err
	}
	var next []time.Duration
	var errs []error
	// Release first: a Cluster that moves from one MetricsConfig to another
	// is cleaned before the other applies.
	for _, mc := range w.releasing {
		k := bindingKey{client.ObjectKeyFromObject(mc), w.key.Name}
		prev, st, err := r.stateOf(ctx, k)
		if err != nil {
			return reconcile.Result{}, err
		}
		err = r.Guard.Err()
		if err == nil {
			err = r.release(ctx, mc, w.obj)
		}
		if err != nil {
			st.LastError = truncate("releasing it after it left the selection: " + errText(err))
			setCondition(&st, mc.Generation, metricsv1alpha1.ConditionApplied, false, metricsv1alpha1.ReasonReleaseFailed, st.LastError)
			next = append(next, r.results.done(k, true))
			if w.obj != nil { // a Cluster that is gone has no binding to keep
				errs = append(errs, r.writeBinding(ctx, mc, w.obj, prev, st))
			}
			continue
		}
		r.results.release(k)
		unobserve(k.mc, k.cluster)
		errs = append(errs, r.deleteBinding(ctx, k.mc, k.cluster))
	}
	// A MetricsConfig the policy refuses for this Cluster does not compete
	// for it: it gets its refusal (applyCluster stops at admitted).
	var admitted []*metricsv1alpha1.MetricsConfig
	for _, mc := range w.selecting {
		if r.Policy.admit(mc, w.obj) == nil {
			admitted = append(admitted, mc)
		}
	}
	switch {
	case len(w.selecting) > 0 && len(admitted) <= 1:
		for _, mc := range w.selecting {
			k := bindingKey{client.ObjectKeyFromObject(mc), w.key.Name}
			prev, prevStatus, err := r.stateOf(ctx, k)
			if err != nil {
				return reconcile.Result{}, err
			}
			st, renewAt := r.applyCluster(ctx, mc, w.obj, prevStatus)
			next = append(next, r.results.done(k, st.LastError != ""))
			observe(k.mc, k.cluster, st, time.Now())
			observeRenewal(k.mc, k.cluster, renewAt)
			if d := untilRenewal([]time.Time{renewAt}, time.Now()); d > 0 {
				next = append(next, d)
			}
			if slices.ContainsFunc(mc.Spec.Scrapers, func(s metricsv1alpha1.Scraper) bool { return s.Kind == metricsv1alpha1.ScraperServiceAccount }) {
				next = append(next, r.harm.every) // its token's rights asked again
			}
			errs = append(errs, r.writeBinding(ctx, mc, w.obj, prev, st))
		}
	case len(admitted) > 1:
		var names []string
		for _, mc := range admitted {
			names = append(names, mc.Name)
		}
		msg := fmt.Sprintf("MetricsConfigs %v all select this Cluster; a Cluster is kept by one: change their selectors so that one selects it", names)
		for _, mc := range admitted {
			k := bindingKey{client.ObjectKeyFromObject(mc), w.key.Name}
			prev, st, err := r.stateOf(ctx, k)
			if err != nil {
				return reconcile.Result{}, err
			}
			st.ObservedGeneration, st.LastError = mc.Generation, ""
			setCondition(&st, mc.Generation, metricsv1alpha1.ConditionRendered, false, metricsv1alpha1.ReasonSelectedTwice, msg)
			r.results.done(k, false)
			observe(k.mc, k.cluster, st, time.Now())
			errs = append(errs, r.writeBinding(ctx, mc, w.obj, prev, st))
		}
	default:
		if !r.keepsAny(ctx, w.key) {
			r.workloads.drop(w.key) // nothing of it is kept any more
			driftRepairs.DeleteLabelValues(w.key.Namespace, w.key.Name)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return reconcile.Result{}, err
	}
	// The soonest of the waits asked for (a success asks for none: 0).
	next = slices.DeleteFunc(next, func(d time.Duration) bool { return d <= 0 })
	if len(next) == 0 {
		return reconcile.Result{}, nil
	}
	return reconcile.Result{RequeueAfter: slices.Min(next)}, nil
}

// keepsAny: some MetricsConfig of the Cluster's namespace still has what
// it applied there (this process applied it, or a binding says so).
func (r *Reconciler) keepsAny(ctx context.Context, cluster types.NamespacedName) bool {
	var list metricsv1alpha1.MetricsConfigBindingList
	if err := r.Client.List(ctx, &list, client.InNamespace(cluster.Namespace), client.MatchingLabels{metricsv1alpha1.BindingClusterLabel: cluster.Name}); err != nil {
		return true
	}
	for _, b := range list.Items {
		mc := types.NamespacedName{Namespace: cluster.Namespace, Name: b.Spec.MetricsConfigName}
		if applied, known := r.results.state(bindingKey{mc, cluster.Name}); !known || applied {
			return true
		}
	}
	return false
}

// fetch reads, from the cache, the Cluster and the MetricsConfigs of its
// namespace, and sorts them: the one that selects it (with its finalizer,
// so that what it applies is taken back when it goes) and those that had
// it (their state or their status says so) and no longer do.
func (r *Reconciler) fetch(ctx context.Context, key types.NamespacedName) (*clusterWork, error) {
	w := &clusterWork{key: key}
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(ClusterGVK)
	switch err := r.clusters.Get(ctx, key, obj); {
	case apierrors.IsNotFound(err):
	case err != nil:
		return nil, err
	default:
		w.obj = obj
	}
	var list metricsv1alpha1.MetricsConfigList
	if err := r.Client.List(ctx, &list, client.InNamespace(key.Namespace)); err != nil {
		return nil, err
	}
	// A Cluster that is gone, being deleted or no longer this shard's gets
	// nothing more.
	active := w.obj != nil && w.obj.GetDeletionTimestamp().IsZero() && r.keeps(w.obj)
	for i := range list.Items {
		mc := &list.Items[i]
		var sel bool
		if w.obj != nil {
			var err error
			if sel, err = selects(mc, key.Name, w.obj.GetLabels()); err != nil {
				return nil, reconcile.TerminalError(err)
			}
		}
		live := mc.DeletionTimestamp.IsZero() && controllerutil.ContainsFinalizer(mc, r.finalizer())
		had := r.has(ctx, mc, key.Name) || !mc.DeletionTimestamp.IsZero() && sel
		switch {
		case active && sel && live:
			w.selecting = append(w.selecting, mc)
		case had && w.obj != nil && !r.keeps(w.obj):
			// Another shard keeps it now: let go without taking anything
			// back (its binding is the other shard's to write).
			r.results.release(bindingKey{client.ObjectKeyFromObject(mc), key.Name})
			unobserve(client.ObjectKeyFromObject(mc), key.Name)
		case had:
			w.releasing = append(w.releasing, mc)
		}
	}
	return w, nil
}

// applyCluster is the decide, apply and status phases for the Cluster and
// the MetricsConfig that selects it: its new state, and when its next
// serving certificate is due for renewal (zero when it has none or was not
// applied). It starts from prev, the Cluster's state as its binding has it
// (stateOf's copy, changed in place): what is not decided here stays so
// (conditions keep their transition times while their status holds), and
// a pass that changes nothing changes no field, so the binding is not
// written.
func (r *Reconciler) applyCluster(ctx context.Context, mc *metricsv1alpha1.MetricsConfig, obj *unstructured.Unstructured, prev metricsv1alpha1.MetricsConfigBindingStatus) (st metricsv1alpha1.MetricsConfigBindingStatus, renewAt time.Time) {
	st = prev // a named result: the deferred Verified below is returned
	st.ObservedGeneration, st.LastError = mc.Generation, ""
	set := func(t string, ok bool, reason, msg string) { setCondition(&st, mc.Generation, t, ok, reason, msg) }
	applied := false
	defer func() {
		if !applied {
			// Verified holds for the apply that preceded it: until one
			// succeeds again, an earlier result says nothing.
			meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: metricsv1alpha1.ConditionVerified, Status: metav1.ConditionUnknown,
				Reason: metricsv1alpha1.ReasonNotApplied, Message: "the checks run after a successful apply", ObservedGeneration: mc.Generation})
		}
	}()
	fail := func(t, reason string, err error) (metricsv1alpha1.MetricsConfigBindingStatus, time.Time) {
		set(t, false, reason, errText(err))
		st.LastError = truncate(errText(err))
		return st, time.Time{}
	}

	// Decide: whether the Cluster may be changed now, and what it renders to.
	if obj.GetAnnotations()[PausedAnnotation] == "true" {
		set(metricsv1alpha1.ConditionApplied, false, metricsv1alpha1.ReasonPaused, "the EKS Anywhere Cluster is paused: nothing is changed until the annotation "+PausedAnnotation+" is removed")
		return st, time.Time{}
	}
	if why := upgrading(obj); why != "" {
		set(metricsv1alpha1.ConditionApplied, false, metricsv1alpha1.ReasonUpgrading, why)
		return st, time.Time{}
	}
	// Who may have what done, before anything is read for it.
	if reason, err := r.admitted(ctx, mc, obj); err != nil {
		if reason == "" {
			reason = metricsv1alpha1.ReasonInvalidInput
		}
		return fail(metricsv1alpha1.ConditionRendered, reason, err)
	}
	res, err := r.render(ctx, mc, obj)
	if err != nil {
		return fail(metricsv1alpha1.ConditionRendered, metricsv1alpha1.ReasonInvalid, err)
	}
	if r.Policy.IsManagement(obj.GetNamespace(), obj.GetName()) {
		if err := r.Policy.holds(res); err != nil {
			return fail(metricsv1alpha1.ConditionRendered, metricsv1alpha1.ReasonNotAllowed, err)
		}
	}
	if !r.Policy.Privileged(mc.Namespace) {
		if err := tenantManagementObjects(res); err != nil {
			return fail(metricsv1alpha1.ConditionRendered, metricsv1alpha1.ReasonNotAllowed, err)
		}
	}
	set(metricsv1alpha1.ConditionRendered, true, metricsv1alpha1.ReasonRendered, fmt.Sprintf("%d objects", len(res.Objects)))

	// Apply: the engine's sequence, as the CLI's apply runs it; nothing
	// while the admission policy does not hold the controller.
	if err := r.Guard.Err(); err != nil {
		return fail(metricsv1alpha1.ConditionApplied, metricsv1alpha1.ReasonAdmissionPolicy, err)
	}
	cl, err := r.connect(ctx, obj, res)
	var refusedKubeconfig *cluster.KubeconfigRefusedError
	var invalidKubeconfig *cluster.KubeconfigInvalidError
	var notGranted *KubeconfigNotGrantedError
	switch {
	case errors.As(err, &notGranted):
		return fail(metricsv1alpha1.ConditionApplied, metricsv1alpha1.ReasonKubeconfigNotGranted, err)
	case errors.As(err, &refusedKubeconfig):
		return fail(metricsv1alpha1.ConditionApplied, metricsv1alpha1.ReasonKubeconfigRefused, err)
	case errors.As(err, &invalidKubeconfig):
		return fail(metricsv1alpha1.ConditionApplied, metricsv1alpha1.ReasonKubeconfigInvalid, err)
	case err != nil:
		return fail(metricsv1alpha1.ConditionApplied, metricsv1alpha1.ReasonUnreachable, err)
	}
	// A scraper token is minted only for a ServiceAccount that can do no
	// harm with it (the MetricsConfig's author chose the ServiceAccount).
	var harm *ScraperNotHarmlessError
	if err := scraperTokenHarmless(ctx, cl.Workload, res, &r.harm); errors.As(err, &harm) {
		return fail(metricsv1alpha1.ConditionApplied, metricsv1alpha1.ReasonNotAllowed, err)
	} else if err != nil {
		return fail(metricsv1alpha1.ConditionApplied, metricsv1alpha1.ReasonUnreachable, err)
	}
	pass, err := engine.NewPass(ctx, cl, res)
	var foreign *cluster.ForeignObjectError
	switch {
	case errors.As(err, &foreign):
		// Not an unreachable cluster (which the fleet alert pages for).
		return fail(metricsv1alpha1.ConditionApplied, metricsv1alpha1.ReasonForeignObject, err)
	case err != nil:
		return fail(metricsv1alpha1.ConditionApplied, metricsv1alpha1.ReasonUnreachable, err)
	}
	written, err := r.apply(ctx, mc, obj, pass)
	var refused *engine.RolloutRefusedError
	switch {
	case errors.As(err, &refused):
		set(metricsv1alpha1.ConditionApplied, false, metricsv1alpha1.ReasonRolloutNotAllowed, errText(err)+": set spec.allowControlPlaneRollout: true when a rollout is acceptable")
		return st, time.Time{}
	case err != nil:
		return fail(metricsv1alpha1.ConditionApplied, metricsv1alpha1.ReasonApplyFailed, err)
	}

	// Status: what was written, and what the checks after it say.
	applied = true
	set(metricsv1alpha1.ConditionApplied, true, metricsv1alpha1.ReasonApplied, fmt.Sprintf("the %d rendered objects and edits are applied", len(res.Objects)))
	st.Inventory, st.ContentHash = inventory(res)
	if ok, msg := engine.CheckApplied(ctx, cl, res); ok {
		set(metricsv1alpha1.ConditionVerified, true, metricsv1alpha1.ReasonVerified, msg)
	} else {
		set(metricsv1alpha1.ConditionVerified, false, metricsv1alpha1.ReasonCheckFailed, msg)
	}
	if len(written) > 0 || st.LastAppliedTime == nil {
		st.LastAppliedTime = ptr.To(metav1.NewTime(time.Now().Truncate(time.Second)))
	}
	if len(written) > 0 {
		st.RolledOut = written
	}
	renewAt = cluster.NextRenewal(pass.Certificates)
	if !renewAt.IsZero() {
		st.NextRenewalTime = ptr.To(metav1.NewTime(renewAt.Truncate(time.Second)))
	} else {
		st.NextRenewalTime = nil
	}
	return st, renewAt
}

func setCondition(st *metricsv1alpha1.MetricsConfigBindingStatus, generation int64, t string, ok bool, reason, msg string) {
	s := metav1.ConditionFalse
	if ok {
		s = metav1.ConditionTrue
	}
	meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: t, Status: s, Reason: reason, Message: truncate(msg), ObservedGeneration: generation})
}

// apply applies a pass; it returns what it wrote, and sends one event
// naming the objects written and one naming what now runs (two events per
// Cluster, not one per object: at fleet scale, events are most of a first
// pass's requests).
func (r *Reconciler) apply(ctx context.Context, mc *metricsv1alpha1.MetricsConfig, obj *unstructured.Unstructured, pass *engine.Pass) ([]string, error) {
	var written, where []string
	var mu sync.Mutex
	report := func(e cluster.Event) {
		switch e.Action {
		case "created", "configured", "edited", "deleted":
			mu.Lock()
			written = append(written, e.Object+" "+e.Action)
			where = append(where, fmt.Sprintf("%s %s in the %s", e.Object, e.Action, e.Cluster))
			mu.Unlock()
		}
	}
	err := pass.Apply(ctx, engine.ApplyOptions{
		ForceConflicts: true, // what EKS-A overwrote is taken back: the controller owns these fields
		Report:         report,
		AllowRollout:   func([]*cluster.Step) (bool, error) { return mc.Spec.AllowControlPlaneRollout, nil },
	})
	sort.Strings(written)
	sort.Strings(where)
	if len(written) > 0 && r.Recorder != nil {
		// One event per apply: the full list is the binding's status.rolledOut.
		r.event(mc, obj, "Applied", truncateTo(fmt.Sprintf("Cluster %s: %d objects written: %s", obj.GetName(), len(where), strings.Join(where, "; ")), maxNote))
		// What now runs and who was granted what, as PLAN.md says it, so
		// that `kubectl describe mc` shows it too: when it changed.
		if err == nil {
			if notes := runs(pass.Result); r.workloads.runsChanged(client.ObjectKeyFromObject(obj), notes) {
				for _, note := range notes {
					r.event(mc, obj, "Runs", note)
				}
			}
		}
	}
	return written, err
}

// release takes back what eksa-metrics created for a Cluster (engine.Release:
// its inventory, its serving certificates, and its KubeadmControlPlane
// items when the MetricsConfig allows a rollout). A Cluster that is gone
// took its workload cluster with it; one that was refused was never
// applied, so nothing of another Cluster's is touched.
func (r *Reconciler) release(ctx context.Context, mc *metricsv1alpha1.MetricsConfig, obj *unstructured.Unstructured) error {
	if obj == nil {
		return nil
	}
	if obj.GetAnnotations()[PausedAnnotation] == "true" {
		return fmt.Errorf("the Cluster is paused; its objects stay until it is resumed")
	}
	if reason, err := r.admitted(ctx, mc, obj); reason != "" {
		return nil
	} else if err != nil {
		return err
	}
	res, err := r.render(ctx, mc, obj)
	if err != nil {
		return err
	}
	cl, err := r.connect(ctx, obj, res)
	if err != nil {
		return err
	}
	err = engine.Release(ctx, cl, res, engine.ApplyOptions{ForceConflicts: true,
		AllowRollout: func([]*cluster.Step) (bool, error) { return mc.Spec.AllowControlPlaneRollout, nil }})
	var refused *engine.RolloutRefusedError
	if errors.As(err, &refused) {
		// Without a rollout allowed, the KubeadmControlPlane items stay;
		// everything else went.
		err = nil
	}
	if err == nil {
		r.workloads.drop(types.NamespacedName{Namespace: obj.GetNamespace(), Name: obj.GetName()})
	}
	return err
}

// event records a Normal event of an apply on the MetricsConfig, about a
// Cluster. client-go's broadcaster counts events of one regarding and
// related object, reason and action as repeats of the first, whatever their
// notes (tools/events getKey): a later apply's images would show as the
// first apply's again. The action carries a digest of the note, so that
// only the same note counts as a repeat.
func (r *Reconciler) event(mc *metricsv1alpha1.MetricsConfig, obj runtime.Object, reason, note string) {
	sum := sha256.Sum256([]byte(note))
	r.Recorder.Eventf(mc, obj, corev1.EventTypeNormal, reason, "Apply "+hex.EncodeToString(sum[:4]), "%s", note)
}
