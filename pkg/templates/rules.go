package templates

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/yaml"

	"github.com/eksa-metrics/eksa-metrics/pkg/spec"
)

// The rules eksa-metrics renders: for what only it scrapes (the
// loopback-only components behind its proxies, the management controllers),
// with the job labels of its targets. kubernetes-mixin's absent alerts say
// that every instance of a job is gone; these say which instance, and what
// to run. docs/alerts.md has a runbook section per alert.
const (
	RulesName = Prefix + "-rules"
	// RulesFileKey is the rule file's key in the scrape ConfigMap.
	RulesFileKey = "alerting-rules.yaml"
	// AlertsDoc is where each alert's runbook_url points.
	AlertsDoc = "https://github.com/eksa-metrics/eksa-metrics/blob/main/docs/alerts.md"
)

// Alert is one alerting rule with the reasoning behind its threshold.
type Alert struct {
	Name, Expr, For, Severity string
	// Namespace, for a management family's alerts, is its label namespace
	// (routing, and one rule per family under one alert name).
	Namespace            string
	Summary, Description string
	// Metrics are the metric names Expr reads (the e2e checks that the real
	// components expose them).
	Metrics []string
}

// RuleGroup is a named group of alerts.
type RuleGroup struct {
	Name   string
	Alerts []Alert
}

// RuleGroups are the alerting rules for the configuration: the targets
// eksa-metrics exposes, and the management controllers by family (their
// namespace: EKS Anywhere, Cluster API core and kubeadm, the provider,
// etcdadm, curated packages, cert-manager).
func RuleGroups(c *spec.Config) []RuleGroup {
	jobs := ExposedJobs(c)
	var out []RuleGroup
	if len(jobs) > 0 {
		out = append(out, RuleGroup{Name: Prefix + "-targets", Alerts: []Alert{targetDown(jobs)}})
	}
	var families []string
	byFamily := map[string][]string{}
	for _, m := range ManagementComponents(c) {
		if _, ok := byFamily[m.Namespace]; !ok {
			families = append(families, m.Namespace)
		}
		byFamily[m.Namespace] = append(byFamily[m.Namespace], m.Deployment)
	}
	if c.KubeletServingCertificates {
		out = append(out, RuleGroup{Name: Prefix + "-kubelet-serving", Alerts: kubeletServingAlerts()})
	}
	if c.Management {
		out = append(out, RuleGroup{Name: Prefix + "-fleet", Alerts: fleetAlerts()})
	}
	for _, ns := range families {
		alerts := managementAlerts(ns, byFamily[ns])
		for i := range alerts {
			alerts[i].Namespace = ns
		}
		out = append(out, RuleGroup{Name: Prefix + "-management-" + ns, Alerts: alerts})
	}
	return out
}

// ExposedJobs are the job labels of the cluster components eksa-metrics
// renders targets for (not those the stack scrapes itself).
func ExposedJobs(c *spec.Config) []string {
	var jobs []string
	for _, t := range targets(c) {
		if !t.mgmt && !slices.Contains(jobs, t.job) {
			jobs = append(jobs, t.job)
		}
	}
	return jobs
}

// ManagementJobs are the job labels of the management controllers.
func ManagementJobs(c *spec.Config) []string {
	var jobs []string
	for _, m := range ManagementComponents(c) {
		jobs = append(jobs, m.Deployment)
	}
	return jobs
}

func jobMatcher(jobs []string) string {
	q := make([]string, len(jobs))
	for i, j := range jobs {
		q[i] = regexp.QuoteMeta(j)
	}
	return fmt.Sprintf("job=~%q", strings.Join(q, "|"))
}

// targetDown: one instance of a component eksa-metrics exposes has not been
// scraped for 10 minutes (a restart of a static pod or a proxy pod takes
// less; kubernetes-mixin's absent alerts wait 15 minutes for a whole job).
func targetDown(jobs []string) Alert {
	return Alert{
		Name: "EksaMetricsTargetDown", Expr: fmt.Sprintf("up{%s} == 0", jobMatcher(jobs)), For: "10m", Severity: "warning",
		Summary: "{{ $labels.job }} at {{ $labels.instance }} is not scraped",
		Description: "The scrape of {{ $labels.job }} at {{ $labels.instance }}{{ with $labels.metrics_path }} ({{ . }}){{ end }} has failed for 10 minutes. " +
			"Run `eksa-metrics verify -f <cluster spec> --kubeconfig <management kubeconfig>`: it names the refusal (the proxy, its certificate, the scraper's RBAC). " +
			"Then `kubectl -n kube-system get pods -l app.kubernetes.io/managed-by=eksa-metrics -o wide` and the logs of the proxy pod on that node.",
		Metrics: []string{"up"},
	}
}

// managementAlerts are the alerts of one family of management controllers,
// from what every controller-runtime manager serves (cert-manager is not
// one: it has no reconcile counters, and gets the others).
func managementAlerts(namespace string, deployments []string) []Alert {
	sel := jobMatcher(deployments)
	logs := fmt.Sprintf("`kubectl -n %s logs deploy/{{ $labels.job }}`", namespace)
	alerts := []Alert{{
		// As the targets: a controller restart takes less than 10 minutes.
		Name: "EksaMetricsManagementControllerDown", Expr: fmt.Sprintf("up{%s} == 0", sel), For: "10m", Severity: "critical",
		Summary:     "{{ $labels.job }} metrics are not scraped",
		Description: fmt.Sprintf("The management controller {{ $labels.job }} (namespace %s) has not been scraped for 10 minutes: it is down, or its metrics endpoint refuses the scraper. `kubectl -n %s get deploy {{ $labels.job }}`, %s, and `eksa-metrics verify` for the endpoint.", namespace, namespace, logs),
		Metrics:     []string{"up"},
	}}
	if namespace != "cert-manager" {
		alerts = append(alerts, Alert{
			// Conflicts and requeues make some errors normal; one reconcile
			// in ten failing for 15 minutes is a controller that is stuck.
			Name: "EksaMetricsReconcileErrors", For: "15m", Severity: "warning",
			Expr:    fmt.Sprintf("sum by (job, controller) (rate(controller_runtime_reconcile_errors_total{%[1]s}[10m])) / sum by (job, controller) (rate(controller_runtime_reconcile_total{%[1]s}[10m])) > 0.1", sel),
			Summary: "{{ $labels.job }}: {{ $labels.controller }} reconciles fail",
			Description: fmt.Sprintf("More than 10%% of the reconciles of controller {{ $labels.controller }} in {{ $labels.job }} (namespace %s) have failed for 15 minutes ({{ $value | humanizePercentage }}). %s shows the errors; "+
				"`kubectl get clusters.anywhere.eks.amazonaws.com -A` and the objects' conditions show which cluster is stuck.", namespace, logs),
			Metrics: []string{"controller_runtime_reconcile_errors_total", "controller_runtime_reconcile_total"},
		})
	}
	alerts = append(alerts, Alert{
		// A healthy queue drains in seconds; 100 items for 15 minutes is a
		// controller that cannot keep up or is blocked on a call.
		Name: "EksaMetricsWorkqueueBacklog", Expr: fmt.Sprintf("sum by (job, name) (workqueue_depth{%s}) > 100", sel), For: "15m", Severity: "warning",
		Summary:     "{{ $labels.job }}: work queue {{ $labels.name }} is backed up",
		Description: fmt.Sprintf("The work queue {{ $labels.name }} of {{ $labels.job }} (namespace %s) has held more than 100 items for 15 minutes ({{ $value }}). %s; check the management API server's latency.", namespace, logs),
		Metrics:     []string{"workqueue_depth"},
	}, Alert{
		// Leader election hands over within a lease (15 s by default); no
		// leader for 5 minutes is no controller.
		Name: "EksaMetricsNoLeader", Expr: fmt.Sprintf("max by (job) (leader_election_master_status{%s}) == 0", sel), For: "5m", Severity: "critical",
		Summary:     "{{ $labels.job }} has no leader",
		Description: fmt.Sprintf("No replica of {{ $labels.job }} (namespace %s) has held the leader lease for 5 minutes, so nothing reconciles. `kubectl -n %s get leases`, %s.", namespace, namespace, logs),
		Metrics:     []string{"leader_election_master_status"},
	})
	return alerts
}

// fleetAlerts read the eksa-metrics controller's own metrics (in the
// management cluster: docs/controller.md, "Metrics"), one series per
// selected Cluster.
// kubeletServingAlerts read the kubelet serving-certificate approver's
// own metrics (tls.kubeletServingCertificates).
func kubeletServingAlerts() []Alert {
	logs := "`kubectl -n " + SystemNS + " logs deploy/" + KubeletApprover + "`"
	return []Alert{{
		// A real kubelet asks only for its own names, which its Machine
		// lists within minutes: any denial is a node asking for what is not
		// its own, or a Machine that never listed its address.
		Name: "EksaMetricsKubeletServingDenied", Expr: `increase(eksa_metrics_kubelet_serving_decisions_total{decision="denied"}[15m]) > 0`, For: "0m", Severity: "warning",
		Summary: "the kubelet approver denied serving-certificate requests ({{ $labels.cause }})",
		Description: "The kubelet serving-certificate approver denied {{ $value | printf \"%.0f\" }} request(s) in 15 minutes, cause {{ $labels.cause }}: unvouched, the node's Cluster API Machine did not list the requested names within --no-machine-grace; refused, a name that is never approved (the API server's names, a Service address, loopback, another Machine's address, a wildcard); size, a request larger than any kubelet's. A node asking for another's names may be compromised. " +
			"`kubectl get csr --field-selector spec.signerName=kubernetes.io/kubelet-serving` and the Denied condition's message, the events in the default namespace, " + logs + "; for unvouched, `kubectl -n eksa-system get machines -o wide` in the cluster that holds the Machines.",
		Metrics: []string{"eksa_metrics_kubelet_serving_decisions_total"},
	}, {
		// EKS Anywhere's upgrade replaces the control-plane machines in
		// minutes; an hour is a control plane that kept the cluster CA as
		// kube-controller-manager's signer, and new nodes get no certificate.
		Name: "EksaMetricsKubeletServingApprovalsHeld", Expr: "eksa_metrics_kubelet_serving_approvals_held == 1", For: "1h", Severity: "warning",
		Summary: "the kubelet approver approves nothing: kube-controller-manager may sign with the cluster CA",
		Description: "For an hour the kubelet serving-certificate approver has approved no request because a control-plane kube-controller-manager runs with the cluster CA as its signer (a machine that predates tls.kubeletServingCertificates), or none can be seen; nodes that join or renew get no serving certificate, and their scrapes, kubectl logs and exec fail. " +
			logs + " says which node; run `eksctl anywhere upgrade cluster` with the cluster.yaml eksa-metrics generated.",
		Metrics: []string{"eksa_metrics_kubelet_serving_approvals_held"},
	}}
}

func fleetAlerts() []Alert {
	status := "`kubectl -n {{ $labels.cluster_namespace }} get metricsconfigbinding {{ $labels.cluster }}.{{ $labels.metricsconfig }} -o yaml` (its conditions and status.lastError say why)"
	logs := "`kubectl -n eksa-metrics-system logs deploy/eksa-metrics-controller`"
	return []Alert{{
		// The controller retries with backoff up to 5 minutes: 30 minutes
		// is several failed attempts, or a rollout it may not start.
		Name: "EksaMetricsClusterNotApplied", Expr: "eksa_metrics_cluster_applied == 0", For: "30m", Severity: "warning",
		Summary:     "{{ $labels.cluster_namespace }}/{{ $labels.cluster }} is not applied",
		Description: "The eksa-metrics controller has not applied MetricsConfig {{ $labels.metricsconfig }} to Cluster {{ $labels.cluster_namespace }}/{{ $labels.cluster }} for 30 minutes, so its components may not be scraped. " + status + "; " + logs + ".",
		Metrics:     []string{"eksa_metrics_cluster_applied"},
	}, {
		// A workload API server restarting during an upgrade is back in
		// minutes.
		Name: "EksaMetricsWorkloadUnreachable", Expr: "eksa_metrics_cluster_unreachable == 1", For: "10m", Severity: "warning",
		Summary:     "the workload cluster of {{ $labels.cluster_namespace }}/{{ $labels.cluster }} does not answer",
		Description: "The eksa-metrics controller has not reached the API server of Cluster {{ $labels.cluster_namespace }}/{{ $labels.cluster }} for 10 minutes (its kubeconfig Secret {{ $labels.cluster }}-kubeconfig in eksa-system, or the endpoint). " + status + "; `kubectl --kubeconfig <(kubectl -n eksa-system get secret {{ $labels.cluster }}-kubeconfig -o jsonpath='{.data.value}' | base64 -d) get --raw /readyz`.",
		Metrics:     []string{"eksa_metrics_cluster_unreachable"},
	}, {
		// The controller renews a serving certificate at two thirds of its
		// lifetime; an hour past that, renewal is failing, with a third of
		// the lifetime left to fix it before the scrapes fail verification.
		Name: "EksaMetricsCertificateRenewalOverdue", Expr: "time() - eksa_metrics_serving_certificate_renewal_timestamp_seconds > 3600", For: "0m", Severity: "warning",
		Summary:     "the serving certificates of {{ $labels.cluster_namespace }}/{{ $labels.cluster }} are not renewed",
		Description: "A serving certificate of the proxies of Cluster {{ $labels.cluster_namespace }}/{{ $labels.cluster }} was due for renewal more than an hour ago and the controller has not renewed it; when it expires, every scrape of those proxies fails verification. " + status + "; `eksa-metrics validate -f <cluster spec> --kubeconfig <management kubeconfig>` (check serving-certificates).",
		Metrics:     []string{"eksa_metrics_serving_certificate_renewal_timestamp_seconds"},
	}, {
		// Drift is repaired within a minute; more than six repairs an hour
		// is another writer fighting eksa-metrics over the same objects.
		Name: "EksaMetricsDriftRepeated", Expr: "increase(eksa_metrics_drift_repairs_total[1h]) > 6", For: "0m", Severity: "warning",
		Summary:     "what eksa-metrics applies to {{ $labels.cluster_namespace }}/{{ $labels.cluster }} keeps being changed",
		Description: "The eksa-metrics controller re-applied Cluster {{ $labels.cluster_namespace }}/{{ $labels.cluster }} {{ $value | printf \"%.0f\" }} times in an hour because another writer changed or deleted its objects. " + logs + " names each object (logger drift); find the other writer with `kubectl get <kind> <name> -o yaml --show-managed-fields` and make it leave eksa-metrics' objects alone.",
		Metrics:     []string{"eksa_metrics_drift_repairs_total"},
	}}
}

// anchor is the alert's section in docs/alerts.md.
func anchor(name string) string { return AlertsDoc + "#" + strings.ToLower(name) }

// operatorGroups are the groups as prometheus-operator and a rule file spell
// them (the same fields).
func operatorGroups(c *spec.Config) []monitoringv1.RuleGroup {
	var out []monitoringv1.RuleGroup
	for _, g := range RuleGroups(c) {
		rg := monitoringv1.RuleGroup{Name: g.Name}
		for _, a := range g.Alerts {
			d := monitoringv1.Duration(a.For)
			lbls := map[string]string{"severity": a.Severity}
			if a.Namespace != "" {
				lbls["namespace"] = a.Namespace
			}
			rg.Rules = append(rg.Rules, monitoringv1.Rule{
				Alert: a.Name, Expr: intstr.FromString(a.Expr), For: &d,
				Labels:      lbls,
				Annotations: map[string]string{"summary": a.Summary, "description": a.Description, "runbook_url": anchor(a.Name)},
			})
		}
		out = append(out, rg)
	}
	return out
}

// RulesFile is the rule file a plain Prometheus loads with rule_files.
func RulesFile(c *spec.Config) string {
	b, err := yaml.Marshal(map[string]any{"groups": operatorGroups(c)})
	if err != nil {
		panic(err) // plain structs
	}
	return fmt.Sprintf("# Rendered by eksa-metrics for cluster %q: alerting rules, loaded from\n# prometheus.yml with rule_files. docs/alerts.md explains each alert.\n", c.ClusterName) + string(b)
}

// PrometheusRules renders the PrometheusRule a prometheus-operator stack
// evaluates (labelled as its ServiceMonitors, so the same selector takes
// both), where the stack evaluates rules.
func PrometheusRules(c *spec.Config) []Object {
	p := profileOf(c)
	if !c.ServiceMonitors || p.NoRuleEvaluation {
		return nil
	}
	groups := operatorGroups(c)
	if len(groups) == 0 {
		return nil
	}
	pr := &monitoringv1.PrometheusRule{
		ObjectMeta: metav1.ObjectMeta{Name: RulesName, Namespace: c.MonitoringNamespace, Labels: labels(p.monitorLabels(c))},
		Spec:       monitoringv1.PrometheusRuleSpec{Groups: groups},
	}
	return []Object{toObject(monitoringv1.SchemeGroupVersion.String(), monitoringv1.PrometheusRuleKind, pr)}
}
