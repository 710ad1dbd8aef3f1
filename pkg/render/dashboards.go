package render

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/eksa-metrics/eksa-metrics/pkg/dashboards"
	"github.com/eksa-metrics/eksa-metrics/pkg/spec"
	"github.com/eksa-metrics/eksa-metrics/pkg/templates"
)

// GrafanaDashboardLabel is the label kube-prometheus-stack's Grafana
// sidecar loads dashboards from (its values: grafana.sidecar.dashboards.label
// and labelValue "1").
const GrafanaDashboardLabel = "grafana_dashboard"

// addDashboards renders the dashboards as JSON files (prometheus/dashboards/
// of -o kustomize, for an import) and, for a stack whose Grafana has the
// dashboards sidecar, as ConfigMaps in its namespace.
func (r *Result) addDashboards() error {
	c := r.Config
	for _, d := range dashboards.Dashboards(c) {
		js, err := dashboards.JSON(d)
		if err != nil {
			return err
		}
		if r.Dashboards == nil {
			r.Dashboards = map[string][]byte{}
		}
		r.Dashboards[d.Name+".json"] = js
		if !spec.Stacks[c.Stack].GrafanaSidecar {
			continue
		}
		cm := &corev1.ConfigMap{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
			ObjectMeta: metav1.ObjectMeta{Name: d.Name + "-dashboard", Namespace: c.MonitoringNamespace, Labels: map[string]string{templates.ManagedByLabel: templates.Prefix, GrafanaDashboardLabel: "1"}},
			Data:       map[string]string{d.Name + ".json": string(js)},
		}
		u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(cm)
		if err != nil {
			return err
		}
		delete(u, "status")
		delete(u["metadata"].(map[string]any), "creationTimestamp")
		r.add(Prometheus, u)
	}
	return nil
}
