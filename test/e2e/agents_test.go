package e2e

import (
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	metricsv1alpha1 "github.com/eksa-metrics/eksa-metrics/pkg/apis/metrics/v1alpha1"
	"github.com/eksa-metrics/eksa-metrics/pkg/components"
	"github.com/eksa-metrics/eksa-metrics/pkg/render"
	"github.com/eksa-metrics/eksa-metrics/pkg/templates"
	"github.com/eksa-metrics/eksa-metrics/test/framework"
)

// agentRun is what one agent remote-wrote, for the report.
type agentRun struct {
	name         string
	up, expected int
	jobs         []string
	brokenJobs   []string
}

func (a agentRun) String() string {
	return fmt.Sprintf("%-34s %2d/%-2d targets up, jobs %s; without the reader binding, up == 0 for %s", a.name, a.up, a.expected, strings.Join(a.jobs, ","), strings.Join(a.brokenJobs, ","))
}

// scrapingAgents: the agents that are not a Prometheus server scrape every
// target with what eksa-metrics renders for them, run as in a pod as their
// stack's scraper, and remote-write into a Prometheus; its series show every
// target up with the component's job, and the break (the scraper's reader
// binding removed) in the agents' own up series.
func scrapingAgents(t *testing.T, c *framework.Cluster, node *framework.Node, minor string, mode metricsv1alpha1.Exposure) []promRun {
	t.Helper()
	recv := c.StartRemoteWriteReceiver(t, node, 9097)
	defer recv.Proc.Stop()
	var runs []promRun

	// EKS Anywhere's ADOT package: the OpenTelemetry Collector with the
	// Package's receivers, the exporter completed (the test's Prometheus
	// instead of Amazon Managed Service for Prometheus).
	adot := renderSpec(t, stackSpec(minor, mode, "    stack: adot\n", ""))
	apply(t, c.ControlPlane, adot)
	sa := adot.Config.Scrapers[0]
	var pkg struct {
		Spec struct{ Config string }
	}
	if err := yaml.Unmarshal(adot.Files[templates.ADOTPackageFile], &pkg); err != nil {
		t.Fatal(err)
	}
	var values struct {
		ClusterRole struct {
			Rules []rbacRule `json:"rules"`
		} `json:"clusterRole"`
		Config struct {
			Receivers map[string]map[string]map[string]any `json:"receivers"`
		}
	}
	if err := yaml.Unmarshal([]byte(pkg.Spec.Config), &values); err != nil {
		t.Fatal(err)
	}
	stackIdentity(t, c, sa, rbacRules(values.ClusterRole.Rules)) // the chart's clusterRole from the rendered values
	receiver := values.Config.Receivers["prometheus"]
	receiver["config"]["global"] = map[string]any{"scrape_interval": "2s", "scrape_timeout": "2s"}
	noSkippedVerification(t, "adot", adot, receiver["config"]["scrape_configs"].([]any))
	collector, err := yaml.Marshal(map[string]any{
		"receivers": values.Config.Receivers,
		"exporters": map[string]any{"prometheusremotewrite": map[string]any{"endpoint": recv.URL + "/api/v1/write", "external_labels": map[string]any{"agent": "adot"}}},
		"service": map[string]any{
			"pipelines": map[string]any{"metrics": map[string]any{"receivers": []string{"prometheus"}, "exporters": []string{"prometheusremotewrite"}}},
			"telemetry": map[string]any{"metrics": map[string]any{"level": "none"}},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	mounts := c.PrometheusMounts(t, sa.Namespace, "", "", templates.ServingCA) // the Package's extraVolumes
	mounts["collector.yaml"] = string(collector)
	otel := c.StartAgent(t, node, "otelcol", sa.Namespace, sa.Name, dir, mounts, "--config="+filepath.Join(dir, "collector.yaml"))
	runs = append(runs, promRun{name: agentCheck(t, c, recv, "adot (OpenTelemetry Collector)", "adot", adot, otel).String()})
	otel.Stop()

	// vmagent with the plain file (what the VictoriaMetrics operator's
	// VMAgent also runs as: vmagent-<name>).
	vm := renderSpec(t, stackSpec(minor, mode, "    stack: victoriametrics\n    release: vm\n", ""))
	apply(t, c.ControlPlane, vm)
	sa = vm.Config.Scrapers[0]
	stackIdentity(t, c, sa, kpsClusterRole)
	dir = t.TempDir()
	mounts = c.PrometheusMounts(t, sa.Namespace, "", "", templates.ServingCA)
	// vmagent loads the plain file itself (its scrape_config_files wants
	// lists); the test adds the scrape interval a user's global section sets.
	mounts["vmagent.yaml"] = "global: {scrape_interval: 2s, scrape_timeout: 2s}\n" + templates.ScrapeConfigFile(vm.Config)
	vmagent := c.StartAgent(t, node, "vmagent", sa.Namespace, sa.Name, dir, mounts,
		"-promscrape.config="+filepath.Join(dir, "vmagent.yaml"), "-remoteWrite.url="+recv.URL+"/api/v1/write",
		"-remoteWrite.tmpDataPath="+filepath.Join(dir, "data"), "-remoteWrite.label=agent=vmagent", "-remoteWrite.forcePromProto", "-httpListenAddr="+node.Host.IP+":8429", "-loggerLevel=WARN")
	runs = append(runs, promRun{name: agentCheck(t, c, recv, "victoriametrics (vmagent)", "vmagent", vm, vmagent).String()})
	vmagent.Stop()
	return runs
}

// agentCheck waits until the receiver has, from this agent (its series carry
// agent=<label>, an external label the test sets), up == 1 for every
// expected target with the component's job, the kubelet's series by
// metrics_path and series of every job; then it removes the reader binding
// and waits for up == 0 where the components refuse the scraper.
func agentCheck(t *testing.T, c *framework.Cluster, recv *framework.Prometheus, name, label string, r *render.Result, agent *framework.Process) agentRun {
	t.Helper()
	want := scraped(c, r)
	total := 0
	for _, n := range want {
		total += n
	}
	sel := fmt.Sprintf("agent=%q", label)
	var got map[string]int
	framework.WaitFor(t, fmt.Sprintf("%s: %d targets up through remote write", name, total), 120*time.Second, func() (bool, error) {
		got = map[string]int{}
		for _, s := range recv.Query(t, fmt.Sprintf(`up{%s} == 1`, sel)) {
			got[s["job"]]++
		}
		return maps.Equal(got, want), fmt.Errorf("up == 1 by job %v, want %v", got, want)
	}, agent)
	run := agentRun{name: name, up: total, expected: total, jobs: slices.Sorted(maps.Keys(want))}
	if n := want["kubelet"]; n > 0 {
		recv.WaitQuery(t, name+": kubelet series by metrics_path", 30*time.Second, fmt.Sprintf(`count by (metrics_path) (up{job="kubelet",%s})`, sel),
			func(res []map[string]string) bool { return len(res) == n/len(c.Nodes) })
	}
	for _, job := range run.jobs {
		recv.WaitQuery(t, fmt.Sprintf("%s: series of job %q", name, job), 30*time.Second, fmt.Sprintf(`count({job=%q,__name__!~"up|scrape_.*|target_info",%s})`, job, sel),
			func(res []map[string]string) bool { return len(res) > 0 })
	}

	ctx := context.Background()
	if err := c.Client.RbacV1().ClusterRoleBindings().Delete(ctx, templates.ReaderRole, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// The components cache authorization decisions for 10 seconds.
	broken := []string{"apiserver", "kube-controller-manager", "kube-scheduler"}
	recv.WaitQuery(t, name+": up == 0 for the unbound scraper", 60*time.Second, fmt.Sprintf(`count by (job) (up{job=~%q,%s} == 0)`, strings.Join(broken, "|"), sel),
		func(res []map[string]string) bool {
			run.brokenJobs = nil
			for _, s := range res {
				run.brokenJobs = append(run.brokenJobs, s["job"])
			}
			slices.Sort(run.brokenJobs)
			return len(res) == len(broken)
		})
	apply(t, c.ControlPlane, r) // the binding back
	return run
}

// noSkippedVerification: no job skips verifying a certificate eksa-metrics
// serves (the kubelets' own self-signed ones are another matter).
func noSkippedVerification(t *testing.T, name string, r *render.Result, jobs []any) {
	t.Helper()
	served := map[string]bool{}
	for _, comp := range components.Enabled(r.Config) {
		if templates.ServesCertificate(r.Config, comp) {
			served[comp.Job] = true
		}
	}
	checked := 0
	for _, j := range jobs {
		job := j.(map[string]any)
		tls, _ := job["tls_config"].(map[string]any)
		var label string
		for _, rl := range job["relabel_configs"].([]any) {
			if rule := rl.(map[string]any); rule["target_label"] == "job" {
				label, _ = rule["replacement"].(string)
			}
		}
		if served[label] {
			checked++
			if tls["insecure_skip_verify"] == true || tls["ca_file"] != templates.CABundleFile {
				t.Errorf("%s: job %s skips or misplaces verification of a certificate eksa-metrics serves: %v", name, job["job_name"], tls)
			}
		}
	}
	if len(served) > 0 && checked == 0 {
		t.Errorf("%s: no job of the components whose certificates eksa-metrics serves (%v)", name, served)
	}
}

// rbacRule is a ClusterRole rule as the chart values spell it.
type rbacRule struct {
	APIGroups []string `json:"apiGroups"`
	Resources []string `json:"resources"`
	Verbs     []string `json:"verbs"`
}

func rbacRules(rules []rbacRule) []rbacv1.PolicyRule {
	var out []rbacv1.PolicyRule
	for _, r := range rules {
		out = append(out, rbacv1.PolicyRule{APIGroups: r.APIGroups, Resources: r.Resources, Verbs: r.Verbs})
	}
	return out
}
