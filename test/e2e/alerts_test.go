package e2e

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/eksa-metrics/eksa-metrics/pkg/render"
	"github.com/eksa-metrics/eksa-metrics/pkg/spec"
	"github.com/eksa-metrics/eksa-metrics/pkg/templates"
	"github.com/eksa-metrics/eksa-metrics/test/framework"
)

// alertCase is one promtool rule test: series, and the one alert they must
// fire (labels and the annotations an operator reads), or none.
type alertCase struct {
	alert   string
	series  map[string]string // series -> promtool values
	evalAt  string
	labels  map[string]string
	summary string
	desc    string
}

// alertCases: every alert eksa-metrics renders fires on its break, with the
// text an operator reads, and stays quiet beside it on healthy series.
var alertCases = []alertCase{{
	alert: "EksaMetricsTargetDown", evalAt: "15m",
	series: map[string]string{
		`up{job="kube-scheduler",instance="10.0.0.1:10259",metrics_path="/metrics/slis"}`: "0x20",
		`up{job="kube-etcd",instance="10.0.0.1:2381"}`:                                    "1x20",
		`up{job="kube-scheduler",instance="10.0.0.2:10259"}`:                              "0x5 1x15", // back before 10 minutes
	},
	labels:  map[string]string{"job": "kube-scheduler", "instance": "10.0.0.1:10259", "metrics_path": "/metrics/slis", "severity": "warning"},
	summary: "kube-scheduler at 10.0.0.1:10259 is not scraped",
	desc:    "The scrape of kube-scheduler at 10.0.0.1:10259 (/metrics/slis) has failed for 10 minutes. Run `eksa-metrics verify -f <cluster spec> --kubeconfig <management kubeconfig>`: it names the refusal (the proxy, its certificate, the scraper's RBAC). Then `kubectl -n kube-system get pods -l app.kubernetes.io/managed-by=eksa-metrics -o wide` and the logs of the proxy pod on that node.",
}, {
	alert: "EksaMetricsManagementControllerDown", evalAt: "15m",
	series: map[string]string{
		`up{job="capi-controller-manager",instance="10.0.1.5:8443"}`:         "0x20",
		`up{job="capi-kubeadm-bootstrap-controller-manager",instance="x:1"}`: "1x20",
	},
	labels:  map[string]string{"job": "capi-controller-manager", "instance": "10.0.1.5:8443", "severity": "critical", "namespace": "capi-system"},
	summary: "capi-controller-manager metrics are not scraped",
	desc:    "The management controller capi-controller-manager (namespace capi-system) has not been scraped for 10 minutes: it is down, or its metrics endpoint refuses the scraper. `kubectl -n capi-system get deploy capi-controller-manager`, `kubectl -n capi-system logs deploy/capi-controller-manager`, and `eksa-metrics verify` for the endpoint.",
}, {
	alert: "EksaMetricsReconcileErrors", evalAt: "30m",
	series: map[string]string{
		`controller_runtime_reconcile_errors_total{job="capi-controller-manager",controller="cluster"}`:           "0+6x40",
		`controller_runtime_reconcile_total{job="capi-controller-manager",controller="cluster",result="error"}`:   "0+6x40",
		`controller_runtime_reconcile_total{job="capi-controller-manager",controller="cluster",result="success"}`: "0+24x40",
		`controller_runtime_reconcile_errors_total{job="capi-controller-manager",controller="machine"}`:           "0+1x40",
		`controller_runtime_reconcile_total{job="capi-controller-manager",controller="machine",result="success"}`: "0+99x40",
		`controller_runtime_reconcile_total{job="capi-controller-manager",controller="machine",result="error"}`:   "0+1x40",
	},
	labels:  map[string]string{"job": "capi-controller-manager", "controller": "cluster", "severity": "warning", "namespace": "capi-system"},
	summary: "capi-controller-manager: cluster reconciles fail",
	desc:    "More than 10% of the reconciles of controller cluster in capi-controller-manager (namespace capi-system) have failed for 15 minutes (20%). `kubectl -n capi-system logs deploy/capi-controller-manager` shows the errors; `kubectl get clusters.anywhere.eks.amazonaws.com -A` and the objects' conditions show which cluster is stuck.",
}, {
	alert: "EksaMetricsWorkqueueBacklog", evalAt: "20m",
	series: map[string]string{
		`workqueue_depth{job="capi-controller-manager",name="cluster"}`: "150x30",
		`workqueue_depth{job="capi-controller-manager",name="machine"}`: "3x30",
	},
	labels:  map[string]string{"job": "capi-controller-manager", "name": "cluster", "severity": "warning", "namespace": "capi-system"},
	summary: "capi-controller-manager: work queue cluster is backed up",
	desc:    "The work queue cluster of capi-controller-manager (namespace capi-system) has held more than 100 items for 15 minutes (150). `kubectl -n capi-system logs deploy/capi-controller-manager`; check the management API server's latency.",
}, {
	alert: "EksaMetricsNoLeader", evalAt: "10m",
	series: map[string]string{
		`leader_election_master_status{job="capi-controller-manager",name="controller-leader-election-capi"}`:                    "0x20",
		`leader_election_master_status{job="capi-kubeadm-bootstrap-controller-manager",name="kubeadm-bootstrap-manager-leader"}`: "1x20",
	},
	labels:  map[string]string{"job": "capi-controller-manager", "severity": "critical", "namespace": "capi-system"},
	summary: "capi-controller-manager has no leader",
	desc:    "No replica of capi-controller-manager (namespace capi-system) has held the leader lease for 5 minutes, so nothing reconciles. `kubectl -n capi-system get leases`, `kubectl -n capi-system logs deploy/capi-controller-manager`.",
}, {
	alert: "EksaMetricsClusterNotApplied", evalAt: "40m",
	series: map[string]string{
		`eksa_metrics_cluster_applied{cluster_namespace="fleet",cluster="w1",metricsconfig="all"}`: "0x50",
		`eksa_metrics_cluster_applied{cluster_namespace="fleet",cluster="w2",metricsconfig="all"}`: "1x50",
		`eksa_metrics_cluster_applied{cluster_namespace="fleet",cluster="w3",metricsconfig="all"}`: "0x20 1x30", // applied after 20 minutes
	},
	labels:  map[string]string{"cluster_namespace": "fleet", "cluster": "w1", "metricsconfig": "all", "severity": "warning"},
	summary: "fleet/w1 is not applied",
	desc:    "The eksa-metrics controller has not applied MetricsConfig all to Cluster fleet/w1 for 30 minutes, so its components may not be scraped. `kubectl -n fleet get metricsconfigbinding w1.all -o yaml` (its conditions and status.lastError say why); `kubectl -n eksa-metrics-system logs deploy/eksa-metrics-controller`.",
}, {
	alert: "EksaMetricsWorkloadUnreachable", evalAt: "15m",
	series: map[string]string{
		`eksa_metrics_cluster_unreachable{cluster_namespace="fleet",cluster="w3",metricsconfig="all"}`: "1x20",
		`eksa_metrics_cluster_unreachable{cluster_namespace="fleet",cluster="w1",metricsconfig="all"}`: "0x20",
	},
	labels:  map[string]string{"cluster_namespace": "fleet", "cluster": "w3", "metricsconfig": "all", "severity": "warning"},
	summary: "the workload cluster of fleet/w3 does not answer",
	desc:    "The eksa-metrics controller has not reached the API server of Cluster fleet/w3 for 10 minutes (its kubeconfig Secret w3-kubeconfig in eksa-system, or the endpoint). `kubectl -n fleet get metricsconfigbinding w3.all -o yaml` (its conditions and status.lastError say why); `kubectl --kubeconfig <(kubectl -n eksa-system get secret w3-kubeconfig -o jsonpath='{.data.value}' | base64 -d) get --raw /readyz`.",
}, {
	alert: "EksaMetricsCertificateRenewalOverdue", evalAt: "3h",
	series: map[string]string{
		`eksa_metrics_serving_certificate_renewal_timestamp_seconds{cluster_namespace="fleet",cluster="w1",metricsconfig="all"}`: "3600x200",           // due at 1h, not renewed
		`eksa_metrics_serving_certificate_renewal_timestamp_seconds{cluster_namespace="fleet",cluster="w2",metricsconfig="all"}`: "3600x100 90000x100", // renewed after 100 minutes
	},
	labels:  map[string]string{"cluster_namespace": "fleet", "cluster": "w1", "metricsconfig": "all", "severity": "warning"},
	summary: "the serving certificates of fleet/w1 are not renewed",
	desc:    "A serving certificate of the proxies of Cluster fleet/w1 was due for renewal more than an hour ago and the controller has not renewed it; when it expires, every scrape of those proxies fails verification. `kubectl -n fleet get metricsconfigbinding w1.all -o yaml` (its conditions and status.lastError say why); `eksa-metrics validate -f <cluster spec> --kubeconfig <management kubeconfig>` (check serving-certificates).",
}, {
	alert: "EksaMetricsDriftRepeated", evalAt: "60m",
	series: map[string]string{
		`eksa_metrics_drift_repairs_total{cluster_namespace="fleet",cluster="w1"}`: "0+1x70",    // every minute
		`eksa_metrics_drift_repairs_total{cluster_namespace="fleet",cluster="w2"}`: "0+0.05x70", // three an hour
	},
	labels:  map[string]string{"cluster_namespace": "fleet", "cluster": "w1", "severity": "warning"},
	summary: "what eksa-metrics applies to fleet/w1 keeps being changed",
	desc:    "The eksa-metrics controller re-applied Cluster fleet/w1 60 times in an hour because another writer changed or deleted its objects. `kubectl -n eksa-metrics-system logs deploy/eksa-metrics-controller` names each object (logger drift); find the other writer with `kubectl get <kind> <name> -o yaml --show-managed-fields` and make it leave eksa-metrics' objects alone.",
}, {
	alert: "EksaMetricsKubeletServingDenied", evalAt: "10m",
	series: map[string]string{
		`eksa_metrics_kubelet_serving_decisions_total{job="kubelet-serving-approver",instance="10.0.0.9:8443",decision="denied",cause="refused"}`:   "0 0 0 0 2x10",
		`eksa_metrics_kubelet_serving_decisions_total{job="kubelet-serving-approver",instance="10.0.0.9:8443",decision="denied",cause="unvouched"}`: "0x14",
		`eksa_metrics_kubelet_serving_decisions_total{job="kubelet-serving-approver",instance="10.0.0.9:8443",decision="approved",cause=""}`:        "0+1x14",
	},
	labels:  map[string]string{"job": "kubelet-serving-approver", "instance": "10.0.0.9:8443", "decision": "denied", "cause": "refused", "severity": "warning"},
	summary: "the kubelet approver denied serving-certificate requests (refused)",
	desc:    "The kubelet serving-certificate approver denied 2 request(s) in 15 minutes, cause refused: unvouched, the node's Cluster API Machine did not list the requested names within --no-machine-grace; refused, a name that is never approved (the API server's names, a Service address, loopback, another Machine's address, a wildcard); size, a request larger than any kubelet's. A node asking for another's names may be compromised. `kubectl get csr --field-selector spec.signerName=kubernetes.io/kubelet-serving` and the Denied condition's message, the events in the default namespace, `kubectl -n kube-system logs deploy/eksa-metrics-kubelet-serving-approver`; for unvouched, `kubectl -n eksa-system get machines -o wide` in the cluster that holds the Machines.",
}, {
	alert: "EksaMetricsKubeletServingApprovalsHeld", evalAt: "70m",
	series: map[string]string{
		`eksa_metrics_kubelet_serving_approvals_held{job="kubelet-serving-approver",instance="10.0.0.9:8443"}`: "1x80",
		`eksa_metrics_kubelet_serving_approvals_held{job="kubelet-serving-approver",instance="10.0.2.9:8443"}`: "0x80",
	},
	labels:  map[string]string{"job": "kubelet-serving-approver", "instance": "10.0.0.9:8443", "severity": "warning"},
	summary: "the kubelet approver approves nothing: kube-controller-manager may sign with the cluster CA",
	desc:    "For an hour the kubelet serving-certificate approver has approved no request because a control-plane kube-controller-manager runs with the cluster CA as its signer (a machine that predates tls.kubeletServingCertificates), or none can be seen; nodes that join or renew get no serving certificate, and their scrapes, kubectl logs and exec fail. `kubectl -n kube-system logs deploy/eksa-metrics-kubelet-serving-approver` says which node; run `eksctl anywhere upgrade cluster` with the cluster.yaml eksa-metrics generated.",
}}

// TestAlertsWithPromtool: the rule file of a management cluster (every
// family of controllers) passes promtool check rules, and promtool test
// rules proves every alert fires on its break with its text and not beside
// it. A rendered alert without a case fails.
func TestAlertsWithPromtool(t *testing.T) {
	promtool := framework.Binary(t, "promtool")
	raw, err := os.ReadFile("../../examples/vsphere-management.yaml")
	if err != nil {
		t.Fatal(err)
	}
	f, err := spec.Load("vsphere-management.yaml", bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	r, err := render.RenderFile(f, spec.Options{})
	if err != nil {
		t.Fatal(err)
	}
	// And the kubelet approver's alerts (tls.kubeletServingCertificates).
	r.Config.KubeletServingCertificates = true
	var names []string
	for _, g := range templates.RuleGroups(r.Config) {
		for _, a := range g.Alerts {
			if !slices.Contains(names, a.Name) {
				names = append(names, a.Name)
			}
		}
	}
	for _, n := range names {
		if !slices.ContainsFunc(alertCases, func(c alertCase) bool { return c.alert == n }) {
			t.Errorf("alert %s has no promtool test case", n)
		}
	}
	dir := t.TempDir()
	writeFileT(t, filepath.Join(dir, "rules.yaml"), templates.RulesFile(r.Config))
	var tests []any
	for _, c := range alertCases {
		var series []any
		for s, v := range c.series {
			series = append(series, map[string]any{"series": s, "values": v})
		}
		tests = append(tests, map[string]any{
			"interval": "1m", "input_series": series,
			"alert_rule_test": []any{map[string]any{"eval_time": c.evalAt, "alertname": c.alert, "exp_alerts": []any{map[string]any{
				"exp_labels": c.labels,
				"exp_annotations": map[string]any{"summary": c.summary, "description": c.desc,
					"runbook_url": templates.AlertsDoc + "#" + strings.ToLower(c.alert)},
			}}}},
		})
	}
	doc, err := yaml.Marshal(map[string]any{"rule_files": []string{"rules.yaml"}, "evaluation_interval": "1m", "tests": tests})
	if err != nil {
		t.Fatal(err)
	}
	writeFileT(t, filepath.Join(dir, "tests.yaml"), string(doc))
	for _, args := range [][]string{{"check", "rules", filepath.Join(dir, "rules.yaml")}, {"test", "rules", filepath.Join(dir, "tests.yaml")}} {
		out, err := exec.Command(promtool, args...).CombinedOutput()
		if err != nil || !strings.Contains(string(out), "SUCCESS") {
			t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}

func writeFileT(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
