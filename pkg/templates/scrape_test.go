package templates

import (
	"slices"
	"strings"
	"testing"

	metricsv1alpha1 "github.com/eksa-metrics/eksa-metrics/pkg/apis/metrics/v1alpha1"

	"go.yaml.in/yaml/v3"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/eksa-metrics/eksa-metrics/pkg/spec"
)

func TestYAMLScalar(t *testing.T) {
	for in, want := range map[string]string{
		"eksa-metrics/kube-apiserver": "eksa-metrics/kube-apiserver",
		"apiserver;kubernetes;https":  "apiserver;kubernetes;https",
		"true":                        `"true"`,
		"No":                          `"No"`,
		"a: b":                        `"a: b"`,
		"platform:metrics":            "platform:metrics",
		"":                            `""`,
		"#x":                          `"#x"`,
		"10249":                       `"10249"`,
	} {
		if got := yamlScalar(in); got != want {
			t.Errorf("yamlScalar(%q) = %s, want %s", in, got, want)
		}
	}
}

// The hand-written scrape file is the YAML it means to be: every job, with
// its fields, read back by a YAML parser.
func TestScrapeConfigFileParses(t *testing.T) {
	c := &spec.Config{ClusterName: "c", Exposure: metricsv1alpha1.ExposureProxy, APIServer: true, ControllerManager: true, Scheduler: true, Etcd: true, KubeProxy: true, Kubelet: true,
		ManagementComponents: true, Management: true, Provider: spec.ProviderTinkerbell, ExternalEtcdScrape: true}
	var doc struct {
		ScrapeConfigs []struct {
			JobName        string `yaml:"job_name"`
			Scheme         string `yaml:"scheme"`
			MetricsPath    string `yaml:"metrics_path"`
			TLSConfig      map[string]any
			RelabelConfigs []struct {
				SourceLabels []string `yaml:"source_labels"`
				Regex        string   `yaml:"regex"`
				Action       string   `yaml:"action"`
				TargetLabel  string   `yaml:"target_label"`
				Replacement  string   `yaml:"replacement"`
			} `yaml:"relabel_configs"`
		} `yaml:"scrape_configs"`
	}
	text := ScrapeConfigFile(c)
	if err := yaml.Unmarshal([]byte(text), &doc); err != nil {
		t.Fatalf("%v\n%s", err, text)
	}
	jobs := 0
	for _, tg := range targets(c) {
		jobs += len(tg.comp.Paths)
	}
	if len(doc.ScrapeConfigs) != jobs || jobs == 0 {
		t.Fatalf("%d jobs, want %d", len(doc.ScrapeConfigs), jobs)
	}
	names := map[string]bool{}
	for _, j := range doc.ScrapeConfigs {
		if names[j.JobName] {
			t.Errorf("job name %s twice: Prometheus refuses the file", j.JobName)
		}
		names[j.JobName] = true
		kubelet := strings.HasPrefix(j.JobName, "eksa-metrics/kubelet")
		first := j.RelabelConfigs[0]
		if !strings.HasPrefix(j.JobName, "eksa-metrics/") || j.Scheme != "https" || !strings.HasPrefix(j.MetricsPath, "/metrics") ||
			!kubelet && (first.Action != "keep" || len(first.SourceLabels) < 2) {
			t.Errorf("job %+v", j)
		}
		set := map[string]string{}
		for _, r := range j.RelabelConfigs {
			if r.Action == "replace" && len(r.SourceLabels) == 0 {
				set[r.TargetLabel] = r.Replacement
			}
		}
		// The management controllers' series may carry a cluster label of
		// their own: no target label of that name on them.
		mgmt := slices.Contains(ManagementJobs(c), set["job"])
		if set["job"] == "" || mgmt != (set[TargetClusterLabel] == "") || !mgmt && set[TargetClusterLabel] != "c" {
			t.Errorf("job %s sets the labels %v, want job and %s: c", j.JobName, set, TargetClusterLabel)
		}
	}
}

// Every job of the plain file and every ServiceMonitor keeps the classic
// buckets when the Prometheus scrapes native histograms (Kubernetes 1.37
// serves them), except in the file for vmagent, which refuses the field and
// scrapes text only. The e2e proves both with the real agents.
func TestClassicHistogramsStay(t *testing.T) {
	for _, stack := range []metricsv1alpha1.Stack{"", metricsv1alpha1.StackPrometheus, metricsv1alpha1.StackVictoriaMetrics} {
		c := &spec.Config{ClusterName: "c", Exposure: metricsv1alpha1.ExposureProxy, APIServer: true, ControllerManager: true, Scheduler: true, Etcd: true, KubeProxy: true, Kubelet: true,
			Stack: stack, ServiceMonitors: true, MonitoringNamespace: "monitoring"}
		text := ScrapeConfigFile(c)
		jobs, kept := strings.Count(text, "- job_name: "), strings.Count(text, "\n  always_scrape_classic_histograms: true\n")
		if want := jobs; stack == metricsv1alpha1.StackVictoriaMetrics && kept != 0 || stack != metricsv1alpha1.StackVictoriaMetrics && kept != want || jobs == 0 {
			t.Errorf("stack %q: %d of %d jobs keep the classic histograms\n%s", stack, kept, jobs, text)
		}
		for _, o := range ServiceMonitors(c) {
			if v, _, _ := unstructured.NestedBool(o, "spec", "scrapeClassicHistograms"); !v {
				t.Errorf("stack %q: ServiceMonitor %v without scrapeClassicHistograms", stack, o["metadata"])
			}
		}
	}
}
