package templates

import (
	"slices"
	"strings"
	"testing"

	metricsv1alpha1 "github.com/eksa-metrics/eksa-metrics/pkg/apis/metrics/v1alpha1"
	"go.yaml.in/yaml/v3"

	"github.com/eksa-metrics/eksa-metrics/pkg/components"
	"github.com/eksa-metrics/eksa-metrics/pkg/spec"
)

func allOn(exposure metricsv1alpha1.Exposure) *spec.Config {
	return &spec.Config{ClusterName: "c", Exposure: exposure, AllowInsecure: true, APIServer: true, ControllerManager: true, Scheduler: true,
		Etcd: true, KubeProxy: true, Kubelet: true, TLSMinVersion: metricsv1alpha1.TLS12, ServiceMonitors: true, PrometheusConfig: true,
		MonitoringNamespace: "monitoring", Scrapers: []metricsv1alpha1.Scraper{{Kind: metricsv1alpha1.ScraperServiceAccount, Name: "p", Namespace: "monitoring"}},
		TokenServiceAccount: "p"}
}

// No rendered scrape sends a token over plain HTTP (bindAddress with
// allowInsecure serves etcd and kube-proxy that way).
func TestNoTokenOverPlainHTTP(t *testing.T) {
	c := allOn(metricsv1alpha1.ExposureBindAddress)
	plain := 0
	for _, o := range ServiceMonitors(c) {
		for _, ep := range o["spec"].(map[string]any)["endpoints"].([]any) {
			e := ep.(map[string]any)
			if e["scheme"] == "http" {
				plain++
				if e["bearerTokenFile"] != nil || e["authorization"] != nil || e["tlsConfig"] != nil {
					t.Errorf("%v: a plain-HTTP endpoint carries credentials: %v", o["metadata"], e)
				}
			}
		}
	}
	if plain == 0 {
		t.Fatal("no plain-HTTP endpoint rendered: the test checks nothing")
	}
	jobs := strings.Split(ScrapeConfigFile(c), "\n- job_name: ")
	plain = 0
	for _, j := range jobs {
		if strings.Contains(j, "scheme: http\n") {
			plain++
			if strings.Contains(j, "credentials_file") || strings.Contains(j, "authorization") {
				t.Errorf("plain-HTTP job with a token:\n%s", j)
			}
		}
	}
	if plain == 0 {
		t.Fatal("no plain-HTTP job rendered")
	}
}

func rules(objs []Object, role string) []map[string]any {
	for _, o := range objs {
		md := o["metadata"].(map[string]any)
		if o["kind"] == "ClusterRole" && md["name"] == role {
			var out []map[string]any
			for _, r := range o["rules"].([]any) {
				out = append(out, r.(map[string]any))
			}
			return out
		}
	}
	return nil
}

func grants(rs []map[string]any) []string {
	var out []string
	for _, r := range rs {
		for _, k := range []string{"nonResourceURLs", "resources"} {
			if l, ok := r[k].([]any); ok {
				for _, v := range l {
					out = append(out, v.(string))
				}
			}
		}
	}
	return out
}

// Scrapers get metrics; z-pages (/flagz shows every flag) only when asked,
// through a role of their own.
func TestZPagesAreARoleOfTheirOwn(t *testing.T) {
	c := allOn(metricsv1alpha1.ExposureProxy)
	objs := RBAC(c)
	reader := grants(rules(objs, ReaderRole))
	for _, g := range []string{"/statusz", "/flagz", "nodes/statusz", "nodes/configz"} {
		if slices.Contains(reader, g) {
			t.Errorf("the metrics reader role grants %s", g)
		}
	}
	if rules(objs, ZPageReaderRole) != nil {
		t.Fatal("a z-page role is rendered although no z-page was asked for")
	}
	if slices.Contains(ProxyAllowPaths(c, lookup(t, "kube-proxy")), "/flagz") {
		t.Error("the kube-proxy proxy lets /flagz through although it was not asked for")
	}
	c.Statusz, c.Flagz = true, true
	z := grants(rules(RBAC(c), ZPageReaderRole))
	for _, g := range []string{"/statusz", "/flagz", "nodes/statusz", "nodes/configz"} {
		if !slices.Contains(z, g) {
			t.Errorf("the z-page role lacks %s: %v", g, z)
		}
	}
}

// HAProxy passes bytes and never calls the API server: its pod has no token
// and no auth-delegator binding; the kube-rbac-proxy container has both.
func TestEachContainerGetsOnlyWhatItUses(t *testing.T) {
	c := allOn(metricsv1alpha1.ExposureProxy)
	c.Etcd, c.KubeProxy = false, false
	for _, o := range Proxies(c) {
		if o["kind"] != "DaemonSet" {
			continue
		}
		pod := o["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)
		if pod["automountServiceAccountToken"] != false || pod["volumes"].([]any)[0].(map[string]any)["name"] != "haproxy-config" || len(pod["volumes"].([]any)) != 1 {
			t.Errorf("the HAProxy-only pod mounts a token: %v", pod)
		}
	}
	for _, o := range RBAC(c) {
		if o["kind"] == "ClusterRoleBinding" && strings.Contains(o["metadata"].(map[string]any)["name"].(string), "auth-delegator") {
			t.Error("auth-delegator is bound although no kube-rbac-proxy runs")
		}
	}
	c.Etcd = true
	var mounted []string
	for _, o := range Proxies(c) {
		if o["kind"] != "DaemonSet" {
			continue
		}
		for _, ct := range o["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)["containers"].([]any) {
			cm := ct.(map[string]any)
			for _, m := range asList(cm["volumeMounts"]) {
				if m.(map[string]any)["name"] == apiAccessVolume {
					mounted = append(mounted, cm["name"].(string))
				}
			}
		}
	}
	if !slices.Equal(mounted, []string{"kube-rbac-proxy-etcd"}) {
		t.Errorf("the API token is mounted into %v, want only kube-rbac-proxy-etcd", mounted)
	}
}

func asList(v any) []any {
	l, _ := v.([]any)
	return l
}

func lookup(t *testing.T, id string) components.Cluster {
	t.Helper()
	for _, c := range components.ClusterCatalog {
		if c.ID == components.ID(id) {
			return c
		}
	}
	t.Fatalf("no component %q in the catalog", id)
	return components.Cluster{}
}

// What the alert rules and dashboards select on: the job of every
// component, the same in both forms; metrics_path and honored labels on the
// kubelet; the release label for kube-prometheus-stack; the drop lists.
func TestJobsMatchTheMixins(t *testing.T) {
	c := allOn(metricsv1alpha1.ExposureProxy)
	c.DropHighCardinality = true
	want := map[string]string{"kube-apiserver": "apiserver", "kube-controller-manager": "kube-controller-manager", "kube-scheduler": "kube-scheduler",
		"etcd": "kube-etcd", "kube-proxy": "kube-proxy", "kubelet": "kubelet"}
	for _, tg := range targets(c) {
		if want[string(tg.comp.ID)] != tg.job {
			t.Errorf("%s: job %q, want %q", tg.comp.ID, tg.job, want[string(tg.comp.ID)])
		}
	}
	for _, o := range ServiceMonitors(c) {
		sp := o["spec"].(map[string]any)
		id := o["metadata"].(map[string]any)["labels"].(map[string]any)[ComponentLabel]
		if id == "kubelet" {
			if sp["jobLabel"] != "k8s-app" {
				t.Errorf("kubelet jobLabel %v", sp["jobLabel"])
			}
			for _, ep := range sp["endpoints"].([]any) {
				e := ep.(map[string]any)
				rel, _ := e["relabelings"].([]any)
				if e["honorLabels"] != true || len(rel) == 0 || rel[0].(map[string]any)["targetLabel"] != "metrics_path" {
					t.Errorf("kubelet endpoint %v: no honorLabels or metrics_path", e["path"])
				}
				if e["path"] == "/metrics/cadvisor" && len(asList(e["metricRelabelings"])) != 8 {
					t.Errorf("cAdvisor drops: %v", e["metricRelabelings"])
				}
			}
		}
		if id == "kube-apiserver" && sp["jobLabel"] != "component" {
			t.Errorf("apiserver jobLabel %v: its Service default/kubernetes labels component=apiserver", sp["jobLabel"])
		}
	}
	for _, j := range scrapeJobs(c) {
		if strings.HasPrefix(j.JobName, "eksa-metrics/kubelet") != j.HonorLabels {
			t.Errorf("%s: honor_labels %t", j.JobName, j.HonorLabels)
		}
		for _, r := range j.RelabelConfigs {
			if r.TargetLabel == "node" && !strings.HasPrefix(j.JobName, "eksa-metrics/kubelet") {
				t.Errorf("%s sets a node label: etcd's rules would see each member apart", j.JobName)
			}
		}
	}
	c.Stack, c.Release = metricsv1alpha1.StackKubePrometheusStack, "kps"
	for _, o := range ServiceMonitors(c) {
		if o["metadata"].(map[string]any)["labels"].(map[string]any)["release"] != "kps" {
			t.Errorf("%v has no release: kps label", o["metadata"])
		}
		if id := o["metadata"].(map[string]any)["labels"].(map[string]any)[ComponentLabel]; id == "kubelet" || id == "kube-apiserver" {
			t.Errorf("kube-prometheus-stack scrapes %s itself: rendering it doubles its series", id)
		}
	}
	c.DropHighCardinality = false
	c.Stack = metricsv1alpha1.StackGeneric
	for _, j := range scrapeJobs(c) {
		if len(j.MetricRelabelConfigs) > 0 {
			t.Errorf("%s drops series although dropHighCardinality is off", j.JobName)
		}
	}
}

// prometheus-operator's additionalScrapeConfigs wants a YAML list; a plain
// Prometheus's scrape_config_files a file with scrape_configs.
func TestScrapeFileShapes(t *testing.T) {
	c := allOn(metricsv1alpha1.ExposureProxy)
	var list []map[string]any
	if err := yaml.Unmarshal([]byte(AdditionalScrapeConfigs(c)), &list); err != nil || len(list) == 0 {
		t.Fatalf("additionalScrapeConfigs is not a list: %v", err)
	}
	var file struct {
		ScrapeConfigs []map[string]any `yaml:"scrape_configs"`
	}
	if err := yaml.Unmarshal([]byte(ScrapeConfigFile(c)), &file); err != nil || len(file.ScrapeConfigs) != len(list) {
		t.Fatalf("the file and the list differ: %d vs %d (%v)", len(file.ScrapeConfigs), len(list), err)
	}
}
