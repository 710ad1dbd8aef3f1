package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/eksa-metrics/eksa-metrics/pkg/kubeproxy"
	"github.com/eksa-metrics/eksa-metrics/test/framework"
)

// The controller rows of the day-two matrix: a MetricsConfig edited from
// spec A to spec B leaves the workload cluster and its KubeadmControlPlane
// on the management cluster as the controller leaves them when B is its
// first spec. The fresh state of B is taken on the same cluster after the
// MetricsConfig is deleted (the controller then releases everything) and
// created again with B; the release itself ends as a cluster eksa-metrics
// never touched, which is checked first. The controller runs with exactly
// the RBAC its manifests grant.
func TestControllerTransitionsMatchAFreshReconcile(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the controller against a fleet")
	}
	f := newFleet(t, "w1")
	w := f.workloads["w1"]
	kubeProxy := map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": kubeproxy.Name, "namespace": kubeproxy.Namespace},
		"data": map[string]any{kubeproxy.Key: framework.KubeadmKubeProxyConfig}}
	if err := w.Apply(context.Background(), "kubeadm", true, kubeProxy); err != nil {
		t.Fatal(err)
	}
	w.ServiceAccount(t, "monitoring", "default")
	f.startController(t, &counter{reqs: map[string]int{}})

	untouched := f.controllerState(t)
	base := map[string]any{}
	rows := []struct {
		name string
		spec map[string]any
	}{
		{"bindAddress with allowInsecure", map[string]any{"exposure": "bindAddress", "allowInsecure": true}},
		{"TLS 1.3", map[string]any{"tls": map[string]any{"minVersion": "VersionTLS13"}}},
		{"kubeProxy off", map[string]any{"components": map[string]any{"kubeProxy": map[string]any{"enabled": false}}}},
		{"z-pages on", map[string]any{"zPages": map[string]any{"statusz": true, "flagz": true}}},
		{"certificates none", map[string]any{"tls": map[string]any{"certificates": "none"}}},
		{"kube-prometheus-stack", map[string]any{"scrapeConfig": map[string]any{"stack": "kube-prometheus-stack", "release": "kps"}}},
	}
	fresh := map[string]map[string]string{}
	freshOf := func(name string, spec map[string]any) map[string]string {
		if s, ok := fresh[name]; ok {
			return s
		}
		f.deleteMetricsConfig(t, "chain")
		if d := stateDiff(f.controllerState(t), untouched); len(d) > 0 {
			t.Fatalf("after the MetricsConfig is deleted, w1 differs from a cluster eksa-metrics never touched in %d places:\n  %s", len(d), strings.Join(d, "\n  "))
		}
		f.reconciled(t, "chain", spec)
		fresh[name] = f.controllerState(t)
		return fresh[name]
	}
	for _, row := range rows {
		for _, step := range []struct {
			from, to string
			a, b     map[string]any
		}{{"base", row.name, base, row.spec}, {row.name, "base", row.spec, base}} {
			want := freshOf(step.to, step.b)
			f.reconciled(t, "chain", step.a)
			f.reconciled(t, "chain", step.b)
			if d := stateDiff(f.controllerState(t), want); len(d) > 0 {
				t.Errorf("controller %s -> %s: the clusters differ from a fresh reconcile of %s in %d places:\n  %s", step.from, step.to, step.to, len(d), strings.Join(d, "\n  "))
			} else {
				t.Logf("| controller | %s | %s | state equal |", step.from, step.to)
			}
		}
	}
}

// controllerState is the snapshot of the workload cluster w1 and of the
// management cluster (w1's KubeadmControlPlane), side by side.
func (f *fleet) controllerState(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	for k, v := range snapshot(t, f.workloads["w1"]) {
		out["w1 "+k] = v
	}
	for k, v := range snapshot(t, f.mgmt) {
		if strings.HasPrefix(k, "kubeadmcontrolplanes ") {
			out["management "+k] = v
		}
	}
	return out
}

// reconciled applies MetricsConfig default/name for w1 with the base spec
// and more (rollouts allowed), and waits until the controller has applied
// that generation to w1.
func (f *fleet) reconciled(t *testing.T, name string, more map[string]any) {
	t.Helper()
	spec := map[string]any{"clusterRef": map[string]any{"kind": "Cluster", "name": "w1"},
		"scrapers":                 []any{map[string]any{"kind": "Group", "name": "metrics-readers"}},
		"allowControlPlaneRollout": true}
	for k, v := range more {
		spec[k] = v
	}
	// Server-side apply drops the fields the last spec set and this one
	// does not.
	f.putMetricsConfig(t, "default", name, spec)
	f.waitFor(t, "MetricsConfig default/"+name+" applied to w1", func() error {
		mc, err := f.mgmt.Dynamic.Resource(metricsConfigGVR).Namespace("default").Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		for _, c := range f.clusterStates(t, "default", name) {
			c := c.(map[string]any)
			conds, _ := c["conditions"].([]any)
			for _, cond := range conds {
				cond := cond.(map[string]any)
				if cond["type"] == "Applied" && cond["status"] == "True" && cond["observedGeneration"] == mc.GetGeneration() {
					return nil
				}
			}
			return fmt.Errorf("generation %d: %v", mc.GetGeneration(), c)
		}
		return fmt.Errorf("no MetricsConfigBinding for w1 (status %v)", mc.Object["status"])
	})
}

// deleteMetricsConfig deletes MetricsConfig default/name and waits until it
// is gone (the controller has released w1).
func (f *fleet) deleteMetricsConfig(t *testing.T, name string) {
	t.Helper()
	ri := f.mgmt.Dynamic.Resource(metricsConfigGVR).Namespace("default")
	if err := ri.Delete(context.Background(), name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	f.waitFor(t, "MetricsConfig default/"+name+" released and gone", func() error {
		if _, err := ri.Get(context.Background(), name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("still there: %v", err)
		}
		return nil
	})
}
