// Package controller is the second driver of the engine: a controller in the
// management cluster that keeps every EKS Anywhere Cluster a MetricsConfig
// selects as the spec says, on the same rendering, planning and apply code
// as the CLI. It reacts to watches only: MetricsConfigs, EKS-A Clusters,
// KubeadmControlPlanes, the management Deployments it edits and the workload
// kubeconfig Secrets.
package controller

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	metricsv1alpha1 "github.com/eksa-metrics/eksa-metrics/pkg/apis/metrics/v1alpha1"
	"github.com/eksa-metrics/eksa-metrics/pkg/cluster"
	"github.com/eksa-metrics/eksa-metrics/pkg/components"
	"github.com/eksa-metrics/eksa-metrics/pkg/engine"
	"github.com/eksa-metrics/eksa-metrics/pkg/kubeadm"
	"github.com/eksa-metrics/eksa-metrics/pkg/render"
	"github.com/eksa-metrics/eksa-metrics/pkg/safetext"
	"github.com/eksa-metrics/eksa-metrics/pkg/spec"
	"github.com/eksa-metrics/eksa-metrics/pkg/validate"
)

// Finalizer makes a deleted MetricsConfig wait until what it applied is gone.
const Finalizer = "metrics.anywhere.eks.amazonaws.com/cleanup"

// PausedAnnotation is EKS-A's: a paused Cluster is left alone.
const PausedAnnotation = "anywhere.eks.amazonaws.com/paused"

// ClusterGVK is the EKS Anywhere Cluster.
var ClusterGVK = schema.GroupVersionKind{Group: "anywhere.eks.amazonaws.com", Version: "v1alpha1", Kind: "Cluster"}

var kcpGVK = schema.GroupVersionKind{Group: "controlplane.cluster.x-k8s.io", Kind: "KubeadmControlPlane"}

// Reconciler reconciles MetricsConfigs.
type Reconciler struct {
	// Client reads and writes the management cluster through the manager's cache.
	Client client.Client
	// Management is the management cluster for the engine (server-side apply,
	// planning, certificates).
	Management *cluster.Cluster
	// Concurrency bounds how many Clusters of one MetricsConfig are applied
	// at once.
	Concurrency int
	// Recorder receives an event per object changed in a cluster.
	Recorder events.EventRecorder
	// TrustKubeconfigSecrets accepts exec and auth-provider plugins, tokenFile
	// and local file paths in the workload kubeconfig Secrets (refused by
	// default: cluster.CheckSecretKubeconfig).
	TrustKubeconfigSecrets bool
	// Policy is the operator's: what a MetricsConfig may have the
	// controller do, the management cluster, the images.
	Policy Policy

	// capiCluster is the Cluster API Cluster kind in the version the
	// management cluster serves (empty when it serves none).
	capiCluster schema.GroupVersionKind
	mu          sync.Mutex
	workloads   map[types.NamespacedName]workload // by EKS-A Cluster namespace and name
}

type workload struct {
	hash    [32]byte // of the kubeconfig it was made from
	cluster *cluster.Cluster
}

// SetupWithManager registers the controller and its watches.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	r.workloads = map[types.NamespacedName]workload{}
	eksaCluster := &unstructured.Unstructured{}
	eksaCluster.SetGroupVersionKind(ClusterGVK)
	all := handler.EnqueueRequestsFromMapFunc(r.everyMetricsConfig)
	b := ctrl.NewControllerManagedBy(mgr)
	// The KubeadmControlPlane in the version the cluster serves by preference
	// (v1beta1 only up to Cluster API 1.10, EKS-A v0.24).
	if m, err := mgr.GetRESTMapper().RESTMapping(kcpGVK.GroupKind()); err == nil {
		kcp := &metav1.PartialObjectMetadata{}
		kcp.SetGroupVersionKind(m.GroupVersionKind)
		// Only a spec change (its generation) or a label change is worth a
		// re-plan: Cluster API's status and annotation churn is not.
		b = b.WatchesMetadata(kcp, all, builder.WithPredicates(predicate.NewPredicateFuncs(inEKSASystem), specOrLabels))
	} else if !meta.IsNoMatchError(err) {
		return err
	}
	// The Cluster API Cluster that says whose eksa-system objects are whose
	// (owned), as metadata.
	if m, err := mgr.GetRESTMapper().RESTMapping(capiClusterGK); err == nil {
		r.capiCluster = m.GroupVersionKind
		capi := &metav1.PartialObjectMetadata{}
		capi.SetGroupVersionKind(m.GroupVersionKind)
		b = b.WatchesMetadata(capi, all, builder.WithPredicates(predicate.NewPredicateFuncs(inEKSASystem), predicate.LabelChangedPredicate{}))
	} else if !meta.IsNoMatchError(err) {
		return err
	}
	return b.
		Named("metricsconfig").
		// Its own status updates change neither: no reconcile loop.
		For(&metricsv1alpha1.MetricsConfig{}, builder.WithPredicates(predicate.Or(predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}, deleting{}))).
		Watches(eksaCluster, handler.EnqueueRequestsFromMapFunc(r.selecting)).
		Watches(&appsv1.Deployment{}, all, builder.WithPredicates(predicate.NewPredicateFuncs(managedDeployment), specOrLabels)).
		// Secrets as metadata only: the cache never holds eksa-system's
		// keys and credentials; the one kubeconfig needed is read when used.
		WatchesMetadata(&corev1.Secret{}, all, builder.WithPredicates(predicate.NewPredicateFuncs(kubeconfigSecret))).
		Complete(r)
}

// specOrLabels passes creations, deletions and the updates that change a
// spec (the generation) or the labels.
var specOrLabels = predicate.Or(predicate.GenerationChangedPredicate{}, predicate.LabelChangedPredicate{})

// deleting passes the update that sets a deletion timestamp (which changes
// no generation).
type deleting struct{ predicate.Funcs }

func (deleting) Update(e event.UpdateEvent) bool {
	return e.ObjectOld.GetDeletionTimestamp().IsZero() && !e.ObjectNew.GetDeletionTimestamp().IsZero()
}

// managedDeployment: a Deployment of a management controller eksa-metrics
// may edit (the catalog's namespaces).
func managedDeployment(o client.Object) bool {
	return slices.ContainsFunc(components.ManagementCatalog, func(m components.Management) bool {
		return m.Namespace == o.GetNamespace() && m.Deployment == o.GetName()
	})
}

func kubeconfigSecret(o client.Object) bool {
	return inEKSASystem(o) && strings.HasSuffix(o.GetName(), "-kubeconfig")
}

func inEKSASystem(o client.Object) bool { return o.GetNamespace() == EKSASystemNamespace }

func (r *Reconciler) everyMetricsConfig(ctx context.Context, _ client.Object) []reconcile.Request {
	var list metricsv1alpha1.MetricsConfigList
	if err := r.Client.List(ctx, &list); err != nil {
		return nil
	}
	out := make([]reconcile.Request, 0, len(list.Items))
	for _, mc := range list.Items {
		out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: mc.Namespace, Name: mc.Name}})
	}
	return out
}

// selecting maps a Cluster to the MetricsConfigs that select it or selected
// it before (to clean up after a label change).
func (r *Reconciler) selecting(ctx context.Context, o client.Object) []reconcile.Request {
	var list metricsv1alpha1.MetricsConfigList
	if err := r.Client.List(ctx, &list, client.InNamespace(o.GetNamespace())); err != nil {
		return nil
	}
	var out []reconcile.Request
	for _, mc := range list.Items {
		ok, _ := selects(&mc, o.GetName(), o.GetLabels())
		had := slices.ContainsFunc(mc.Status.Clusters, func(s metricsv1alpha1.ClusterStatus) bool { return s.Name == o.GetName() })
		if ok || had {
			out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: mc.Namespace, Name: mc.Name}})
		}
	}
	return out
}

func selects(mc *metricsv1alpha1.MetricsConfig, name string, l map[string]string) (bool, error) {
	switch {
	case mc.Spec.ClusterRef != nil:
		return mc.Spec.ClusterRef.Name == name, nil
	case mc.Spec.ClusterSelector != nil:
		sel, err := metav1.LabelSelectorAsSelector(mc.Spec.ClusterSelector)
		if err != nil {
			return false, err
		}
		// An empty selector selects nothing, as Cluster API's
		// ClusterResourceSet has it: a fleet is chosen, never implied.
		return !sel.Empty() && sel.Matches(labels.Set(l)), nil
	}
	return false, nil
}

// Reconcile makes every selected Cluster match the MetricsConfig, cleans up
// the ones it no longer selects, and everything when it is deleted.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	var mc metricsv1alpha1.MetricsConfig
	if err := r.Client.Get(ctx, req.NamespacedName, &mc); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	original := mc.DeepCopy() // what the status patch is computed against
	if !mc.DeletionTimestamp.IsZero() {
		return reconcile.Result{}, r.finalize(ctx, &mc)
	}
	if !controllerutil.ContainsFinalizer(&mc, Finalizer) {
		// A patch of the finalizer only (an Update would claim every
		// defaulted field of the spec).
		before := mc.DeepCopy()
		controllerutil.AddFinalizer(&mc, Finalizer)
		if err := r.Client.Patch(ctx, &mc, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
			return reconcile.Result{}, err
		}
	}

	all, err := r.selected(ctx, &mc)
	if err != nil {
		return reconcile.Result{}, err
	}
	var selected []*unstructured.Unstructured // a Cluster being deleted gets nothing more
	for _, c := range all {
		if c.GetDeletionTimestamp().IsZero() {
			selected = append(selected, c)
		}
	}

	statuses := make([]metricsv1alpha1.ClusterStatus, len(selected))
	renewals := make([]time.Time, len(selected))
	old := map[string]metricsv1alpha1.ClusterStatus{}
	for _, s := range mc.Status.Clusters {
		old[s.Name] = s
	}
	engine.Parallel(ctx, len(selected), max(r.Concurrency, 1), func(i int) {
		statuses[i], renewals[i] = r.reconcileCluster(ctx, &mc, selected[i], old[selected[i].GetName()])
	})

	// Clusters no longer selected: take back what was applied to them.
	var retry bool
	for name := range old {
		if slices.ContainsFunc(selected, func(c *unstructured.Unstructured) bool { return c.GetName() == name }) {
			continue
		}
		if err := r.cleanup(ctx, &mc, name); err != nil {
			st := old[name]
			st.LastError = "cleaning up after it left the selection: " + err.Error()
			statuses = append(statuses, st)
			retry = true
		}
	}

	mc.Status.ObservedGeneration = mc.Generation
	mc.Status.Clusters = statuses
	mc.Status.SelectedClusters = int32(len(selected))
	ready := int32(0)
	for _, s := range statuses {
		if meta.IsStatusConditionTrue(s.Conditions, metricsv1alpha1.ConditionApplied) {
			ready++
		}
	}
	mc.Status.ReadyClusters = ready
	summary := metav1.Condition{Type: metricsv1alpha1.ConditionReady, Status: metav1.ConditionTrue, Reason: "Applied",
		Message: fmt.Sprintf("%d of %d selected Clusters applied", ready, len(selected)), ObservedGeneration: mc.Generation}
	if int(ready) != len(selected) || retry {
		summary.Status, summary.Reason = metav1.ConditionFalse, "NotAllApplied"
	}
	meta.SetStatusCondition(&mc.Status.Conditions, summary)
	// The controller is the status' only writer: a patch, not an update
	// that a newer resourceVersion (its own finalizer patch) would refuse.
	if err := r.Client.Status().Patch(ctx, &mc, client.MergeFrom(original)); err != nil {
		return reconcile.Result{}, err
	}
	if summary.Status == metav1.ConditionFalse {
		// Errors (an unreachable workload cluster) are retried with backoff;
		// a paused Cluster or a refused rollout waits for its next event.
		for _, s := range statuses {
			if s.LastError != "" {
				return reconcile.Result{RequeueAfter: time.Minute}, nil
			}
		}
		if retry {
			return reconcile.Result{RequeueAfter: time.Minute}, nil
		}
	}
	// Nothing watched changes when a serving certificate comes due: the
	// controller comes back for it then.
	return reconcile.Result{RequeueAfter: untilRenewal(renewals, time.Now())}, nil
}

// untilRenewal is how long until the earliest of the Clusters' certificate
// renewals (zero, no requeue, when none is due; a minute at least).
func untilRenewal(renewals []time.Time, now time.Time) time.Duration {
	next := cluster.Earliest(renewals)
	if next.IsZero() {
		return 0
	}
	return max(next.Sub(now), time.Minute)
}

// selected lists the EKS-A Clusters a MetricsConfig selects, by name.
func (r *Reconciler) selected(ctx context.Context, mc *metricsv1alpha1.MetricsConfig) ([]*unstructured.Unstructured, error) {
	var clusters unstructured.UnstructuredList
	clusters.SetGroupVersionKind(ClusterGVK)
	if err := r.Client.List(ctx, &clusters, client.InNamespace(mc.Namespace)); err != nil {
		return nil, fmt.Errorf("listing EKS Anywhere Clusters: %w", err)
	}
	var out []*unstructured.Unstructured
	for i := range clusters.Items {
		c := &clusters.Items[i]
		ok, err := selects(mc, c.GetName(), c.GetLabels())
		if err != nil {
			return nil, reconcile.TerminalError(err)
		}
		if ok {
			out = append(out, c)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].GetName() < out[j].GetName() })
	return out, nil
}

// reconcileCluster renders the MetricsConfig for one Cluster and applies it;
// it returns the Cluster's status and when its next serving certificate is
// due for renewal (zero when it has none or was not applied).
func (r *Reconciler) reconcileCluster(ctx context.Context, mc *metricsv1alpha1.MetricsConfig, obj *unstructured.Unstructured, prev metricsv1alpha1.ClusterStatus) (metricsv1alpha1.ClusterStatus, time.Time) {
	// A copy: prev shares its conditions with the MetricsConfig read from the
	// cache, which the status patch is computed against.
	st := metricsv1alpha1.ClusterStatus{Name: obj.GetName(), ObservedGeneration: mc.Generation, Conditions: slices.Clone(prev.Conditions)}
	set := func(t string, ok bool, reason, msg string) {
		s := metav1.ConditionFalse
		if ok {
			s = metav1.ConditionTrue
		}
		meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: t, Status: s, Reason: reason, Message: truncate(msg), ObservedGeneration: mc.Generation})
	}
	// Verified holds for the apply that preceded it: until this one
	// succeeds, an earlier result says nothing.
	meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: metricsv1alpha1.ConditionVerified, Status: metav1.ConditionUnknown,
		Reason: "NotApplied", Message: "the checks run after a successful apply", ObservedGeneration: mc.Generation})
	fail := func(t, reason string, err error) (metricsv1alpha1.ClusterStatus, time.Time) {
		set(t, false, reason, err.Error())
		st.LastError = truncate(err.Error())
		return st, time.Time{}
	}
	if obj.GetAnnotations()[PausedAnnotation] == "true" {
		set(metricsv1alpha1.ConditionApplied, false, "ClusterPaused", "the EKS Anywhere Cluster is paused: nothing is changed until the annotation "+PausedAnnotation+" is removed")
		st.RolledOut = prev.RolledOut
		return st, time.Time{}
	}
	if why := upgrading(obj); why != "" {
		set(metricsv1alpha1.ConditionApplied, false, "ClusterUpgrading", why)
		st.RolledOut = prev.RolledOut
		return st, time.Time{}
	}
	// Who may have what done, before anything is read for it.
	if reason, err := r.admitted(ctx, mc, obj); err != nil {
		if reason == "" {
			reason = "InvalidInput"
		}
		return fail(metricsv1alpha1.ConditionRendered, reason, err)
	}
	res, err := r.render(ctx, mc, obj)
	if err != nil {
		return fail(metricsv1alpha1.ConditionRendered, "Invalid", err)
	}
	if r.Policy.IsManagement(obj.GetNamespace(), obj.GetName()) {
		if err := r.Policy.holds(res); err != nil {
			return fail(metricsv1alpha1.ConditionRendered, metricsv1alpha1.ReasonNotAllowed, err)
		}
	}
	set(metricsv1alpha1.ConditionRendered, true, "Rendered", fmt.Sprintf("%d objects", len(res.Objects)))
	cl, err := r.clusters(ctx, obj, res)
	var refusedKubeconfig *cluster.KubeconfigRefusedError
	switch {
	case errors.As(err, &refusedKubeconfig):
		return fail(metricsv1alpha1.ConditionApplied, metricsv1alpha1.ReasonKubeconfigRefused, err)
	case err != nil:
		return fail(metricsv1alpha1.ConditionApplied, "Unreachable", err)
	}
	written, renewAt, err := r.apply(ctx, mc, cl, res, obj)
	var refused *engine.RolloutRefusedError
	switch {
	case errors.As(err, &refused):
		set(metricsv1alpha1.ConditionApplied, false, "RolloutNotAllowed", err.Error()+": set spec.allowControlPlaneRollout: true when a rollout is acceptable")
		return st, time.Time{}
	case err != nil:
		return fail(metricsv1alpha1.ConditionApplied, "ApplyFailed", err)
	}
	set(metricsv1alpha1.ConditionApplied, true, "Applied", fmt.Sprintf("%d objects written", len(written)))
	if ok, msg := verified(ctx, cl, res); ok {
		set(metricsv1alpha1.ConditionVerified, true, "Verified", msg)
	} else {
		set(metricsv1alpha1.ConditionVerified, false, "CheckFailed", msg)
	}
	st.RolledOut = prev.RolledOut
	if len(written) > 0 {
		st.RolledOut = written
	}
	return st, renewAt
}

// maxMessage bounds a condition message or last error: the API server
// refuses a condition message over 32768 bytes, and with it the whole status
// of the MetricsConfig.
const maxMessage = 4096

func truncate(s string) string {
	if len(s) <= maxMessage {
		return s
	}
	cut := maxMessage - len(" … (truncated)")
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + " … (truncated)"
}

// verifyChecks are the checks of validate --kubeconfig that the controller
// runs after each apply: what apply itself cannot see (the scraper
// identities, the Prometheus that should select the ServiceMonitors, the
// management controllers' accounts and labels), at a few reads each. The
// others that read the live clusters hold by construction after a
// successful apply (drift; serving-certificates: apply has just made or
// renewed them; prometheus-operator-crds: the ServiceMonitors were
// accepted), so running them would only read everything again. Reaching
// the endpoints themselves is verify's job, from where the scraper runs.
var verifyChecks = []string{"scraper-identities", "prometheus-selects-monitors", "management-components"}

// verified runs verifyChecks; it says whether none failed, and what they found.
func verified(ctx context.Context, cl *engine.Clusters, res *render.Result) (bool, string) {
	skip := map[string]bool{}
	for _, c := range validate.Checks() {
		skip[c.Name] = !slices.Contains(verifyChecks, c.Name)
	}
	var failed, warned, passed []string
	for _, r := range validate.Run(ctx, &validate.Input{Path: res.Config.ClusterName, Result: res, Management: cl.Management, Workload: cl.Workload}, skip) {
		line := r.Name + ": " + r.Message
		if len(r.Details) > 0 {
			line += " (" + strings.Join(r.Details, "; ") + ")"
		}
		switch r.Status {
		case validate.Fail, validate.Error:
			failed = append(failed, line)
		case validate.Warn:
			warned = append(warned, line)
		case validate.Pass:
			passed = append(passed, r.Name)
		}
	}
	if len(failed) > 0 {
		return false, strings.Join(append(failed, warned...), "; ")
	}
	msg := fmt.Sprintf("%d checks pass (%s)", len(passed), strings.Join(passed, ", "))
	if len(warned) > 0 {
		msg += "; " + strings.Join(warned, "; ")
	}
	return true, msg
}

// upgrading says why EKS Anywhere is busy with a Cluster (an upgrade or
// another change it has not finished: its Ready condition is False, or it
// has not reconciled the Cluster's latest generation), "" when it is not or
// the Cluster has no status yet. The controller waits: its status changes
// are watched.
func upgrading(obj *unstructured.Unstructured) string {
	conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == "Ready" && m["status"] == "False" {
			return fmt.Sprintf("EKS Anywhere reports the Cluster not Ready (%v: %v): waiting until its upgrade or reconcile finishes", m["reason"], m["message"])
		}
	}
	if rg, ok, _ := unstructured.NestedInt64(obj.Object, "status", "reconciledGeneration"); ok && rg < obj.GetGeneration() {
		return fmt.Sprintf("EKS Anywhere has reconciled generation %d of the Cluster, not yet %d: waiting until it has", rg, obj.GetGeneration())
	}
	return ""
}

// apply plans and applies one Cluster; it returns what it wrote and when
// its next serving certificate is due for renewal.
func (r *Reconciler) apply(ctx context.Context, mc *metricsv1alpha1.MetricsConfig, cl *engine.Clusters, res *render.Result, obj *unstructured.Unstructured) ([]string, time.Time, error) {
	certSteps, err := engine.PlanCertificates(ctx, cl, res)
	if err != nil {
		return nil, time.Time{}, err
	}
	steps, err := engine.Plan(ctx, cl, res)
	if err != nil {
		return nil, time.Time{}, err
	}
	var written []string
	var mu sync.Mutex
	report := func(e cluster.Event) {
		switch e.Action {
		case "created", "configured", "edited", "deleted":
			mu.Lock()
			written = append(written, e.Object+" "+e.Action)
			mu.Unlock()
			if r.Recorder != nil {
				r.Recorder.Eventf(mc, obj, corev1.EventTypeNormal, "Applied", "Apply", "%s %s in the %s (Cluster %s)", e.Object, e.Action, e.Cluster, obj.GetName())
			}
		}
	}
	err = engine.Apply(ctx, cl, res, steps, engine.ApplyOptions{
		ForceConflicts: true, // what EKS-A overwrote is taken back: the controller owns these fields
		Report:         report, Certificates: certSteps,
		AllowRollout: func([]*cluster.Step) (bool, error) { return mc.Spec.AllowControlPlaneRollout, nil },
	})
	sort.Strings(written)
	if err == nil && len(written) > 0 && r.Recorder != nil {
		// What now runs and who was granted what, as PLAN.md says it, so
		// that `kubectl describe mc` shows it too.
		r.Recorder.Eventf(mc, obj, corev1.EventTypeNormal, "Runs", "Apply", "%s", truncate(runs(res)))
	}
	return written, cluster.NextRenewal(certSteps), err
}

// runs says which images a render runs and who its bindings grant what,
// every value escaped (an event is read on a terminal).
func runs(res *render.Result) string {
	var images, grants []string
	for _, u := range res.Images() {
		images = append(images, fmt.Sprintf("%s (%s, container %s)", safetext.Escape(u.Image), safetext.Escape(u.Object), safetext.Escape(u.Container)))
	}
	for _, g := range res.Grants() {
		who := make([]string, len(g.Subjects))
		for i, s := range g.Subjects {
			who[i] = safetext.Escape(s)
		}
		grants = append(grants, fmt.Sprintf("%s to %s", safetext.Escape(g.Role), strings.Join(who, ", ")))
	}
	return fmt.Sprintf("Cluster %s runs %s; grants %s", safetext.Escape(res.Config.ClusterName), orNothing(images), orNothing(grants))
}

func orNothing(l []string) string {
	if len(l) == 0 {
		return "nothing"
	}
	return strings.Join(l, "; ")
}

// admitted checks, before anything is read or written for a Cluster, that
// the policy lets the MetricsConfig have it done (admit) and that what
// eksa-system keeps under the Cluster's name is its own (owned). A refusal
// returns its condition reason with the error; a failed read returns no
// reason.
func (r *Reconciler) admitted(ctx context.Context, mc *metricsv1alpha1.MetricsConfig, obj *unstructured.Unstructured) (reason string, err error) {
	if err := r.Policy.admit(mc, obj); err != nil {
		return metricsv1alpha1.ReasonNotAllowed, err
	}
	var notOwned *NotOwnedError
	if err := r.owned(ctx, obj); errors.As(err, &notOwned) {
		return metricsv1alpha1.ReasonNotOwned, err
	} else if err != nil {
		return "", err
	}
	return "", nil
}

// render renders the MetricsConfig for one Cluster, with the controller's
// images (policy) and, where asked, the Cluster's EKS-A Bundles.
func (r *Reconciler) render(ctx context.Context, mc *metricsv1alpha1.MetricsConfig, obj *unstructured.Unstructured) (*render.Result, error) {
	in, err := r.input(ctx, mc, obj)
	if err != nil {
		return nil, err
	}
	r.Policy.images(in)
	var opts spec.Options
	if r.Policy.ImagesFromBundles {
		if opts.Bundles, err = r.bundles(ctx, obj); err != nil {
			return nil, err
		}
	}
	return render.Render(in, opts)
}

// input builds the engine's input from the live objects: the EKS-A Cluster,
// its control plane's machine config (for the OS family), and the
// MetricsConfig's spec.
func (r *Reconciler) input(ctx context.Context, mc *metricsv1alpha1.MetricsConfig, obj *unstructured.Unstructured) (*spec.Input, error) {
	var c spec.Cluster
	if err := convert(obj.Object, &c); err != nil {
		return nil, fmt.Errorf("reading Cluster %s: %w", obj.GetName(), err)
	}
	in := &spec.Input{Cluster: c, Metrics: *mc.Spec.DeepCopy(), MetricsName: mc.Name, Resource: true}
	if ref := c.Spec.ControlPlaneConfiguration.MachineGroupRef; ref.Kind != "" && ref.Name != "" {
		mcObj := &unstructured.Unstructured{}
		mcObj.SetGroupVersionKind(ClusterGVK.GroupVersion().WithKind(ref.Kind))
		err := r.Client.Get(ctx, types.NamespacedName{Namespace: obj.GetNamespace(), Name: ref.Name}, mcObj)
		switch {
		case err == nil:
			var m spec.MachineConfig
			if err := convert(mcObj.Object, &m); err != nil {
				return nil, fmt.Errorf("reading %s %s: %w", ref.Kind, ref.Name, err)
			}
			in.MachineConfigs = append(in.MachineConfigs, m)
		case !apierrors.IsNotFound(err) && !meta.IsNoMatchError(err):
			return nil, fmt.Errorf("reading %s %s: %w", ref.Kind, ref.Name, err)
		}
	}
	return in, nil
}

func convert(from map[string]any, to any) error {
	return runtime.DefaultUnstructuredConverter.FromUnstructured(from, to)
}

// clusters reaches the Cluster's workload cluster: the management cluster
// itself, or through its kubeconfig Secret (a connection is kept while the
// Secret's content stays the same).
func (r *Reconciler) clusters(ctx context.Context, obj *unstructured.Unstructured, res *render.Result) (*engine.Clusters, error) {
	// The policy decides, never the Cluster's spec (admit has refused a
	// Cluster whose spec and the policy disagree).
	if r.Policy.IsManagement(obj.GetNamespace(), obj.GetName()) {
		if !res.Config.Management {
			return nil, fmt.Errorf("Cluster %s/%s rendered as a workload cluster although it is the management cluster", obj.GetNamespace(), obj.GetName())
		}
		return &engine.Clusters{Management: r.Management, Workload: r.Management}, nil
	}
	if res.Config.Management {
		return nil, fmt.Errorf("Cluster %s/%s rendered as a management cluster although it is not the one the controller runs in", obj.GetNamespace(), obj.GetName())
	}
	name := res.Config.ClusterName
	key := types.NamespacedName{Namespace: obj.GetNamespace(), Name: name}
	data, err := r.Management.WorkloadKubeconfig(ctx, name)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(data)
	r.mu.Lock()
	w, ok := r.workloads[key]
	r.mu.Unlock()
	if ok && w.hash == sum {
		return &engine.Clusters{Management: r.Management, Workload: w.cluster}, nil
	}
	wl, err := cluster.Connect(ctx, "workload", cluster.ConnectOptions{Kubeconfig: fmt.Sprintf("Secret eksa-system/%s-kubeconfig", name), KubeconfigData: data, TrustKubeconfigData: r.TrustKubeconfigSecrets, Timeout: 30 * time.Second})
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	r.workloads[key] = workload{hash: sum, cluster: wl}
	r.mu.Unlock()
	return &engine.Clusters{Management: r.Management, Workload: wl}, nil
}

// finalize takes back what every Cluster got, then lets the MetricsConfig go.
func (r *Reconciler) finalize(ctx context.Context, mc *metricsv1alpha1.MetricsConfig) error {
	if !controllerutil.ContainsFinalizer(mc, Finalizer) {
		return nil
	}
	// Every Cluster it applied to: those in its status, and those it
	// selects (a status write may not have landed before the deletion).
	names := map[string]bool{}
	for _, s := range mc.Status.Clusters {
		names[s.Name] = true
	}
	selected, err := r.selected(ctx, mc)
	if err != nil {
		return err
	}
	for _, c := range selected {
		names[c.GetName()] = true
	}
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(names)) {
		if err := r.cleanup(ctx, mc, name); err != nil {
			errs = append(errs, fmt.Errorf("Cluster %s: %w", name, err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	before := mc.DeepCopy()
	controllerutil.RemoveFinalizer(mc, Finalizer)
	return r.Client.Patch(ctx, mc, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{}))
}

// cleanup deletes what eksa-metrics created for a Cluster (its inventory:
// the objects labelled for that Cluster and applied by eksa-metrics, and the
// serving certificates), and releases its KubeadmControlPlane items when the
// MetricsConfig allows a rollout. Edited management Deployments keep their
// edits (eksctl anywhere upgrade management-components restores them).
func (r *Reconciler) cleanup(ctx context.Context, mc *metricsv1alpha1.MetricsConfig, name string) error {
	var obj unstructured.Unstructured
	obj.SetGroupVersionKind(ClusterGVK)
	err := r.Client.Get(ctx, types.NamespacedName{Namespace: mc.Namespace, Name: name}, &obj)
	if apierrors.IsNotFound(err) {
		return nil // the Cluster is gone, and its workload cluster with it
	}
	if err != nil {
		return err
	}
	if obj.GetAnnotations()[PausedAnnotation] == "true" {
		return fmt.Errorf("the Cluster is paused; its objects stay until it is resumed")
	}
	// What was refused was never applied: nothing to take back, and
	// nothing that is another Cluster's is touched.
	if reason, err := r.admitted(ctx, mc, &obj); reason != "" {
		return nil
	} else if err != nil {
		return err
	}
	res, err := r.render(ctx, mc, &obj)
	if err != nil {
		return err
	}
	cl, err := r.clusters(ctx, &obj, res)
	if err != nil {
		return err
	}
	empty := &render.Result{Config: res.Config, Change: kubeadm.Change{ClusterName: res.Config.ClusterName, APIVersion: res.Change.APIVersion}}
	steps, err := engine.Plan(ctx, cl, empty)
	if err != nil {
		return err
	}
	if err := engine.Apply(ctx, cl, empty, steps, engine.ApplyOptions{ForceConflicts: true,
		AllowRollout: func([]*cluster.Step) (bool, error) { return mc.Spec.AllowControlPlaneRollout, nil }}); err != nil {
		var refused *engine.RolloutRefusedError
		if !errors.As(err, &refused) {
			return err
		}
		// Without a rollout allowed, the KubeadmControlPlane items stay;
		// everything else goes.
		var rest []*cluster.Step
		for _, s := range steps {
			if !s.RollsControlPlane {
				rest = append(rest, s)
			}
		}
		if err := engine.Apply(ctx, cl, empty, rest, engine.ApplyOptions{ForceConflicts: true}); err != nil {
			return err
		}
	}
	return cl.Workload.DeleteCertificates(ctx)
}
