package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	corev1 "k8s.io/api/core/v1"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/eksa-metrics/eksa-metrics/pkg/kubeproxy"
	"github.com/eksa-metrics/eksa-metrics/pkg/render"
	"github.com/eksa-metrics/eksa-metrics/pkg/safetext"
	"github.com/eksa-metrics/eksa-metrics/pkg/templates"
)

// Applier makes the management and workload clusters match a render result.
type Applier struct {
	Management *Cluster
	Workload   *Cluster
	Result     *render.Result
}

func (a *Applier) clusterFor(t render.Destination) *Cluster {
	if t == render.Management {
		return a.Management
	}
	return a.Workload
}

// WorkloadDestinations are the destinations applied to the workload
// cluster (clusterFor): its own objects and the scrape configuration's
// (ServiceMonitors, PrometheusRules, the scraper's token, a Prometheus's
// objects), which go where the Prometheus of that cluster runs.
var WorkloadDestinations = []render.Destination{render.Workload, render.Prometheus}

// Plan reads the live state and returns one step per object.
func (a *Applier) Plan(ctx context.Context) ([]*Step, error) {
	var steps []*Step
	for _, o := range a.Result.Objects {
		s, err := a.clusterFor(o.Destination).PlanObject(ctx, o.Object)
		if err != nil {
			return nil, err
		}
		steps = append(steps, s)
	}
	edits, err := a.editSteps(ctx)
	if err != nil {
		return nil, err
	}
	steps = append(steps, edits...)
	// What eksa-metrics created for this cluster and no longer renders.
	name := a.Result.Config.ClusterName
	for _, c := range a.clusters() {
		var objs []render.Object
		for _, o := range a.Result.Objects {
			if a.clusterFor(o.Destination) == c {
				objs = append(objs, o)
			}
		}
		prune, err := c.pruneSteps(ctx, name, keepSet(objs))
		if err != nil {
			return nil, err
		}
		steps = append(steps, prune...)
	}
	return steps, nil
}

// clusters are the distinct clusters (one for a management cluster).
func (a *Applier) clusters() []*Cluster {
	if a.Management == a.Workload {
		return []*Cluster{a.Management}
	}
	return []*Cluster{a.Management, a.Workload}
}

// ExecuteOptions control how steps are sent.
type ExecuteOptions struct {
	// DryRun sends every request with dryRun=All: the API server validates
	// (schemas, CEL rules, admission) and persists nothing.
	DryRun bool
	// ForceConflicts takes over fields other managers own.
	ForceConflicts bool
	// Report receives an event per object written.
	Report Reporter
}

// ConflictError reports fields another field manager owns.
type ConflictError struct {
	Object  string
	Cluster string
	Details []string
}

func (e *ConflictError) Error() string {
	return fmt.Sprintf("%s in the %s: fields are owned by another field manager:\n  %s\nResolve it with that manager (it may revert eksa-metrics' change), or rerun with --force-conflicts to take the fields over",
		e.Object, e.Cluster, strings.Join(e.Details, "\n  "))
}

// namespaceOf is a namespace of one cluster.
type namespaceOf struct {
	cluster *Cluster
	name    string
}

// Execute sends every step that is not unchanged, in order. Each namespace
// is read (and created if missing) once, before its first object.
func (a *Applier) Execute(ctx context.Context, steps []*Step, opts ExecuteOptions) error {
	ensured := map[namespaceOf]bool{}
	for _, s := range steps {
		if s.Action == Unchanged || s.Action == Skip {
			continue
		}
		if err := s.Cluster.execute(ctx, s, opts, ensured); errors.Is(err, errNamespaceDryRun) {
			opts.Report.emit(Event{Cluster: s.Cluster.String(), Object: s.Name(), Action: "skipped",
				Message: "not validated: its namespace does not exist yet, and a server dry run cannot create it"})
			continue
		} else if err != nil {
			return err
		}
		verb := map[Action]string{Create: "created", Update: "configured", Edit: "edited", Prune: "deleted"}[s.Action]
		if opts.DryRun {
			verb += " (server dry run)"
		}
		opts.Report.emit(Event{Cluster: s.Cluster.String(), Object: s.Name(), Action: verb, Message: s.Rollout})
	}
	return nil
}

func (c *Cluster) execute(ctx context.Context, s *Step, opts ExecuteOptions, ensured map[namespaceOf]bool) error {
	if s.Action == Prune {
		return c.prune(ctx, s, opts.DryRun)
	}
	if s.edit != nil {
		if err := s.edit(ctx, opts.DryRun); err != nil {
			return fmt.Errorf("editing %s in the %s: %w", s.Name(), c, err)
		}
		return nil
	}
	u := unstructured.Unstructured{Object: s.Object}
	if ns := u.GetNamespace(); ns != "" && !ensured[namespaceOf{c, ns}] {
		if err := c.ensureNamespace(ctx, ns, opts.DryRun); errors.Is(err, errNamespaceDryRun) {
			return err
		} else if err != nil {
			return fmt.Errorf("creating namespace %s in the %s: %w", ns, c, err)
		}
		ensured[namespaceOf{c, ns}] = true
	}
	ri, _, err := c.resource(s.Object)
	if err != nil {
		return err
	}
	data, err := json.Marshal(s.Object)
	if err != nil {
		return err
	}
	po := metav1.PatchOptions{FieldManager: FieldManager, Force: &opts.ForceConflicts}
	if opts.DryRun {
		po.DryRun = []string{metav1.DryRunAll}
	}
	out, err := ri.Patch(ctx, u.GetName(), types.ApplyPatchType, data, po)
	if err == nil && !opts.DryRun {
		c.recordApplied(&u, data, out)
	}
	if apierrors.IsConflict(err) {
		ce := &ConflictError{Object: s.Name(), Cluster: c.String()}
		if st, ok := err.(apierrors.APIStatus); ok && st.Status().Details != nil {
			for _, cause := range st.Status().Details.Causes {
				// It names the other field manager, which any writer chooses.
				ce.Details = append(ce.Details, safetext.Escape(cause.Message))
			}
		}
		if len(ce.Details) == 0 {
			ce.Details = []string{safetext.Escape(err.Error())}
		}
		return ce
	}
	if err != nil {
		return fmt.Errorf("applying %s to the %s: %w", s.Name(), c, err)
	}
	return nil
}

// Wait waits until the DaemonSets the steps changed are ready, then until a
// changed KubeadmControlPlane has rolled out (the long part), polling every
// interval and reporting whenever the status changes. A reconciler calls
// Ready instead, without blocking.
func (a *Applier) Wait(ctx context.Context, steps []*Step, timeout, interval time.Duration, report Reporter) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	ordered := make([]*Step, 0, len(steps))
	for _, s := range steps {
		if !s.RollsControlPlane {
			ordered = append(ordered, s)
		}
	}
	for _, s := range steps {
		if s.RollsControlPlane {
			ordered = append(ordered, s)
		}
	}
	for _, s := range ordered {
		u, ok := s.Awaited()
		if !ok {
			continue
		}
		ri, _, err := s.Cluster.resource(u.Object)
		if err != nil {
			return err
		}
		name := templates.ObjectName(u.GetKind(), u.GetNamespace(), u.GetName())
		last := ""
		for {
			live, err := ri.Get(ctx, u.GetName(), metav1.GetOptions{})
			if err == nil {
				ok, status, _ := Ready(live)
				if ok {
					report.emit(Event{Cluster: s.Cluster.String(), Object: name, Action: "ready", Message: status})
					break
				}
				if status != last {
					report.emit(Event{Cluster: s.Cluster.String(), Object: name, Action: "waiting", Message: status})
					last = status
				}
			} else if apierrors.IsNotFound(err) && s.Action == Edit {
				break
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("timed out after %s waiting for %s in the %s; it keeps rolling out in the background: check it with kubectl, then rerun with a longer --timeout", timeout, name, s.Cluster)
			case <-time.After(interval):
			}
		}
	}
	return nil
}

// Awaited is the object whose readiness shows that the step took effect: the
// object itself (DaemonSet, Deployment, KubeadmControlPlane), or, for the
// kube-proxy ConfigMap edit, the kube-proxy DaemonSet it restarts.
func (s *Step) Awaited() (*unstructured.Unstructured, bool) {
	if s.Action == Unchanged || s.Action == Skip || s.Action == Prune {
		return nil, false
	}
	u := &unstructured.Unstructured{Object: s.Object}
	switch {
	case u.GetKind() == "KubeadmControlPlane":
		return u, s.RollsControlPlane // its marks and digest alone roll nothing out
	case u.GetKind() == "DaemonSet", u.GetKind() == "Deployment":
		return u, true
	case s.Action == Edit && u.GetKind() == "ConfigMap":
		return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "apps/v1", "kind": "DaemonSet",
			"metadata": map[string]any{"name": kubeproxy.Name, "namespace": kubeproxy.Namespace}}}, true
	}
	return nil, false
}

// Ready reports whether a live object has rolled out (known is false for a
// kind without a readiness rule), and its status for a person.
func Ready(obj *unstructured.Unstructured) (ready bool, status string, known bool) {
	switch obj.GetKind() {
	case "DaemonSet":
		ready, status = daemonSetReady(obj)
	case "Deployment":
		ready, status = deploymentReady(obj)
	case "KubeadmControlPlane":
		ready, status = kcpRolledOut(obj)
	default:
		return true, "", false
	}
	return ready, status, true
}

func nested(obj *unstructured.Unstructured, path ...string) int64 {
	v, _, _ := unstructured.NestedInt64(obj.Object, path...)
	return v
}

func daemonSetReady(ds *unstructured.Unstructured) (bool, string) {
	desired := nested(ds, "status", "desiredNumberScheduled")
	updated := nested(ds, "status", "updatedNumberScheduled")
	available := nested(ds, "status", "numberAvailable")
	observed := nested(ds, "status", "observedGeneration") >= ds.GetGeneration()
	return observed && updated == desired && available == desired, fmt.Sprintf("%d of %d pods updated and available", min(updated, available), desired)
}

func deploymentReady(d *unstructured.Unstructured) (bool, string) {
	replicas := nested(d, "spec", "replicas")
	updated, available := nested(d, "status", "updatedReplicas"), nested(d, "status", "availableReplicas")
	observed := nested(d, "status", "observedGeneration") >= d.GetGeneration()
	return observed && updated == replicas && available == replicas, fmt.Sprintf("%d of %d pods updated, %d available", updated, replicas, available)
}

func kcpRolledOut(kcp *unstructured.Unstructured) (bool, string) {
	replicas := nested(kcp, "spec", "replicas")
	observed := nested(kcp, "status", "observedGeneration") >= kcp.GetGeneration()
	var upToDate, ready int64
	if strings.HasSuffix(kcp.GetAPIVersion(), "/v1beta1") {
		upToDate, ready = nested(kcp, "status", "updatedReplicas"), nested(kcp, "status", "readyReplicas")
	} else {
		upToDate, ready = nested(kcp, "status", "upToDateReplicas"), nested(kcp, "status", "availableReplicas")
	}
	return observed && upToDate == replicas && ready == replicas, fmt.Sprintf("%d of %d machines up to date, %d ready", upToDate, replicas, ready)
}

// CheckTokenSecrets refuses to create or update a token Secret whose
// ServiceAccount neither exists nor is created by the same apply
// (checkTokenSecret); the engine calls it before anything is written.
func (a *Applier) CheckTokenSecrets(ctx context.Context, steps []*Step) error {
	serviceAccounts := map[*Cluster]map[string]bool{}
	for _, o := range a.Result.Objects {
		if o.Kind() == "ServiceAccount" {
			c := a.clusterFor(o.Destination)
			if serviceAccounts[c] == nil {
				serviceAccounts[c] = map[string]bool{}
			}
			serviceAccounts[c][o.Namespace()+"/"+o.Name()] = true
		}
	}
	for _, s := range steps {
		if s.Action != Create && s.Action != Update {
			continue
		}
		if err := s.Cluster.checkTokenSecret(ctx, s.Object, serviceAccounts[s.Cluster]); err != nil {
			return err
		}
	}
	return nil
}

// checkTokenSecret refuses, before anything is written, a token Secret
// whose ServiceAccount neither exists nor is rendered with it (rendered:
// namespace/name of the ServiceAccounts the same apply creates first):
// kube-controller-manager deletes such a Secret as soon as it is created.
func (c *Cluster) checkTokenSecret(ctx context.Context, obj map[string]any, rendered map[string]bool) error {
	u := unstructured.Unstructured{Object: obj}
	if u.GetAPIVersion() != "v1" || u.GetKind() != "Secret" {
		return nil
	}
	if t, _, _ := unstructured.NestedString(u.Object, "type"); t != string(corev1.SecretTypeServiceAccountToken) {
		return nil
	}
	sa := u.GetAnnotations()[corev1.ServiceAccountNameKey]
	if rendered[u.GetNamespace()+"/"+sa] {
		return nil
	}
	_, err := c.Core.CoreV1().ServiceAccounts(u.GetNamespace()).Get(ctx, sa, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return fmt.Errorf("Secret %s/%s asks kube-controller-manager for a token of the scraper ServiceAccount %s/%s, which the %s does not have (kube-controller-manager would delete the Secret): install the monitoring stack that creates it (or create it) and apply again, or name in scrapers the ServiceAccount your Prometheus runs as",
			u.GetNamespace(), u.GetName(), u.GetNamespace(), sa, c)
	case err != nil:
		return fmt.Errorf("reading ServiceAccount %s/%s from the %s: %w", u.GetNamespace(), sa, c, err)
	}
	return nil
}
