package controller

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	metricsv1alpha1 "github.com/eksa-metrics/eksa-metrics/pkg/apis/metrics/v1alpha1"
)

// The controller's fleet metrics, served with controller-runtime's on its
// metrics endpoint (--metrics-bind-address): one series per selected Cluster,
// labelled with its namespace, its name and the MetricsConfig that selects
// it (docs/controller.md, "Metrics"; the fleet alerts of docs/alerts.md read
// them).
var (
	fleetLabels = []string{"cluster_namespace", "cluster", "metricsconfig"}

	clusterApplied = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "eksa_metrics_cluster_applied",
		Help: "1 when the Cluster's Applied condition is True (the last apply succeeded), else 0.",
	}, fleetLabels)
	clusterUnreachable = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "eksa_metrics_cluster_unreachable",
		Help: "1 when the Cluster's workload cluster did not answer the last attempt, else 0.",
	}, fleetLabels)
	clusterLastApplied = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "eksa_metrics_cluster_last_applied_timestamp_seconds",
		Help: "When the controller last applied the Cluster successfully (Unix time).",
	}, fleetLabels)
	certificateRenewal = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "eksa_metrics_serving_certificate_renewal_timestamp_seconds",
		Help: "When the earliest of the Cluster's serving certificates is due for renewal (Unix time; at two thirds of its lifetime), as of the last successful apply.",
	}, fleetLabels)
	driftRepairs = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "eksa_metrics_drift_repairs_total",
		Help: "Re-plans of the Cluster because another writer changed, or deleted, what eksa-metrics applied to it.",
	}, []string{"cluster_namespace", "cluster"})
)

func init() {
	metrics.Registry.MustRegister(clusterApplied, clusterUnreachable, clusterLastApplied, certificateRenewal, driftRepairs)
}

func fleetValues(mc types.NamespacedName, cluster string) []string {
	return []string{mc.Namespace, cluster, mc.Name}
}

// observe updates a Cluster's series from the state the Cluster controller
// recorded.
func observe(mc types.NamespacedName, cluster string, st metricsv1alpha1.MetricsConfigBindingStatus, now time.Time) {
	lv := fleetValues(mc, cluster)
	applied := meta.FindStatusCondition(st.Conditions, metricsv1alpha1.ConditionApplied)
	ok := applied != nil && applied.Status == "True"
	clusterApplied.WithLabelValues(lv...).Set(boolValue(ok))
	unreachable := false
	for _, c := range st.Conditions {
		unreachable = unreachable || c.Status != "True" && c.Reason == metricsv1alpha1.ReasonUnreachable
	}
	clusterUnreachable.WithLabelValues(lv...).Set(boolValue(unreachable))
	// The repairs' counter exists from the first observation, at 0: a
	// series that appears at 1 hides its first repair from increase().
	driftRepairs.WithLabelValues(mc.Namespace, cluster)
	if ok && st.LastError == "" {
		clusterLastApplied.WithLabelValues(lv...).Set(float64(now.Unix()))
	}
}

// observeRenewal records when the Cluster's serving certificates are next
// due for renewal (zero: none, or the apply failed and the last value
// stays, so that a renewal that keeps failing shows as overdue).
func observeRenewal(mc types.NamespacedName, cluster string, at time.Time) {
	if !at.IsZero() {
		certificateRenewal.WithLabelValues(fleetValues(mc, cluster)...).Set(float64(at.Unix()))
	}
}

// unobserve drops a Cluster's series once no MetricsConfig keeps it (empty
// cluster: every Cluster of the MetricsConfig).
func unobserve(mc types.NamespacedName, cluster string) {
	match := prometheus.Labels{"cluster_namespace": mc.Namespace, "metricsconfig": mc.Name}
	if cluster != "" {
		match["cluster"] = cluster
	}
	for _, v := range []*prometheus.GaugeVec{clusterApplied, clusterUnreachable, clusterLastApplied, certificateRenewal} {
		v.DeletePartialMatch(match)
	}
}

func boolValue(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
