// Package controller is the second driver of the engine: a controller in the
// management cluster that keeps every EKS Anywhere Cluster a MetricsConfig
// selects as the spec says, on the same engine sequence as the CLI's apply
// (engine.Pass). Its unit of work is one Cluster: an event about a Cluster,
// its KubeadmControlPlane, its Cluster API Cluster or the objects
// eksa-metrics keeps in its workload cluster re-plans that
// Cluster only, in the phases Cluster API controllers use (fetch, decide,
// apply, status). A second controller keeps each MetricsConfig's finalizer
// and summarises its Clusters' states into its status.
package controller

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	metricsv1alpha1 "github.com/eksa-metrics/eksa-metrics/pkg/apis/metrics/v1alpha1"
	"github.com/eksa-metrics/eksa-metrics/pkg/cluster"
	"github.com/eksa-metrics/eksa-metrics/pkg/components"
	"github.com/eksa-metrics/eksa-metrics/pkg/spec"
)

// Finalizer makes a deleted MetricsConfig wait until what it applied is gone.
const Finalizer = "metrics.anywhere.eks.amazonaws.com/cleanup"

// PausedAnnotation is EKS-A's: a paused Cluster is left alone.
const PausedAnnotation = "anywhere.eks.amazonaws.com/paused"

// ShardLabel names the controller shard that keeps a Cluster.
const ShardLabel = metricsv1alpha1.ShardLabel

// ClusterGVK is the EKS Anywhere Cluster.
var ClusterGVK = schema.GroupVersionKind{Group: "anywhere.eks.amazonaws.com", Version: "v1alpha1", Kind: "Cluster"}

var kcpGVK = schema.GroupVersionKind{Group: "controlplane.cluster.x-k8s.io", Kind: "KubeadmControlPlane"}

// nameIndex indexes the cached EKS-A Clusters by name: the objects of
// eksa-system are named after their Cluster, whatever its namespace.
const nameIndex = "metadata.name"

// Reconciler is the Cluster controller: it reconciles the Clusters that
// MetricsConfigs select, one Cluster per reconcile, and records each one's
// state in its binding. SetupWithManager registers it and, beside it, the
// MetricsConfig controller (configReconciler, status.go) of the same shard.
type Reconciler struct {
	// Client reads and writes the management cluster (typed and metadata
	// objects through the manager's cache).
	Client client.Client
	// Management is the management cluster for the engine (server-side apply,
	// planning, certificates).
	Management *cluster.Cluster
	// Concurrency bounds how many Clusters are planned and applied at once.
	Concurrency int
	// Workers bounds how many MetricsConfig statuses are written at once.
	Workers int
	// Recorder receives an event per object changed in a cluster.
	Recorder events.EventRecorder
	// TrustKubeconfigSecrets accepts exec and auth-provider plugins, tokenFile
	// and local file paths in the workload kubeconfig Secrets (refused by
	// default: cluster.CheckSecretKubeconfig).
	TrustKubeconfigSecrets bool
	// Policy is the operator's: what a MetricsConfig may have the
	// controller do, the management cluster, the images.
	Policy Policy
	// Shard is the value of ShardLabel on the Clusters this controller
	// keeps; empty: the Clusters without the label.
	Shard string
	// Guard, when set, holds every write while the admission policy does
	// not hold the controller.
	Guard *PolicyGuard
	// ScraperRecheck is how often a scraper's ServiceAccount is asked
	// again whether its token can do harm (default ScraperRecheck).
	ScraperRecheck time.Duration

	// capiCluster is the Cluster API Cluster kind in the version the
	// management cluster serves (empty when it serves none).
	capiCluster schema.GroupVersionKind
	// machine is the Cluster API Machine kind in the version the
	// management cluster serves by preference (empty when it serves none):
	// a workload cluster's Machines vouch for its nodes' serving
	// certificates (tls.kubeletServingCertificates).
	machine schema.GroupVersionKind
	// clusters reads the EKS-A Clusters from the manager's cache: the
	// client reads unstructured objects from the API server, a request
	// per event mapped and per reconcile.
	clusters  client.Reader
	results   *results
	workloads *workloads
	// clusterEvents wakes the Cluster controller when a workload cluster
	// drifted.
	clusterEvents chan event.GenericEvent
	once          sync.Once
	// driftRepairs counts the re-plans a workload cluster's drift caused.
	driftRepairs atomic.Int64
	// harm: when each scraper ServiceAccount was last found harmless.
	harm harmChecks
}

func (r *Reconciler) init() {
	r.once.Do(func() {
		r.results = newResults()
		r.harm.every = r.ScraperRecheck
		if r.harm.every <= 0 {
			r.harm.every = ScraperRecheck
		}
		r.clusterEvents = make(chan event.GenericEvent, 1024)
		r.workloads = &workloads{m: map[types.NamespacedName]*workload{}, trust: r.TrustKubeconfigSecrets, drifted: r.drifted}
		if r.clusters == nil {
			r.clusters = r.Client
		}
	})
}

// Preflight checks that the management cluster serves what the controller
// watches, and says which API is missing and why (not a RESTMapper's "no
// matches for kind").
func Preflight(mgmt *cluster.Cluster) error {
	for _, need := range []struct {
		gvk  schema.GroupVersionKind
		what string
	}{
		{ClusterGVK, "the EKS Anywhere Cluster API (anywhere.eks.amazonaws.com): is this the management cluster of your EKS Anywhere clusters?"},
		{metricsv1alpha1.GroupVersion.WithKind(metricsv1alpha1.Kind), "the MetricsConfig API: install it with `eksa-metrics controller manifests | kubectl apply --server-side -f -`"},
		{metricsv1alpha1.GroupVersion.WithKind(metricsv1alpha1.BindingKind), "the MetricsConfigBinding API (each Cluster's state, since this release): install it with `eksa-metrics controller manifests | kubectl apply --server-side -f -`"},
	} {
		ok, err := mgmt.Serves(need.gvk)
		if err != nil {
			return fmt.Errorf("reading the API the management cluster serves: %w", err)
		}
		if !ok {
			return fmt.Errorf("the management cluster does not serve %s", need.what)
		}
	}
	return nil
}

// SetupWithManager registers the two controllers and their watches.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	r.clusters = mgr.GetCache()
	r.init()
	eksaCluster := &unstructured.Unstructured{}
	eksaCluster.SetGroupVersionKind(ClusterGVK)
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), eksaCluster, nameIndex, func(o client.Object) []string { return []string{o.GetName()} }); err != nil {
		return err
	}
	byName := handler.EnqueueRequestsFromMapFunc(r.byEKSASystemName)
	b := ctrl.NewControllerManagedBy(mgr).
		Named("cluster").
		WithOptions(controller.Options{MaxConcurrentReconciles: max(r.Concurrency, 1)}).
		For(eksaCluster, builder.WithPredicates(r.inShard(), clusterChanged{})).
		Watches(&metricsv1alpha1.MetricsConfig{}, handler.EnqueueRequestsFromMapFunc(r.clustersOf), builder.WithPredicates(configChanged)).
		Watches(&appsv1.Deployment{}, handler.EnqueueRequestsFromMapFunc(r.managementCluster), builder.WithPredicates(predicate.NewPredicateFuncs(managedDeployment), specOrLabels)).
		// No watch of Secrets: the controller may read eksa-system's
		// kubeconfig Secrets only by name (connect reads the one it needs).
		// A binding deleted by anyone else is written again.
		Watches(&metricsv1alpha1.MetricsConfigBinding{}, handler.EnqueueRequestsFromMapFunc(bindingCluster), builder.WithPredicates(deleted{})).
		WatchesRawSource(source.Channel(r.clusterEvents, &handler.EnqueueRequestForObject{}))
	// The KubeadmControlPlane in the version the cluster serves by preference
	// (v1beta1 only up to Cluster API 1.10, EKS-A v0.24).
	if m, err := mgr.GetRESTMapper().RESTMapping(kcpGVK.GroupKind()); err == nil {
		kcp := &metav1.PartialObjectMetadata{}
		kcp.SetGroupVersionKind(m.GroupVersionKind)
		// Only a spec change (its generation) or a label change is worth a
		// re-plan: Cluster API's status and annotation churn is not.
		b = b.WatchesMetadata(kcp, byName, builder.WithPredicates(predicate.NewPredicateFuncs(inEKSASystem), specOrLabels))
	} else if !meta.IsNoMatchError(err) {
		return err
	}
	// The Cluster API Cluster that says whose eksa-system objects are whose
	// (owned), as metadata.
	if m, err := mgr.GetRESTMapper().RESTMapping(capiClusterGK); err == nil {
		r.capiCluster = m.GroupVersionKind
		capi := &metav1.PartialObjectMetadata{}
		capi.SetGroupVersionKind(m.GroupVersionKind)
		b = b.WatchesMetadata(capi, byName, builder.WithPredicates(predicate.NewPredicateFuncs(inEKSASystem), predicate.LabelChangedPredicate{}))
	} else if !meta.IsNoMatchError(err) {
		return err
	}
	// The Machines, as metadata, for the Clusters whose kubelet approver
	// the controller publishes them to: any change of one (its addresses
	// are in its status, which metadata does not show) is a re-plan of its
	// Cluster, which rewrites the published list only when it changed.
	if m, err := mgr.GetRESTMapper().RESTMapping(machineGK); err == nil {
		r.machine = m.GroupVersionKind
		machine := &metav1.PartialObjectMetadata{}
		machine.SetGroupVersionKind(m.GroupVersionKind)
		b = b.WatchesMetadata(machine, handler.EnqueueRequestsFromMapFunc(r.byMachine), builder.WithPredicates(predicate.NewPredicateFuncs(inEKSASystem)))
	} else if !meta.IsNoMatchError(err) {
		return err
	}
	if err := b.Complete(reconcile.Func(r.reconcileCluster)); err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("metricsconfig").
		WithOptions(controller.Options{MaxConcurrentReconciles: max(r.Workers, 1)}).
		// Its own status updates change nothing it reads: no reconcile loop.
		For(&metricsv1alpha1.MetricsConfig{}, builder.WithPredicates(configChanged)).
		// A binding's change is its owner's status to sum up again.
		Owns(&metricsv1alpha1.MetricsConfigBinding{}).
		Complete(reconcile.Func((&configReconciler{shard: shard(r.Shard), client: r.Client, clusters: r.clusters, results: r.results, recorder: r.Recorder}).reconcileConfig))
}

// specOrLabels passes creations, deletions and the updates that change a
// spec (the generation) or the labels.
var specOrLabels = predicate.Or(predicate.GenerationChangedPredicate{}, predicate.LabelChangedPredicate{})

// configChanged passes the MetricsConfig changes that change what is
// applied: its spec, its annotations, its finalizer (added before anything
// is applied) and its deletion.
var configChanged = predicate.Or[client.Object](predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}, deleting{}, finalizers{})

// deleting passes the update that sets a deletion timestamp (which changes
// no generation).
type deleting struct{ predicate.Funcs }

func (deleting) Update(e event.UpdateEvent) bool {
	return e.ObjectOld.GetDeletionTimestamp().IsZero() && !e.ObjectNew.GetDeletionTimestamp().IsZero()
}

// deleted passes deletions only.
type deleted struct{ predicate.Funcs }

func (deleted) Create(event.CreateEvent) bool   { return false }
func (deleted) Update(event.UpdateEvent) bool   { return false }
func (deleted) Generic(event.GenericEvent) bool { return false }
func (deleted) Delete(event.DeleteEvent) bool   { return true }

// bindingCluster maps a binding to its Cluster.
func bindingCluster(_ context.Context, o client.Object) []reconcile.Request {
	b, ok := o.(*metricsv1alpha1.MetricsConfigBinding)
	if !ok || b.Spec.ClusterName == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: b.Namespace, Name: b.Spec.ClusterName}}}
}

type finalizers struct{ predicate.Funcs }

func (finalizers) Update(e event.UpdateEvent) bool {
	return !slices.Equal(e.ObjectOld.GetFinalizers(), e.ObjectNew.GetFinalizers())
}

// clusterChanged passes the EKS-A Cluster changes that change what is
// rendered or whether it may be applied: spec, labels, the paused
// annotation, deletion, and EKS-A becoming busy with it or done.
// EKS-A's other status churn is not worth a re-plan.
type clusterChanged struct{ predicate.Funcs }

func (clusterChanged) Update(e event.UpdateEvent) bool {
	o, okOld := e.ObjectOld.(*unstructured.Unstructured)
	n, okNew := e.ObjectNew.(*unstructured.Unstructured)
	if !okOld || !okNew {
		return true
	}
	return o.GetGeneration() != n.GetGeneration() ||
		!maps.Equal(o.GetLabels(), n.GetLabels()) ||
		o.GetAnnotations()[PausedAnnotation] != n.GetAnnotations()[PausedAnnotation] ||
		o.GetDeletionTimestamp().IsZero() != n.GetDeletionTimestamp().IsZero() ||
		(upgrading(o) == "") != (upgrading(n) == "")
}

// inShard passes the Clusters of this controller's shard, and a Cluster
// that leaves it (an update whose old object was in it), so that it is
// let go of.
func (r *Reconciler) inShard() predicate.Predicate {
	in := func(o client.Object) bool { return o.GetLabels()[ShardLabel] == r.Shard }
	return predicate.Funcs{
		CreateFunc:  func(e event.CreateEvent) bool { return in(e.Object) },
		DeleteFunc:  func(e event.DeleteEvent) bool { return in(e.Object) },
		UpdateFunc:  func(e event.UpdateEvent) bool { return in(e.ObjectOld) || in(e.ObjectNew) },
		GenericFunc: func(e event.GenericEvent) bool { return in(e.Object) },
	}
}

func (r *Reconciler) keeps(o client.Object) bool { return shard(r.Shard).keeps(o) }

func (r *Reconciler) finalizer() string { return shard(r.Shard).finalizer() }

// shard is the Clusters a controller keeps: those whose ShardLabel is it
// (empty: those without the label).
type shard string

func (s shard) keeps(o client.Object) bool { return o.GetLabels()[ShardLabel] == string(s) }

// finalizer is this shard's: each shard releases its own Clusters before
// a deleted MetricsConfig goes.
func (s shard) finalizer() string {
	if s == "" {
		return Finalizer
	}
	return Finalizer + "-" + string(s)
}

// managedDeployment: a Deployment of a management controller eksa-metrics
// may edit (the catalog's namespaces).
func managedDeployment(o client.Object) bool {
	return slices.ContainsFunc(components.ManagementCatalog, func(m components.Management) bool {
		return m.Namespace == o.GetNamespace() && m.Deployment == o.GetName()
	})
}

func inEKSASystem(o client.Object) bool { return o.GetNamespace() == EKSASystemNamespace }

// byEKSASystemName maps an object of eksa-system (a KubeadmControlPlane, a
// Cluster API Cluster) to the EKS-A Clusters of its
// name, in any namespace (owned tells which one it is).
func (r *Reconciler) byEKSASystemName(ctx context.Context, o client.Object) []reconcile.Request {
	return r.named(ctx, o.GetName())
}

// byMachine maps a Machine of eksa-system to the EKS-A Clusters named by
// its Cluster API label.
func (r *Reconciler) byMachine(ctx context.Context, o client.Object) []reconcile.Request {
	name := o.GetLabels()[spec.MachineClusterLabel]
	if name == "" {
		return nil
	}
	return r.named(ctx, name)
}

func (r *Reconciler) named(ctx context.Context, name string) []reconcile.Request {
	var list unstructured.UnstructuredList
	list.SetGroupVersionKind(ClusterGVK)
	if err := r.clusters.List(ctx, &list, client.MatchingFields{nameIndex: name}); err != nil {
		return nil
	}
	var out []reconcile.Request
	for _, c := range list.Items {
		if r.keeps(&c) {
			out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: c.GetNamespace(), Name: c.GetName()}})
		}
	}
	return out
}

// managementCluster maps a management controller's Deployment to the
// management Cluster, the only one whose render edits it.
func (r *Reconciler) managementCluster(context.Context, client.Object) []reconcile.Request {
	if r.Policy.ManagementCluster.Name == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: r.Policy.ManagementCluster}}
}

// clustersOf maps a MetricsConfig to the Clusters of this shard it
// selects or has a binding with (to release them after a selection change
// or its deletion).
func (r *Reconciler) clustersOf(ctx context.Context, o client.Object) []reconcile.Request {
	mc, ok := o.(*metricsv1alpha1.MetricsConfig)
	if !ok {
		return nil
	}
	var list unstructured.UnstructuredList
	list.SetGroupVersionKind(ClusterGVK)
	if err := r.clusters.List(ctx, &list, client.InNamespace(mc.Namespace)); err != nil {
		return nil
	}
	var out []reconcile.Request
	for i := range list.Items {
		c := &list.Items[i]
		if !r.keeps(c) {
			continue
		}
		sel, _ := selects(mc, c.GetName(), c.GetLabels())
		if sel || r.has(ctx, mc, c.GetName()) {
			out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: c.GetNamespace(), Name: c.GetName()}})
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
