package render

import (
	"github.com/eksa-metrics/eksa-metrics/pkg/dashboards"
	"github.com/eksa-metrics/eksa-metrics/pkg/spec"
	"github.com/eksa-metrics/eksa-metrics/pkg/templates"
)

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
		if spec.Stacks[c.Stack].GrafanaSidecar {
			r.add(Prometheus, templates.DashboardConfigMap(c, d.Name, js))
		}
	}
	return nil
}
