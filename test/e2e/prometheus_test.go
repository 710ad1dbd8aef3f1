package e2e

import (
	"context"
	"fmt"
	corev1 "k8s.io/api/core/v1"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	metricsv1alpha1 "github.com/eksa-metrics/eksa-metrics/pkg/apis/metrics/v1alpha1"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/eksa-metrics/eksa-metrics/pkg/components"
	"github.com/eksa-metrics/eksa-metrics/pkg/dashboards"
	"github.com/eksa-metrics/eksa-metrics/pkg/kubeadm"
	"github.com/eksa-metrics/eksa-metrics/pkg/kubeproxy"
	"github.com/eksa-metrics/eksa-metrics/pkg/render"
	"github.com/eksa-metrics/eksa-metrics/pkg/spec"
	"github.com/eksa-metrics/eksa-metrics/pkg/templates"
	"github.com/eksa-metrics/eksa-metrics/test/framework"
)

// stackSpec is the e2e cluster's spec with a scrapeConfig section (indented
// by four spaces) and optional scrapers.
func stackSpec(minor string, mode metricsv1alpha1.Exposure, scrapeConfig, scrapers string) string {
	return e2eSpec(minor, fmt.Sprintf("%s  exposure: %s\n  allowInsecure: %t\n  managementComponents: {enabled: false}\n  scrapeConfig:\n%s",
		scrapers, mode, mode == metricsv1alpha1.ExposureBindAddress, scrapeConfig))
}

func renderSpec(t *testing.T, text string) *render.Result {
	t.Helper()
	f, err := spec.Load("e2e.yaml", strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	r, err := render.RenderFile(f, spec.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// promRun is what one Prometheus saw, for the report.
type promRun struct {
	name            string
	up, expected    int
	jobs            []string
	absentAlertsSet int
}

func (p promRun) String() string {
	if p.expected == 0 {
		return p.name
	}
	return fmt.Sprintf("%-34s %2d/%-2d targets up, jobs %s, absent alerts firing: %d", p.name, p.up, p.expected, strings.Join(p.jobs, ","), p.absentAlertsSet)
}

// TestPrometheusScrapesWhatIsRendered: a real Prometheus, fed by the real
// prometheus-operator or by the plain scrape file, scrapes every component of
// a three-node cluster through what eksa-metrics renders, in both exposure
// modes and on both Kubernetes versions; the job labels are the ones the alert
// rules select, the same in both forms, and no absent alert fires.
func TestPrometheusScrapesWhatIsRendered(t *testing.T) {
	var report []string
	for _, v := range versions {
		for _, mode := range []metricsv1alpha1.Exposure{metricsv1alpha1.ExposureProxy, metricsv1alpha1.ExposureBindAddress} {
			t.Run(v+"/"+string(mode), func(t *testing.T) {
				runs := prometheusCluster(t, v, mode, v == versions[0] && mode == metricsv1alpha1.ExposureProxy)
				for _, r := range runs {
					report = append(report, fmt.Sprintf("%s %-11s %s", v, mode, r))
				}
			})
		}
	}
	t.Logf("Prometheus end-to-end:\n%s", strings.Join(report, "\n"))
}

// mixinHistograms are histograms the kubernetes-mixin's rules and dashboards
// read with histogram_quantile(..., <name>_bucket), by job
// (kubernetes-sigs/kubernetes-mixin rules/apps.libsonnet, kube_apiserver*.libsonnet,
// dashboards/controller-manager.libsonnet, scheduler.libsonnet).
var mixinHistograms = map[string][]string{
	"apiserver":               {"apiserver_request_duration_seconds", "apiserver_request_sli_duration_seconds", "workqueue_queue_duration_seconds", "rest_client_request_duration_seconds"},
	"kube-controller-manager": {"workqueue_queue_duration_seconds", "workqueue_work_duration_seconds", "rest_client_request_duration_seconds"},
	"kube-scheduler":          {"scheduler_scheduling_attempt_duration_seconds", "scheduler_e2e_scheduling_duration_seconds", "rest_client_request_duration_seconds"},
}

// bothForms: for each job, every histogram the kubernetes-mixin reads keeps
// its classic _bucket series, whether the component serves it natively too
// or not, and some are ingested natively (else the check proves nothing).
// Histograms a component declares without buckets are served as native only
// once native histograms are on (client_golang takes no default buckets
// then): no scrape setting brings their buckets back, and the test lists
// them.
func bothForms(t *testing.T, p *framework.Prometheus, jobs ...string) {
	t.Helper()
	has := func(expr, name, job string) bool { return len(p.Query(t, fmt.Sprintf(expr, name, job))) > 0 }
	const (
		native  = `histogram_count(%s{job=%q})`
		buckets = `%s_bucket{job=%q}`
		count   = `%s_count{job=%q}`
	)
	natives := 0
	for _, job := range jobs {
		var present, nativeToo, missing []string
		framework.WaitFor(t, "the histograms the mixin reads from "+job+" with their _bucket series", 60*time.Second, func() (bool, error) {
			present, nativeToo, missing = nil, nil, nil
			for _, name := range mixinHistograms[job] {
				isNative, hasBuckets := has(native, name, job), has(buckets, name, job)
				if !isNative && !hasBuckets && !has(count, name, job) {
					continue // not served by this version
				}
				present = append(present, name)
				if isNative {
					nativeToo = append(nativeToo, name)
				}
				if !hasBuckets {
					missing = append(missing, name)
				}
			}
			return len(present) > 0 && len(missing) == 0, fmt.Errorf("served: %v, without _bucket: %v", present, missing)
		})
		natives += len(nativeToo)
		var only []string
		for _, m := range p.Query(t, fmt.Sprintf(`group by (__name__) ({job=%q, __name__!~".+_(bucket|sum|count|total|created)"})`, job)) {
			if name := m["__name__"]; has(native, name, job) && !has(buckets, name, job) {
				only = append(only, name)
			}
		}
		t.Logf("%s: the mixin's %v keep their classic buckets (%v also native); served as native only: %v", job, present, nativeToo, only)
	}
	if natives == 0 {
		t.Errorf("no histogram the mixin reads was ingested natively: the check proves nothing")
	}
}

// kubeRelease is the release table's row of a test bed version ("v1.37.2"
// or "1.37").
func kubeRelease(t *testing.T, version string) spec.KubeRelease {
	t.Helper()
	kv, err := spec.ParseKubeVersion(version)
	if err != nil {
		t.Fatal(err)
	}
	return kv.Kube()
}

func minorOf(version string) string {
	return strings.Join(strings.SplitN(strings.TrimPrefix(version, "v"), ".", 3)[:2], ".")
}

func prometheusCluster(t *testing.T, version string, mode metricsv1alpha1.Exposure, extras bool) []promRun {
	minor := minorOf(version)
	// The control-plane change is the same for every profile: the first one's.
	kpsNS := "kps"
	base := renderSpec(t, stackSpec(minor, mode, "    stack: kube-prometheus-stack\n    release: kps\n    namespace: "+kpsNS+"\n", ""))
	ch := base.Change
	proxyConf := framework.KubeadmKubeProxyConfig
	if base.KubeProxyEdit != nil { // bindAddress: kube-proxy runs with the edited config.conf
		edited, _, err := kubeproxy.SetMetricsBindAddress([]byte(proxyConf), base.KubeProxyEdit.MetricsBindAddress)
		if err != nil {
			t.Fatal(err)
		}
		proxyConf = string(edited)
	}
	c := framework.StartCluster(t, framework.ClusterOptions{
		Version: version, ControlPlaneTaints: controlPlaneTaints, Workers: 2,
		EtcdArgs: ch.Args(kubeadm.Etcd), APIServerArgs: ch.Args(kubeadm.APIServer),
		ControllerManagerArgs: ch.Args(kubeadm.ControllerManager), SchedulerArgs: ch.Args(kubeadm.Scheduler),
		KubeProxyConfig: proxyConf,
	})
	c.StartPrometheusOperator(t)
	apply(t, c.ControlPlane, base)
	var proxies []*framework.Process
	if mode == metricsv1alpha1.ExposureProxy {
		proxies = startProxyPods(t, c, base)
	}
	worker := c.NodeOf(t, "worker-1")
	var runs []promRun

	// kube-prometheus-stack: its Prometheus selects release: kps and runs as
	// the chart's ServiceAccount, the default scraper.
	kps := base
	sa := kps.Config.Scrapers[0]
	stackIdentity(t, c, sa, kpsClusterRole)
	var values struct {
		Prometheus struct {
			PrometheusSpec struct {
				ServiceDiscoveryRole string `json:"serviceDiscoveryRole"`
			} `json:"prometheusSpec"`
		} `json:"prometheus"`
	}
	if err := yaml.Unmarshal(kps.Files[templates.KubePrometheusStackValues], &values); err != nil {
		t.Fatal(err)
	}
	prometheusObject(t, c, kpsNS, "kps-kube-prometheus-stack-prometheus", sa.Name, map[string]any{
		"serviceMonitorSelector":          map[string]any{"matchLabels": map[string]any{"release": "kps"}},
		"serviceMonitorNamespaceSelector": map[string]any{},
		"serviceDiscoveryRole":            values.Prometheus.PrometheusSpec.ServiceDiscoveryRole, // from the rendered kube-prometheus-stack values
	})
	cfg := c.OperatorConfig(t, kpsNS, "kps-kube-prometheus-stack-prometheus", serviceMonitorJobs(kps))
	runs = append(runs, scrapeAndCheck(t, c, worker, 9090, "kube-prometheus-stack (operator)", sa, cfg, c.PrometheusMounts(t, kpsNS, "kps-kube-prometheus-stack-prometheus", cfg), kps))

	// No stack: ServiceMonitors and the plain file, every component.
	genericText := stackSpec(minor, mode, "    namespace: monitoring\n", "  scrapers:\n  - {kind: ServiceAccount, name: prometheus, namespace: monitoring}\n")
	generic := renderSpec(t, genericText)
	apply(t, c.ControlPlane, generic)
	sa = generic.Config.Scrapers[0]
	stackIdentity(t, c, sa, kpsClusterRole)
	prometheusObject(t, c, "monitoring", "generic", sa.Name, map[string]any{
		"serviceMonitorSelector": map[string]any{}, "serviceDiscoveryRole": "EndpointSlice",
		// The ServiceMonitors read no file of the Prometheus pod, so a
		// Prometheus that refuses those keeps every one (OperatorConfig
		// counts their jobs).
		"arbitraryFSAccessThroughSMs": map[string]any{"deny": true},
	})
	cfg = c.OperatorConfig(t, "monitoring", "generic", serviceMonitorJobs(generic))
	viaOperator := scrapeAndCheck(t, c, worker, 9091, "no stack (operator)", sa, cfg, c.PrometheusMounts(t, "monitoring", "generic", cfg), generic)
	file := templates.ScrapeConfigFile(generic.Config)
	main := "global: {scrape_interval: 2s, scrape_timeout: 2s}\nscrape_config_files: [eksa-metrics-scrape-configs.yaml]\n"
	// Without the operator, the Prometheus pod mounts the CA bundle ConfigMap
	// where the file expects it (docs/guide.md).
	plainFiles := c.PrometheusMounts(t, sa.Namespace, "", "", templates.ServingCA)
	plainFiles["eksa-metrics-scrape-configs.yaml"] = file
	checkWithPromtool(t, c, worker, sa, main, plainFiles)
	viaFile := scrapeAndCheck(t, c, worker, 9092, "no stack (plain file)", sa, main, plainFiles, generic)
	if !slices.Equal(viaOperator.jobs, viaFile.jobs) || viaOperator.up != viaFile.up {
		t.Errorf("the two forms differ: operator %s; file %s", viaOperator, viaFile)
	}
	runs = append(runs, viaOperator, viaFile)

	// eksa-metrics verify on the same cluster: every target, every node.
	vr, verified := verifyOnCluster(t, c, genericText)
	runs = append(runs, promRun{name: verified})

	// The agents that are not a Prometheus server, in both exposure modes.
	if version == versions[0] {
		runs = append(runs, scrapingAgents(t, c, worker, minor, mode)...)
	}
	if extras {
		t.Logf("API server reviews per scrape:\n%s", measureReviewLoad(t, c))
		runs = append(runs, otherStacks(t, c, worker, minor, mode)...)
		breakIt(t, c, worker, generic, vr, proxies)
		verifyBreaks(t, c, vr, proxies)
	}
	return runs
}

// apply server-side-applies what is rendered for the workload cluster and
// Prometheus, as `apply` does (our field manager, taking back what a test
// changed).
func apply(t *testing.T, c *framework.ControlPlane, r *render.Result) {
	t.Helper()
	servingCertificates(t, c, r)
	var objs []map[string]any
	for _, o := range r.Objects {
		if o.Destination != render.Management {
			objs = append(objs, o.Object)
		}
		// The stack's Prometheus identity exists before eksa-metrics asks
		// for its token (kube-controller-manager deletes a token Secret
		// whose ServiceAccount is missing; apply refuses it).
		if o.Kind() == "Secret" && o.Object["type"] == string(corev1.SecretTypeServiceAccountToken) {
			md := o.Object["metadata"].(map[string]any)
			c.ServiceAccount(t, md["namespace"].(string), md["annotations"].(map[string]any)[corev1.ServiceAccountNameKey].(string))
		}
	}
	if err := c.Apply(context.Background(), framework.FieldManager, true, objs...); err != nil {
		t.Fatalf("applying the rendered objects: %v", err)
	}
}

// startProxyPods runs the rendered proxy DaemonSets' pods on their nodes, as
// a container runtime would: the rendered commands, arguments, environment
// (NODE_IP from status.hostIP), ConfigMap and token volumes.
func startProxyPods(t *testing.T, c *framework.Cluster, r *render.Result) []*framework.Process {
	t.Helper()
	haproxyImage, _, _ := strings.Cut(r.Config.Images.HAProxy, ":")
	rbacImage, _, _ := strings.Cut(r.Config.Images.KubeRBACProxy, ":")
	images := framework.Images{haproxyImage: framework.LookPath(t, "haproxy"), rbacImage: framework.Binary(t, "kube-rbac-proxy")}
	procs := c.RunPods(t, c.RunningPods(t, templates.SystemNS, templates.NameLabel+"="+templates.ControlPlaneDS, 1), images)
	return append(procs, c.RunPods(t, c.RunningPods(t, templates.SystemNS, templates.NameLabel+"="+templates.NodeDS, len(c.Nodes)), images)...)
}

// kpsClusterRole is the discovery ClusterRole kube-prometheus-stack gives its
// Prometheus (charts/kube-prometheus-stack/templates/prometheus/clusterrole.yaml, 88.5.3).
var kpsClusterRole = []rbacv1.PolicyRule{
	{APIGroups: []string{""}, Resources: []string{"nodes", "nodes/metrics", "services", "endpoints", "pods"}, Verbs: []string{"get", "list", "watch"}},
	{APIGroups: []string{"discovery.k8s.io"}, Resources: []string{"endpointslices"}, Verbs: []string{"get", "list", "watch"}},
	{NonResourceURLs: []string{"/metrics", "/metrics/cadvisor"}, Verbs: []string{"get"}},
}

// stackIdentity creates a stack's Prometheus ServiceAccount and the
// discovery ClusterRole its chart or manifests give it.
func stackIdentity(t *testing.T, c *framework.Cluster, sa metricsv1alpha1.Scraper, rules []rbacv1.PolicyRule) {
	t.Helper()
	ctx := context.Background()
	c.ServiceAccount(t, sa.Namespace, sa.Name)
	name := "stack-" + sa.Namespace + "-" + sa.Name
	if _, err := c.Client.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: rules}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	if _, err := c.Client.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: sa.Name, Namespace: sa.Namespace}}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
}

var prometheusGVR = schema.GroupVersionResource{Group: "monitoring.coreos.com", Version: "v1", Resource: "prometheuses"}

// prometheusObject creates a prometheus-operator Prometheus as a stack would.
func prometheusObject(t *testing.T, c *framework.Cluster, ns, name, sa string, spec map[string]any) {
	t.Helper()
	spec["serviceAccountName"] = sa
	spec["scrapeInterval"] = "2s"
	spec["scrapeTimeout"] = "2s"
	obj := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "monitoring.coreos.com/v1", "kind": "Prometheus",
		"metadata": map[string]any{"name": name, "namespace": ns}, "spec": spec}}
	if _, err := c.Dynamic.Resource(prometheusGVR).Namespace(ns).Create(context.Background(), obj, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating Prometheus %s/%s: %v", ns, name, err)
	}
}

// serviceMonitorJobs is how many jobs the operator generates: one per
// endpoint of every rendered ServiceMonitor.
func serviceMonitorJobs(r *render.Result) int {
	n := 0
	for _, o := range r.Objects {
		if o.Kind() == "ServiceMonitor" {
			n += len(o.Object["spec"].(map[string]any)["endpoints"].([]any))
		}
	}
	return n
}

// expected lists the targets a configuration must give: component job ->
// count, from the catalog and the nodes (control-plane components on the
// control-plane node, kube-proxy and the kubelet on every node).
func expected(c *framework.Cluster, r *render.Result, skip ...components.ID) map[string]int {
	out := map[string]int{}
	for _, comp := range components.Enabled(r.Config) {
		if slices.Contains(skip, comp.ID) {
			continue
		}
		nodes := 1
		if comp.ID == components.KubeProxy || comp.ID == components.Kubelet {
			nodes = len(c.Nodes)
		}
		out[comp.Job] += nodes * len(comp.Paths)
	}
	if r.Config.KubeletServingCertificates {
		out[templates.KubeletApproverComponent] = 1 // its one replica
	}
	return out
}

// scraped is expected() for a render: what the stack does not scrape itself.
func scraped(c *framework.Cluster, r *render.Result) map[string]int {
	var skip []components.ID
	for _, id := range spec.Stacks[r.Config.Stack].ScrapesItself {
		skip = append(skip, components.ID(id))
	}
	return expected(c, r, skip...)
}

// scrapeAndCheck runs Prometheus with a configuration and checks, through
// its HTTP API, that exactly the expected targets are active and up with the
// component's job label (and metrics_path on kubelet series), and that no
// absent alert of kubernetes-mixin would fire.
func scrapeAndCheck(t *testing.T, c *framework.Cluster, node *framework.Node, port int, name string, sa metricsv1alpha1.Scraper, config string, extra map[string]string, r *render.Result) promRun {
	t.Helper()
	want := scraped(c, r)
	total := 0
	for _, n := range want {
		total += n
	}
	p := c.StartPrometheus(t, node, port, sa.Namespace, sa.Name, config, extra)
	defer p.Proc.Stop()
	targets := p.WaitTargets(t, fmt.Sprintf("%s: %d targets up", name, total), 90*time.Second, func(ts []framework.Target) error {
		got := map[string]int{}
		for _, tg := range ts {
			if tg.Health != "up" {
				return fmt.Errorf("%s is %s: %s", tg.ScrapeURL, tg.Health, tg.LastError)
			}
			got[tg.Labels["job"]]++
		}
		if !maps.Equal(got, want) {
			return fmt.Errorf("targets by job %v, want %v", got, want)
		}
		return nil
	})
	run := promRun{name: name, up: len(targets), expected: total, jobs: slices.Sorted(maps.Keys(want))}
	// Two targets with one label set write the same up and scrape_* series
	// (Prometheus drops one as out of order).
	seen := map[string]string{}
	for _, tg := range targets {
		key := fmt.Sprint(tg.Labels)
		if other, ok := seen[key]; ok {
			t.Errorf("%s: targets %s and %s have the same labels %v", name, other, tg.ScrapeURL, tg.Labels)
		}
		seen[key] = tg.ScrapeURL
	}
	for _, tg := range targets {
		if tg.Labels["job"] == "kubelet" && !strings.HasPrefix(tg.Labels["metrics_path"], "/metrics") {
			t.Errorf("%s: kubelet target %s has no metrics_path label: %v", name, tg.ScrapeURL, tg.Labels)
		}
		if tg.Labels["job"] == "kube-etcd" && tg.Labels["node"] != "" {
			t.Errorf("%s: etcd target %s has a node label, which splits etcd members in the alert rules", name, tg.ScrapeURL)
		}
	}
	// The absent alerts of kubernetes-mixin (lib/absent_alert.libsonnet), with "== 1" so
	// that a target that is down counts too; KubeletDown selects metrics_path="/metrics".
	for _, job := range run.jobs {
		sel := fmt.Sprintf(`job=%q`, job)
		if job == "kubelet" {
			sel += `,metrics_path="/metrics"`
		}
		res := p.WaitQuery(t, name+": the absent alert quiet", 30*time.Second, fmt.Sprintf("absent(up{%s} == 1)", sel),
			func(res []map[string]string) bool { return len(res) == 0 })
		run.absentAlertsSet += len(res)
	}
	// The series carry the job label too (a relabeling could differ from the target's).
	for _, job := range run.jobs {
		p.WaitQuery(t, fmt.Sprintf("%s: series with job=%q", name, job), 30*time.Second, fmt.Sprintf(`count by (job) ({job=%q})`, job),
			func(res []map[string]string) bool { return len(res) > 0 })
	}
	return run
}

// checkWithPromtool runs promtool check config where the token exists, so
// that the credentials files are checked too.
func checkWithPromtool(t *testing.T, c *framework.Cluster, node *framework.Node, sa metricsv1alpha1.Scraper, main string, extra map[string]string) {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{"prometheus.yml": main}
	maps.Copy(files, extra)
	mounts := c.PodIdentity(t, sa.Namespace, sa.Name)
	for name, content := range files {
		path := dir + "/" + name
		if filepath.IsAbs(name) { // mounted where the pod sees it
			path = filepath.Join(dir, "mounts", strings.ReplaceAll(name, "/", "_"))
			mounts[name] = path
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := writeFileErr(path, content); err != nil {
			t.Fatal(err)
		}
	}
	out, err := node.Host.RunInPod(t, framework.Binary(t, "promtool"), []string{"check", "config", dir + "/prometheus.yml"}, mounts)
	if err != nil || !strings.Contains(out, "SUCCESS") {
		t.Fatalf("promtool check config: %v\n%s", err, out)
	}
}

// otherStacks: kube-prometheus, the EKS Anywhere curated package, and a plain
// Prometheus through prometheus-operator's additionalScrapeConfigs.
func otherStacks(t *testing.T, c *framework.Cluster, node *framework.Node, minor string, mode metricsv1alpha1.Exposure) []promRun {
	t.Helper()
	var runs []promRun

	// kube-prometheus: ClusterRole prometheus-k8s and discovery Roles in
	// default, kube-system and monitoring only (manifests/prometheus-*.yaml, v0.18.0).
	kp := renderSpec(t, stackSpec(minor, mode, "    stack: kube-prometheus\n    namespace: kp\n", ""))
	// kube-prometheus' Prometheus selects every ServiceMonitor of the cluster:
	// only one stack's may exist, as in a real cluster.
	deleteServiceMonitors(t, c)
	apply(t, c.ControlPlane, kp)
	sa := kp.Config.Scrapers[0]
	stackIdentity(t, c, metricsv1alpha1.Scraper{Kind: sa.Kind, Name: sa.Name, Namespace: sa.Namespace}, []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"nodes/metrics"}, Verbs: []string{"get"}},
		{NonResourceURLs: []string{"/metrics", "/metrics/slis"}, Verbs: []string{"get"}},
	})
	for _, ns := range []string{"default", "kube-system", sa.Namespace} {
		discoveryRole(t, c, ns, sa)
	}
	prometheusObject(t, c, sa.Namespace, "k8s", sa.Name, map[string]any{
		"serviceMonitorSelector": map[string]any{}, "serviceMonitorNamespaceSelector": map[string]any{}, "serviceDiscoveryRole": "EndpointSlice",
	})
	cfg := c.OperatorConfig(t, sa.Namespace, "k8s", serviceMonitorJobs(kp))
	runs = append(runs, scrapeAndCheck(t, c, node, 9093, "kube-prometheus (operator)", sa, cfg, c.PrometheusMounts(t, sa.Namespace, "k8s", cfg), kp))

	// The EKS Anywhere curated prometheus package: the chart turns each
	// scrapeConfigs key into a job (templates/cm.yaml of prometheus 29.11.0);
	// its ClusterRole discovers cluster-wide.
	eksa := renderSpec(t, stackSpec(minor, mode, "    stack: eks-anywhere\n", ""))
	apply(t, c.ControlPlane, eksa)
	sa = eksa.Config.Scrapers[0]
	stackIdentity(t, c, sa, kpsClusterRole)
	var pkg render.Object
	for _, o := range eksa.Objects {
		if o.Kind() == "Package" {
			pkg = o
		}
	}
	var values struct {
		ScrapeConfigs map[string]map[string]any `json:"scrapeConfigs"`
	}
	if err := yaml.Unmarshal([]byte(pkg.Object["spec"].(map[string]any)["config"].(string)), &values); err != nil {
		t.Fatal(err)
	}
	var jobs []map[string]any
	for _, key := range slices.Sorted(maps.Keys(values.ScrapeConfigs)) {
		job := map[string]any{"job_name": key}
		maps.Copy(job, values.ScrapeConfigs[key])
		jobs = append(jobs, job)
	}
	chart, err := yaml.Marshal(map[string]any{"global": map[string]any{"scrape_interval": "2s", "scrape_timeout": "2s"}, "scrape_configs": jobs})
	if err != nil {
		t.Fatal(err)
	}
	runs = append(runs, scrapeAndCheck(t, c, node, 9094, "eks-anywhere package (chart)", sa, string(chart), nil, eksa))

	// Plain Prometheus through prometheus-operator: the list-shaped Secret.
	plain := renderSpec(t, stackSpec(minor, mode, "    stack: prometheus\n    namespace: plain\n", "  scrapers:\n  - {kind: ServiceAccount, name: prometheus, namespace: plain}\n"))
	apply(t, c.ControlPlane, plain)
	sa = plain.Config.Scrapers[0]
	stackIdentity(t, c, sa, kpsClusterRole)
	prometheusObject(t, c, sa.Namespace, "plain", sa.Name, map[string]any{
		// A selector that matches no ServiceMonitor: the operator manages the configuration.
		"serviceMonitorSelector":  map[string]any{"matchLabels": map[string]any{"none": "none"}},
		"additionalScrapeConfigs": map[string]any{"name": templates.AdditionalScrapeConfigsSecret, "key": templates.AdditionalScrapeConfigsKey},
		// The CA bundle, mounted at /etc/prometheus/configmaps/ (docs/guide.md).
		"configMaps": []any{templates.ServingCA},
	})
	cfg = c.OperatorConfig(t, sa.Namespace, "plain", 0)
	runs = append(runs, scrapeAndCheck(t, c, node, 9095, "prometheus (additionalScrapeConfigs)", sa, cfg, c.PrometheusMounts(t, sa.Namespace, "plain", cfg, templates.ServingCA), plain))
	return runs
}

func discoveryRole(t *testing.T, c *framework.Cluster, ns string, sa metricsv1alpha1.Scraper) {
	t.Helper()
	ctx := context.Background()
	c.ServiceAccount(t, ns, "default") // the namespace
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "prometheus-k8s", Namespace: ns}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{"discovery.k8s.io"}, Resources: []string{"endpointslices"}, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{""}, Resources: []string{"services", "pods"}, Verbs: []string{"get", "list", "watch"}},
	}}
	if _, err := c.Client.RbacV1().Roles(ns).Create(ctx, role, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "prometheus-k8s", Namespace: ns},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "prometheus-k8s"},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: sa.Name, Namespace: sa.Namespace}}}
	if _, err := c.Client.RbacV1().RoleBindings(ns).Create(ctx, rb, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
}

// breakIt proves the checks can fail: without the scraper's binding the
// components refuse it (403 in lastError), and a Service that selects no pod
// makes its targets disappear.
func breakIt(t *testing.T, c *framework.Cluster, node *framework.Node, r *render.Result, vr verifier, proxies []*framework.Process) {
	t.Helper()
	ctx := context.Background()
	apply(t, c.ControlPlane, r)
	sa := r.Config.Scrapers[0]
	file := templates.ScrapeConfigFile(r.Config)
	// With eksa-metrics' alerting rules, evaluated every 2 seconds, and
	// native histograms scraped where the components serve them (Kubernetes
	// 1.37, KEP-5808): the rendered jobs must keep the classic buckets the
	// kubernetes-mixin's rules and dashboards read (bothForms).
	main := "global: {scrape_interval: 2s, scrape_timeout: 2s, evaluation_interval: 2s, scrape_native_histograms: true}\nscrape_config_files: [s.yaml]\nrule_files: [rules.yaml]\n"
	files := c.PrometheusMounts(t, sa.Namespace, "", "", templates.ServingCA)
	files["s.yaml"] = file
	// The rendered rules with every for: cut to 10 seconds, so that a break
	// fires here within a minute (promtool tests the real durations:
	// TestAlertsWithPromtool).
	files["rules.yaml"] = framework.ShortFor(templates.RulesFile(r.Config), "10s")
	p := c.StartPrometheus(t, node, 9096, sa.Namespace, sa.Name, main, files)
	defer p.Proc.Stop()
	p.WaitTargets(t, "every target up before the break", 90*time.Second, func(ts []framework.Target) error {
		for _, tg := range ts {
			if tg.Health != "up" {
				return fmt.Errorf("%s %s", tg.ScrapeURL, tg.Health)
			}
		}
		return nil
	})
	// At rest, none of eksa-metrics' alerts is pending (several evaluations,
	// after those that saw the scrapes before every target was up).
	time.Sleep(4 * time.Second)
	for range 5 {
		for _, a := range p.Alerts(t) {
			if strings.HasPrefix(a.Labels["alertname"], "EksaMetrics") {
				t.Errorf("%s is %s at rest: %v", a.Labels["alertname"], a.State, a.Labels)
			}
		}
		time.Sleep(2 * time.Second)
	}
	// Every panel of the dashboards of the exposed components has data (no
	// dead panel).
	for _, d := range dashboards.Dashboards(r.Config) {
		if d.Name != templates.Prefix+"-targets" {
			continue // the management and fleet dashboards: test/integration
		}
		for _, panel := range d.Panels {
			p.WaitQuery(t, fmt.Sprintf("dashboard %s, panel %q with data", d.Name, panel.Title), 30*time.Second, panel.Expr,
				func(res []map[string]string) bool { return len(res) > 0 })
		}
	}

	// The components of 1.37 and later serve native histograms, and this
	// Prometheus ingests them: every histogram it ingested natively from the
	// control plane still has its classic _bucket series, which the
	// kubernetes-mixin's rules and dashboards read with histogram_quantile
	// (without always_scrape_classic_histograms they would be gone).
	if kubeRelease(t, c.Options.Version).NativeHistograms {
		bothForms(t, p, "apiserver", "kube-controller-manager", "kube-scheduler")
	}

	// The fleet dashboard's per-cluster panels: every target of the
	// exposed components carries the cluster label, with this cluster's
	// name, and only it.
	for _, panel := range dashboards.ClusterTargets(r.Config) {
		p.WaitQuery(t, fmt.Sprintf("fleet panel %q: one line, for cluster %s", panel.Title, r.Config.ClusterName), 30*time.Second, panel.Expr,
			func(res []map[string]string) bool {
				return len(res) == 1 && res[0][templates.TargetClusterLabel] == r.Config.ClusterName
			})
	}
	p.WaitQuery(t, "no target of the exposed components without the cluster label", 30*time.Second,
		fmt.Sprintf("count(up{%s=\"\",job=~%q})", templates.TargetClusterLabel, strings.Join(templates.ExposedJobs(r.Config), "|")), func(res []map[string]string) bool { return len(res) == 0 })

	// No dead alert: each metric a targets rule reads, exposed by every job
	// the rule selects. (It found that kube-controller-manager and
	// kube-scheduler do not serve apiserver_tls_handshake_errors_total,
	// which a handshake-failure alert would have read.)
	for _, g := range templates.RuleGroups(r.Config) {
		if g.Name != templates.Prefix+"-targets" {
			continue
		}
		for _, a := range g.Alerts {
			sel := a.Expr[strings.Index(a.Expr, "{") : strings.Index(a.Expr, "}")+1]
			for _, m := range a.Metrics {
				p.WaitQuery(t, fmt.Sprintf("%s (read by %s) from every job it selects", m, a.Name), 30*time.Second, fmt.Sprintf("count by (job) (%s%s)", m, sel),
					func(res []map[string]string) bool { return len(res) == strings.Count(sel, "|")+1 })
			}
		}
	}

	unbound := time.Now()
	if err := c.Client.RbacV1().ClusterRoleBindings().Delete(ctx, templates.ReaderRole, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// The components cache authorization decisions for 10 seconds
	// (kube-rbac-proxy for 5 minutes: its etcd and kube-proxy targets stay up that long).
	p.WaitTargets(t, "403 for the unbound scraper", 60*time.Second, func(ts []framework.Target) error {
		var missing []string
		for _, job := range []string{"apiserver", "kube-controller-manager", "kube-scheduler"} {
			found := false
			for _, tg := range ts {
				if tg.Labels["job"] == job && tg.Health == "down" && strings.Contains(tg.LastError, "403") {
					found = true
				}
			}
			if !found {
				missing = append(missing, job)
			}
		}
		if len(missing) > 0 {
			return fmt.Errorf("no 403 yet for %v", missing)
		}
		return nil
	})
	// The rule says it too: EksaMetricsTargetDown firing for each refused job.
	var firing []string
	framework.WaitFor(t, "EksaMetricsTargetDown firing for the refused jobs", 60*time.Second, func() (bool, error) {
		firing = nil
		for _, a := range p.Alerts(t) {
			if a.Labels["alertname"] == "EksaMetricsTargetDown" && a.State == "firing" && !slices.Contains(firing, a.Labels["job"]) {
				firing = append(firing, a.Labels["job"])
			}
		}
		slices.Sort(firing)
		for _, job := range []string{"apiserver", "kube-controller-manager", "kube-scheduler"} {
			if !slices.Contains(firing, job) {
				return false, fmt.Errorf("firing for %v", firing)
			}
		}
		return true, nil
	})
	t.Logf("without the reader binding, EksaMetricsTargetDown fired for %v %s after the binding was deleted (for: 10s)", firing, time.Since(unbound).Round(time.Second))
	// verify says the same, with the reason.
	v := vr.until("the scraper refused by the API server, kube-controller-manager and kube-scheduler", func(v verifyRun) bool {
		for _, comp := range []string{"kube-apiserver", "kube-controller-manager", "kube-scheduler"} {
			// /metrics may stay allowed: the stack's own discovery role grants it.
			if rows := v.rows(comp); len(rows) == 0 || !strings.Contains(strings.Join(rows[0].Problems, ";"), "403: the scraper lacks RBAC") {
				return false
			}
		}
		return true
	})
	t.Logf("without the reader binding: kube-scheduler@cp-1: %s", strings.Join(problemsOf(v, "kube-scheduler@cp-1"), "; "))
	apply(t, c.ControlPlane, r) // the binding back
	vr.until("every row passing again", func(v verifyRun) bool { return v.code == 0 })

	svc, err := c.Client.CoreV1().Services(templates.SystemNS).Get(ctx, templates.Prefix+"-kube-scheduler", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	svc.Spec.Selector = map[string]string{"matches": "nothing"}
	if _, err := c.Client.CoreV1().Services(templates.SystemNS).Update(ctx, svc, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	p.WaitTargets(t, "the kube-scheduler targets gone", 60*time.Second, func(ts []framework.Target) error {
		for _, tg := range ts {
			if tg.Labels["job"] == "kube-scheduler" {
				return fmt.Errorf("still there: %s", tg.ScrapeURL)
			}
		}
		return nil
	})
	// The series go stale on the scrape after the targets disappear, and the
	// query sees that only then: poll, never ask once.
	p.WaitQuery(t, "KubeSchedulerDown's expression to fire once the scheduler is not scraped", 60*time.Second,
		`absent(up{job="kube-scheduler"} == 1)`, func(res []map[string]string) bool { return len(res) > 0 })
	apply(t, c.ControlPlane, r)
	if r.Config.ServingCertificates && len(proxies) > 0 {
		wrongCA(t, c, p, r, proxies)
	}
}

func writeFileErr(path, content string) error { return os.WriteFile(path, []byte(content), 0o644) }

var serviceMonitorGVR = schema.GroupVersionResource{Group: "monitoring.coreos.com", Version: "v1", Resource: "servicemonitors"}

// deleteServiceMonitors deletes the ServiceMonitors earlier profiles rendered.
func deleteServiceMonitors(t *testing.T, c *framework.Cluster) {
	t.Helper()
	ctx := context.Background()
	list, err := c.Dynamic.Resource(serviceMonitorGVR).List(ctx, metav1.ListOptions{LabelSelector: templates.ManagedByLabel + "=" + templates.Prefix})
	if err != nil {
		t.Fatal(err)
	}
	for _, sm := range list.Items {
		if err := c.Dynamic.Resource(serviceMonitorGVR).Namespace(sm.GetNamespace()).Delete(ctx, sm.GetName(), metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}
