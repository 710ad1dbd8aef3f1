package integration

import (
	"context"
	"fmt"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/eksa-metrics/eksa-metrics/pkg/templates"
)

// Every kind the controller keeps in a workload cluster is drift-watched:
// an object of each, deleted by someone else, is put back (a new UID). The
// ServiceMonitors and PrometheusRules of the scrape configuration were not
// watched (their destination is the Prometheus's, applied to the workload
// cluster too) and stayed deleted.
func TestControllerRestoresEveryKindItKeeps(t *testing.T) {
	f := newFleet(t, "w1")
	// The scraper, whose token the controller mints after checking its rights.
	f.workloads["w1"].ServiceAccount(t, "monitoring", "prometheus-k8s")
	f.startController(t, &counter{reqs: map[string]int{}})
	f.metricsConfigSpec(t, map[string]any{"scrapeConfig": map[string]any{"stack": "kube-prometheus", "namespace": "monitoring"},
		"scrapers": []any{map[string]any{"kind": "ServiceAccount", "name": "prometheus-k8s", "namespace": "monitoring"}}})
	f.appliedAll(t, 1)
	ctx := context.Background()
	w1 := f.workloads["w1"]
	kinds := []schema.GroupVersionResource{
		{Group: "apps", Version: "v1", Resource: "daemonsets"},
		{Version: "v1", Resource: "services"},
		{Version: "v1", Resource: "serviceaccounts"},
		{Version: "v1", Resource: "configmaps"},
		{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterroles"},
		{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterrolebindings"},
		{Group: "monitoring.coreos.com", Version: "v1", Resource: "servicemonitors"},
		{Group: "monitoring.coreos.com", Version: "v1", Resource: "prometheusrules"},
	}
	sel := metav1.ListOptions{LabelSelector: templates.ManagedByLabel + "=" + templates.Prefix}
	for _, gvr := range kinds {
		t.Run(gvr.Resource, func(t *testing.T) {
			l, err := w1.Dynamic.Resource(gvr).List(ctx, sel)
			if err != nil {
				t.Fatal(err)
			}
			if len(l.Items) == 0 {
				t.Fatalf("the controller keeps no %s in w1", gvr.Resource)
			}
			o := l.Items[0]
			ri := w1.Dynamic.Resource(gvr).Namespace(o.GetNamespace())
			if err := ri.Delete(ctx, o.GetName(), metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			f.waitFor(t, fmt.Sprintf("%s %s/%s put back in w1", gvr.Resource, o.GetNamespace(), o.GetName()), func() error {
				back, err := ri.Get(ctx, o.GetName(), metav1.GetOptions{})
				if err != nil {
					return err
				}
				if back.GetUID() == o.GetUID() {
					return fmt.Errorf("not deleted yet")
				}
				return nil
			})
		})
	}
}
