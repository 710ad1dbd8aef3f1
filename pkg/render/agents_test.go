package render_test

import (
	"os"
	"path"
	"regexp"
	"slices"
	"strings"
	"testing"

	metricsv1alpha1 "github.com/eksa-metrics/eksa-metrics/pkg/apis/metrics/v1alpha1"
	"github.com/eksa-metrics/eksa-metrics/pkg/render"
	"github.com/eksa-metrics/eksa-metrics/pkg/spec"
	"github.com/eksa-metrics/eksa-metrics/pkg/templates"
	"sigs.k8s.io/yaml"
)

var scrapersBlock = regexp.MustCompile(`(?m)^  scrapers:\n(?:  [- ] .*\n)+`)
var scrapeConfigBlock = regexp.MustCompile(`(?m)^  scrapeConfig:\n(?:    .*\n)+`)

// withStack is the vSphere example with its scrapers left out and the given
// scrapeConfig (indented by four spaces).
func withStack(t *testing.T, scrapeConfig string) *render.Result {
	t.Helper()
	raw, err := os.ReadFile("../../examples/vsphere-management.yaml")
	if err != nil {
		t.Fatal(err)
	}
	text := scrapersBlock.ReplaceAllString(string(raw), "")
	if !scrapeConfigBlock.MatchString(text) {
		t.Fatal("the example has no scrapeConfig section")
	}
	text = scrapeConfigBlock.ReplaceAllString(text, "  scrapeConfig:\n"+scrapeConfig)
	return renderBytes(t, "vsphere-management.yaml", []byte(text), spec.Options{})
}

// Every stack whose agent reads ServiceMonitors gets them with credentials
// by reference and its own scraper's token Secret, from its defaults alone.
func TestEveryStackReferencesCredentials(t *testing.T) {
	for name, row := range spec.Stacks {
		if !row.ServiceMonitors || row.Scraper == nil {
			continue
		}
		sc := "    stack: " + string(name) + "\n"
		if row.ReleaseAllowed {
			sc += "    release: r1\n"
		}
		r := withStack(t, sc)
		n, files := fileReferences(t, r)
		if n == 0 || len(files) > 0 {
			t.Errorf("stack %q: %d endpoints by reference, file references %v", name, n, files)
		}
		token := false
		for _, o := range r.Objects {
			if o.Kind() == "Secret" && o.Object["type"] == "kubernetes.io/service-account-token" {
				token = o.Object["metadata"].(map[string]any)["annotations"].(map[string]any)["kubernetes.io/service-account.name"] == r.Config.Scrapers[0].Name
			}
		}
		if !token {
			t.Errorf("stack %q: no token Secret of its scraper %s", name, r.Config.Scrapers[0].Name)
		}
	}
}

// The ADOT Package runs the plain jobs in the collector's prometheus
// receiver ("$" escaped), as the scraper, with the CA bundle mounted where
// the jobs read it; it renders no ServiceMonitor, and a spec whose scrapers
// name no ServiceAccount of its namespace is refused.
func TestADOTPackage(t *testing.T) {
	r := withStack(t, "    stack: adot\n")
	if len(r.Issues) > 0 {
		t.Fatalf("issues: %v", r.Issues)
	}
	var pkg struct {
		Kind     string
		Metadata struct{ Name, Namespace string }
		Spec     struct{ PackageName, TargetNamespace, Config string }
	}
	if err := yaml.Unmarshal(r.Files[templates.ADOTPackageFile], &pkg); err != nil {
		t.Fatal(err)
	}
	if pkg.Kind != "Package" || pkg.Spec.PackageName != "adot" || pkg.Metadata.Name != metricsv1alpha1.DefaultADOTPackageRelease ||
		pkg.Metadata.Namespace != "eksa-packages-"+r.Config.ClusterName || pkg.Spec.TargetNamespace != "observability" {
		t.Errorf("the Package: %+v", pkg)
	}
	var values struct {
		Mode           string
		ServiceAccount struct{ Name string } `json:"serviceAccount"`
		Mounts         []struct {
			MountPath string `json:"mountPath"`
		} `json:"extraVolumeMounts"`
		Config struct {
			Receivers struct {
				Prometheus struct {
					Config struct {
						ScrapeConfigs []map[string]any `json:"scrape_configs"`
					}
				}
			}
		}
	}
	if err := yaml.Unmarshal([]byte(strings.ReplaceAll(pkg.Spec.Config, "$$", "$")), &values); err != nil {
		t.Fatalf("the Package's config: %v", err)
	}
	if values.Mode != "deployment" || values.ServiceAccount.Name != r.Config.Scrapers[0].Name || r.Config.Scrapers[0].Namespace != "observability" {
		t.Errorf("mode %q, service account %q, scraper %+v", values.Mode, values.ServiceAccount.Name, r.Config.Scrapers[0])
	}
	if len(values.Mounts) != 1 || path.Join(values.Mounts[0].MountPath, templates.CABundleKey) != templates.CABundleFile {
		t.Errorf("CA bundle mounts %+v, the jobs read %s", values.Mounts, templates.CABundleFile)
	}
	var plain struct {
		ScrapeConfigs []map[string]any `json:"scrape_configs"`
	}
	if err := yaml.Unmarshal([]byte(templates.ScrapeConfigFile(r.Config)), &plain); err != nil {
		t.Fatal(err)
	}
	got, _ := yaml.Marshal(values.Config.Receivers.Prometheus.Config.ScrapeConfigs)
	want, _ := yaml.Marshal(plain.ScrapeConfigs)
	if len(plain.ScrapeConfigs) == 0 || string(got) != string(want) {
		t.Errorf("the collector's jobs differ from the plain file's:\n%s\nwant\n%s", got, want)
	}
	if slices.ContainsFunc(r.Objects, func(o render.Object) bool { return o.Kind() == "ServiceMonitor" }) {
		t.Error("ServiceMonitors rendered for a collector that reads none")
	}

	other := scrapeConfigBlock.ReplaceAllString(string(mustRead(t, "../../examples/vsphere-management.yaml")), "  scrapeConfig:\n    stack: adot\n")
	f, err := spec.Load("x.yaml", strings.NewReader(other))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := render.RenderFile(f, spec.Options{}); err == nil || !strings.Contains(err.Error(), "spec.scrapers") || !strings.Contains(err.Error(), "observability") {
		t.Errorf("adot with a scraper of another namespace: %v", err)
	}
}

// The OpenTelemetryCollector's Target Allocator selects the rendered
// ServiceMonitors, which run as <release>-collector.
func TestOpenTelemetryCollector(t *testing.T) {
	r := withStack(t, "    stack: opentelemetry-operator\n    release: otel\n")
	var col struct {
		Kind string
		Spec struct {
			TargetAllocator struct {
				Enabled      bool
				PrometheusCR struct {
					Enabled                bool
					DenyFS                 bool `json:"denyFSAccessThroughSMs"`
					ServiceMonitorSelector struct {
						MatchLabels map[string]string `json:"matchLabels"`
					} `json:"serviceMonitorSelector"`
				} `json:"prometheusCR"`
			} `json:"targetAllocator"`
		}
	}
	if err := yaml.Unmarshal(r.Files[templates.OpenTelemetryCollectorFile], &col); err != nil {
		t.Fatal(err)
	}
	ta := col.Spec.TargetAllocator
	if col.Kind != "OpenTelemetryCollector" || !ta.Enabled || !ta.PrometheusCR.Enabled || !ta.PrometheusCR.DenyFS || len(ta.PrometheusCR.ServiceMonitorSelector.MatchLabels) == 0 {
		t.Fatalf("the collector: %+v", col)
	}
	monitors := 0
	for _, o := range r.Objects {
		if o.Kind() != "ServiceMonitor" {
			continue
		}
		monitors++
		lbls := o.Object["metadata"].(map[string]any)["labels"].(map[string]any)
		for k, v := range ta.PrometheusCR.ServiceMonitorSelector.MatchLabels {
			if lbls[k] != v {
				t.Errorf("ServiceMonitor %v is not selected (%s=%s)", o.Object["metadata"], k, v)
			}
		}
	}
	if monitors == 0 || r.Config.Scrapers[0].Name != "otel-collector" || r.Config.Scrapers[0].Namespace != "opentelemetry" {
		t.Errorf("%d ServiceMonitors, scraper %+v", monitors, r.Config.Scrapers[0])
	}
}

func mustRead(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Grafana Alloy gets its dashboards' job names (in the ServiceMonitors, the
// rules and the dashboards alike), never a file reference, and a spec that
// names no ServiceAccount scraper or asks for file credentials is refused.
func TestGrafanaAlloy(t *testing.T) {
	raw := string(mustRead(t, "../../examples/vsphere-management.yaml"))
	withScraper := scrapeConfigBlock.ReplaceAllString(raw, "  scrapeConfig:\n    stack: grafana-alloy\n")
	withScraper = strings.Replace(withScraper, "name: prometheus-k8s", "name: alloy-metrics", 1)
	r := renderBytes(t, "x.yaml", []byte(withScraper), spec.Options{})
	jobs := map[string]string{}
	for _, o := range r.Objects {
		if o.Kind() != "ServiceMonitor" {
			continue
		}
		comp := o.Object["metadata"].(map[string]any)["labels"].(map[string]any)[templates.ComponentLabel].(string)
		for _, ep := range o.Object["spec"].(map[string]any)["endpoints"].([]any) {
			rules, _ := ep.(map[string]any)["relabelings"].([]any)
			for _, rl := range rules {
				if rule := rl.(map[string]any); rule["targetLabel"] == "job" {
					jobs[comp] = rule["replacement"].(string)
				}
			}
		}
	}
	want := map[string]string{"kube-apiserver": "integrations/kubernetes/kube-apiserver", "kube-proxy": "integrations/kubernetes/kube-proxy", "etcd": "integrations/etcd"}
	for id, job := range want {
		if jobs[id] != job {
			t.Errorf("%s: job %q, want %q", id, jobs[id], job)
		}
	}
	if !slices.Contains(templates.ExposedJobs(r.Config), "integrations/etcd") || slices.Contains(templates.ExposedJobs(r.Config), "kubelet") {
		t.Errorf("the rules' and dashboards' jobs: %v", templates.ExposedJobs(r.Config))
	}
	if n, files := fileReferences(t, r); n == 0 || len(files) > 0 {
		t.Errorf("%d by reference, file references %v", n, files)
	}
	if len(r.Files[templates.K8sMonitoringValuesFile]) == 0 {
		t.Error("no k8s-monitoring values")
	}
	for _, bad := range []string{
		scrapeConfigBlock.ReplaceAllString(raw, "  scrapeConfig:\n    stack: grafana-alloy\n    namespace: grafana\n"), // the scraper is of monitoring
		strings.Replace(withScraper, "    stack: grafana-alloy\n", "    stack: grafana-alloy\n    credentials: file\n", 1),
	} {
		f, err := spec.Load("x.yaml", strings.NewReader(bad))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := render.RenderFile(f, spec.Options{}); err == nil {
			t.Errorf("accepted:\n%s", bad[strings.Index(bad, "kind: MetricsConfig"):])
		} else {
			t.Logf("refused: %v", err)
		}
	}
}

// kube-prometheus-stack's Grafana sidecar gets every dashboard as a
// ConfigMap labelled grafana_dashboard: "1", holding the JSON file's bytes;
// a stack without the sidecar gets the files only.
func TestDashboardConfigMapsForTheSidecar(t *testing.T) {
	for _, tc := range []struct {
		scrapeConfig string
		want         int
	}{{"    stack: kube-prometheus-stack\n    release: kps\n", 3}, {"    stack: kube-prometheus\n", 0}} {
		r := withStack(t, tc.scrapeConfig)
		got := 0
		for _, o := range r.Objects {
			md := o.Object["metadata"].(map[string]any)
			lbls, _ := md["labels"].(map[string]any)
			if o.Kind() != "ConfigMap" || lbls[templates.GrafanaDashboardLabel] != "1" {
				continue
			}
			got++
			for key, js := range o.Object["data"].(map[string]any) {
				if string(r.Dashboards[key]) != js {
					t.Errorf("%s: ConfigMap %s key %s is not the dashboard file", tc.scrapeConfig, md["name"], key)
				}
			}
		}
		if got != tc.want || len(r.Dashboards) != 3 {
			t.Errorf("%s: %d sidecar ConfigMaps (want %d), %d dashboard files", tc.scrapeConfig, got, tc.want, len(r.Dashboards))
		}
	}
}
