package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"

	"github.com/eksa-metrics/eksa-metrics/pkg/components"
	"github.com/eksa-metrics/eksa-metrics/pkg/kubeproxy"
	"github.com/eksa-metrics/eksa-metrics/pkg/templates"
)

// The edits of objects eksa-metrics does not own (kube-proxy's ConfigMap,
// the management Deployments) are read-modify-writes that record what they
// changed on the object itself, so that every apply first gives back what
// an earlier one changed and then makes its own edit: the object ends as a
// fresh apply of the spec would leave it, and an edit the spec no longer
// asks for is undone.

// editSteps plans the kube-proxy edit (or its undo) in the workload
// cluster, and, for a management cluster, the edit (or undo) of every
// management Deployment of the catalog.
func (a *Applier) editSteps(ctx context.Context) ([]*Step, error) {
	var steps []*Step
	var addr *string
	if e := a.Result.KubeProxyEdit; e != nil {
		addr = &e.MetricsBindAddress
	}
	s, err := a.Workload.kubeProxyStep(ctx, addr)
	if err != nil {
		return nil, err
	}
	if s != nil {
		steps = append(steps, s)
	}
	if !a.Result.Config.Management {
		return steps, nil // only the management cluster's own spec edits them
	}
	wanted := map[string]*templates.DeploymentEdit{}
	for i, e := range a.Result.DeploymentEdits {
		wanted[e.Component.ID()] = &a.Result.DeploymentEdits[i]
	}
	seen := map[string]bool{}
	for _, m := range components.ManagementCatalog {
		if seen[m.ID()] || len(m.Providers) > 0 && !slices.Contains(m.Providers, string(a.Result.Config.Provider)) {
			continue // only the cluster's provider's Deployments are ever edited for it
		}
		seen[m.ID()] = true
		s, err := a.Management.deploymentStep(ctx, m.Namespace, m.Deployment, wanted[m.ID()])
		if err != nil {
			return nil, err
		}
		if s != nil {
			steps = append(steps, s)
		}
	}
	return steps, nil
}

// kubeProxyRecord reads the record of eksa-metrics' edit on the kube-proxy
// ConfigMap; an edit made before records were kept is known by its field
// manager.
func kubeProxyRecord(cm *corev1.ConfigMap) (*kubeproxy.Record, error) {
	if raw, ok := cm.Annotations[kubeproxy.RecordAnnotation]; ok {
		var rec kubeproxy.Record
		if err := json.Unmarshal([]byte(raw), &rec); err != nil {
			return nil, fmt.Errorf("annotation %s is not eksa-metrics' record of its edit (%v): remove it (kubectl -n %s annotate configmap %s %s-) and apply again",
				kubeproxy.RecordAnnotation, err, kubeproxy.Namespace, kubeproxy.Name, kubeproxy.RecordAnnotation)
		}
		return &rec, nil
	}
	for _, mf := range cm.ManagedFields {
		if mf.Manager == FieldManager && mf.Operation == metav1.ManagedFieldsOperationUpdate && mf.FieldsV1 != nil && strings.Contains(string(mf.FieldsV1.Raw), `"f:`+kubeproxy.Key+`"`) {
			rec := kubeproxy.LegacyRecord
			return &rec, nil
		}
	}
	return nil, nil
}

// reconcileKubeProxy makes cm what a fresh apply that wants addr (nil: no
// edit) leaves, and reports whether config.conf changed (kube-proxy
// restarts) and the metricsBindAddress before and after.
func reconcileKubeProxy(cm *corev1.ConfigMap, addr *string) (confChanged bool, before, after string, err error) {
	rec, err := kubeProxyRecord(cm)
	if err != nil {
		return false, "", "", err
	}
	conf := []byte(cm.Data[kubeproxy.Key])
	out, newRec, err := kubeproxy.Reconcile(conf, rec, addr)
	if err != nil {
		return false, "", "", err
	}
	b, _ := kubeproxy.Parse(conf)
	a, _ := kubeproxy.Parse(out)
	delete(cm.Annotations, kubeproxy.RecordAnnotation)
	if newRec != nil {
		raw, _ := json.Marshal(newRec)
		if cm.Annotations == nil {
			cm.Annotations = map[string]string{}
		}
		cm.Annotations[kubeproxy.RecordAnnotation] = string(raw)
	}
	if cm.Data == nil {
		cm.Data = map[string]string{}
	}
	cm.Data[kubeproxy.Key] = string(out)
	return string(out) != string(conf), b.MetricsBindAddress, a.MetricsBindAddress, nil
}

// kubeProxyStep plans the kube-proxy edit: setting addr, or giving back
// what an earlier apply set (addr nil; no step when there is nothing to
// give back).
func (c *Cluster) kubeProxyStep(ctx context.Context, addr *string) (*Step, error) {
	cmObj := map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": kubeproxy.Name, "namespace": kubeproxy.Namespace}}
	s := &Step{Cluster: c, Object: cmObj}
	cm, err := c.Core.CoreV1().ConfigMaps(kubeproxy.Namespace).Get(ctx, kubeproxy.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) && addr == nil {
		return nil, nil // no kube-proxy configuration (a kube-proxy replacement): nothing to give back
	}
	if err != nil {
		return nil, fmt.Errorf("reading ConfigMap %s/%s from the %s (kubeadm's kube-proxy configuration): %w", kubeproxy.Namespace, kubeproxy.Name, c, err)
	}
	live := cm.DeepCopy()
	confChanged, before, after, err := reconcileKubeProxy(cm, addr)
	if err != nil {
		return nil, fmt.Errorf("ConfigMap %s/%s: %w", kubeproxy.Namespace, kubeproxy.Name, err)
	}
	if !confChanged && slices.Equal(annotationOf(live, kubeproxy.RecordAnnotation), annotationOf(cm, kubeproxy.RecordAnnotation)) {
		if addr == nil {
			return nil, nil
		}
		s.Action = Unchanged
		return s, nil
	}
	s.Action = Edit
	switch {
	case confChanged && addr == nil:
		s.Diff = []string{fmt.Sprintf("data.%s metricsBindAddress: %q -> %q: eksa-metrics gives back the value it replaced (the spec no longer exposes kube-proxy's plain-HTTP metrics)", kubeproxy.Key, before, after)}
	case confChanged:
		s.Diff = []string{fmt.Sprintf("data.%s metricsBindAddress: %q -> %q (every other byte kept)", kubeproxy.Key, before, after)}
	default:
		s.Diff = []string{fmt.Sprintf("metadata.annotations[%s]: eksa-metrics' record of its edit (config.conf unchanged)", kubeproxy.RecordAnnotation)}
	}
	if confChanged {
		s.Rollout = "restarts DaemonSet kube-system/kube-proxy"
	}
	s.edit = func(ctx context.Context, dryRun bool) error {
		restart := false
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			cm, err := c.Core.CoreV1().ConfigMaps(kubeproxy.Namespace).Get(ctx, kubeproxy.Name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			live := cm.DeepCopy()
			confChanged, _, _, err := reconcileKubeProxy(cm, addr)
			if err != nil || !confChanged && slices.Equal(annotationOf(live, kubeproxy.RecordAnnotation), annotationOf(cm, kubeproxy.RecordAnnotation)) {
				return err
			}
			opts := metav1.UpdateOptions{FieldManager: FieldManager}
			if dryRun {
				opts.DryRun = []string{metav1.DryRunAll}
			}
			_, err = c.Core.CoreV1().ConfigMaps(kubeproxy.Namespace).Update(ctx, cm, opts) // carries resourceVersion: a conflict retries
			restart = err == nil && confChanged
			return err
		})
		if err != nil || dryRun || !restart {
			return err
		}
		patch := fmt.Sprintf(`{"spec":{"template":{"metadata":{"annotations":{%q:%q}}}}}`, templates.RestartAnnotation, time.Now().UTC().Format(time.RFC3339))
		_, err = c.Core.AppsV1().DaemonSets(kubeproxy.Namespace).Patch(ctx, kubeproxy.Name, types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{FieldManager: FieldManager})
		if apierrors.IsNotFound(err) {
			return nil // no kube-proxy DaemonSet (e.g. a kube-proxy replacement): the ConfigMap is all there is
		}
		return err
	}
	return s, nil
}

// annotationOf is an object's annotation as a comparable slice (nil when absent).
func annotationOf(o metav1.Object, key string) []string {
	if v, ok := o.GetAnnotations()[key]; ok {
		return []string{v}
	}
	return nil
}

// deploymentStep plans a management Deployment's edit e, or, with e nil,
// giving back an earlier apply's edit (no step when there is none). The
// edit is a read-modify-write (container args are an atomic list),
// retried on conflict; a Deployment that is not installed is skipped.
func (c *Cluster) deploymentStep(ctx context.Context, namespace, name string, e *templates.DeploymentEdit) (*Step, error) {
	obj := map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": map[string]any{"name": name, "namespace": namespace}}
	s := &Step{Cluster: c, Object: obj}
	d, err := c.Core.AppsV1().Deployments(namespace).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		if e == nil {
			return nil, nil
		}
		s.Action, s.Rollout = Skip, "not installed"
		return s, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading %s from the %s: %w", s.Name(), c, err)
	}
	edited := d.DeepCopy()
	changed, restarts, err := templates.ReconcileDeployment(edited, e)
	if err != nil {
		return nil, err
	}
	if !changed {
		if e == nil {
			return nil, nil
		}
		s.Action = Unchanged
		return s, nil
	}
	s.Action = Edit
	s.Diff = diff("spec.template.spec.containers", normalize(d.Spec.Template.Spec.Containers), normalize(edited.Spec.Template.Spec.Containers))
	s.Diff = append(s.Diff, diff("spec.template.spec.volumes", normalize(d.Spec.Template.Spec.Volumes), normalize(edited.Spec.Template.Spec.Volumes))...)
	if e == nil {
		s.Diff = append([]string{"eksa-metrics gives back its edit (the spec no longer edits this Deployment)"}, s.Diff...)
	}
	if !restarts {
		s.Diff = append(s.Diff, fmt.Sprintf("metadata.annotations[%s]: eksa-metrics' record of its edit", templates.EditRecordAnnotation))
	} else {
		s.Rollout = "restarts its pods; eksctl anywhere upgrade management-components replaces it, so apply again afterwards"
	}
	s.edit = func(ctx context.Context, dryRun bool) error {
		return retry.RetryOnConflict(retry.DefaultRetry, func() error {
			d, err := c.Core.AppsV1().Deployments(namespace).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			if changed, _, err := templates.ReconcileDeployment(d, e); err != nil || !changed {
				return err
			}
			opts := metav1.UpdateOptions{FieldManager: FieldManager}
			if dryRun {
				opts.DryRun = []string{metav1.DryRunAll}
			}
			_, err = c.Core.AppsV1().Deployments(namespace).Update(ctx, d, opts)
			return err
		})
	}
	return s, nil
}
