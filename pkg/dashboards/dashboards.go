// Package dashboards renders Grafana dashboards for what eksa-metrics
// exposes, with the Grafana Foundation SDK's builders: the exposed targets,
// the management controllers and the fleet the controller keeps. The panels
// are data (Dashboards), so that the tests can run every query against what
// a real Prometheus scraped.
package dashboards

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/grafana/grafana-foundation-sdk/go/common"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/grafana/grafana-foundation-sdk/go/prometheus"
	"github.com/grafana/grafana-foundation-sdk/go/timeseries"

	"github.com/eksa-metrics/eksa-metrics/pkg/spec"
	"github.com/eksa-metrics/eksa-metrics/pkg/templates"
)

// Panel is one time series panel: a PromQL query and how it reads.
type Panel struct {
	Title, Description, Unit, Expr, Legend string
}

// Dashboard is one dashboard: its file name (and uid) and its panels.
type Dashboard struct {
	Name, Title string
	Panels      []Panel
}

// Dashboards are the dashboards for the configuration: the exposed targets
// always, the management controllers and the fleet on a management cluster.
func Dashboards(c *spec.Config) []Dashboard {
	var out []Dashboard
	if jobs := templates.ExposedJobs(c); len(jobs) > 0 {
		sel := matcher(jobs)
		out = append(out, Dashboard{Name: templates.Prefix + "-targets", Title: "eksa-metrics / exposed components", Panels: []Panel{
			{Title: "Targets up", Description: "Instances scraped successfully, per job (the proxies, the components behind them).", Expr: fmt.Sprintf("sum by (job) (up{%s})", sel), Legend: "{{job}}"},
			{Title: "Targets down", Description: "Instances whose last scrape failed: eksa-metrics verify names why (EksaMetricsTargetDown).", Expr: fmt.Sprintf("sum by (job, instance) (1 - up{%s})", sel), Legend: "{{job}} {{instance}}"},
			{Title: "Scrape duration", Description: "How long each scrape takes, through the proxies.", Unit: "s", Expr: fmt.Sprintf("max by (job) (scrape_duration_seconds{%s})", sel), Legend: "{{job}}"},
			{Title: "Samples per scrape", Description: "Series each job brings, after the high-cardinality drops.", Expr: fmt.Sprintf("sum by (job) (scrape_samples_post_metric_relabeling{%s})", sel), Legend: "{{job}}"},
		}})
	}
	if jobs := templates.ManagementJobs(c); len(jobs) > 0 {
		sel := matcher(jobs)
		out = append(out, Dashboard{Name: templates.Prefix + "-management", Title: "eksa-metrics / management controllers", Panels: []Panel{
			{Title: "Controllers up", Expr: fmt.Sprintf("up{%s}", sel), Legend: "{{job}}"},
			{Title: "Reconciles per second", Unit: "ops", Expr: fmt.Sprintf("sum by (job, controller) (rate(controller_runtime_reconcile_total{%s}[5m]))", sel), Legend: "{{job}} {{controller}}"},
			{Title: "Reconcile errors per second", Description: "EksaMetricsReconcileErrors fires above one in ten for 15 minutes.", Unit: "ops", Expr: fmt.Sprintf("sum by (job, controller) (rate(controller_runtime_reconcile_errors_total{%s}[5m]))", sel), Legend: "{{job}} {{controller}}"},
			{Title: "Work queue depth", Expr: fmt.Sprintf("sum by (job, name) (workqueue_depth{%s})", sel), Legend: "{{job}} {{name}}"},
			{Title: "Leader", Description: "1 where a replica holds the lease.", Expr: fmt.Sprintf("max by (job) (leader_election_master_status{%s})", sel), Legend: "{{job}}"},
		}})
	}
	if c.Management {
		out = append(out, Dashboard{Name: templates.Prefix + "-fleet", Title: "eksa-metrics / fleet", Panels: append(ClusterTargets(c), []Panel{
			{Title: "Clusters applied", Expr: "sum by (metricsconfig) (eksa_metrics_cluster_applied)", Legend: "{{metricsconfig}}"},
			{Title: "Clusters not applied", Expr: "eksa_metrics_cluster_applied == 0", Legend: "{{cluster_namespace}}/{{cluster}}"},
			{Title: "Workload clusters unreachable", Expr: "eksa_metrics_cluster_unreachable == 1", Legend: "{{cluster_namespace}}/{{cluster}}"},
			{Title: "Since the last apply", Unit: "s", Expr: "time() - eksa_metrics_cluster_last_applied_timestamp_seconds", Legend: "{{cluster_namespace}}/{{cluster}}"},
			{Title: "Until the serving certificates' renewal", Description: "Negative: renewal is overdue (EksaMetricsCertificateRenewalOverdue).", Unit: "s", Expr: "eksa_metrics_serving_certificate_renewal_timestamp_seconds - time()", Legend: "{{cluster_namespace}}/{{cluster}}"},
			{Title: "Drift repairs per hour", Expr: "sum by (cluster_namespace, cluster) (increase(eksa_metrics_drift_repairs_total[1h]))", Legend: "{{cluster_namespace}}/{{cluster}}"},
		}...)})
	}
	return out
}

// ClusterTargets are the fleet dashboard's panels of the exposed
// components' targets per EKS-A cluster, by the cluster target label every
// cluster's rendered scrape configuration sets: data where the fleet's
// metrics meet (each cluster's Prometheus writing remotely to one store, or
// federated), one line per cluster in a single cluster's Prometheus.
func ClusterTargets(c *spec.Config) []Panel {
	sel := fmt.Sprintf("%s!=\"\"", templates.TargetClusterLabel)
	if jobs := templates.ExposedJobs(c); len(jobs) > 0 {
		sel += "," + matcher(jobs)
	}
	by := templates.TargetClusterLabel
	return []Panel{
		{Title: "Targets up per cluster", Description: "Instances of the exposed components scraped successfully, per EKS-A cluster (the cluster label of eksa-metrics' targets).", Expr: fmt.Sprintf("sum by (%s) (up{%s})", by, sel), Legend: "{{" + by + "}}"},
		{Title: "Scrape failures per cluster", Description: "Instances whose last scrape failed, per EKS-A cluster: EksaMetricsTargetDown names the instance, eksa-metrics verify the reason.", Expr: fmt.Sprintf("sum by (%s) (1 - up{%s})", by, sel), Legend: "{{" + by + "}}"},
	}
}

func matcher(jobs []string) string {
	return fmt.Sprintf("job=~%q", strings.Join(jobs, "|"))
}

// JSON renders a dashboard as Grafana's JSON model, with a Prometheus data
// source variable.
func JSON(d Dashboard) ([]byte, error) {
	ds := common.DataSourceRef{Type: ptr("prometheus"), Uid: ptr("${datasource}")}
	b := dashboard.NewDashboardBuilder(d.Title).Uid(d.Name).Tags([]string{templates.Prefix}).Refresh("1m").Time("now-6h", "now").
		Timezone(common.TimeZoneBrowser).
		WithVariable(dashboard.NewDatasourceVariableBuilder("datasource").Label("Data source").Type("prometheus"))
	for i, p := range d.Panels {
		pb := timeseries.NewPanelBuilder().Title(p.Title).Datasource(ds).Height(8).Span(12).
			WithTarget(prometheus.NewDataqueryBuilder().Expr(p.Expr).LegendFormat(p.Legend).RefId(fmt.Sprintf("A%d", i)))
		if p.Description != "" {
			pb = pb.Description(p.Description)
		}
		if p.Unit != "" {
			pb = pb.Unit(p.Unit)
		}
		b = b.WithPanel(pb)
	}
	built, err := b.Build()
	if err != nil {
		return nil, fmt.Errorf("dashboard %s: %w", d.Name, err)
	}
	return json.MarshalIndent(built, "", "  ")
}

func ptr[T any](v T) *T { return &v }
