package integration

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/eksa-metrics/eksa-metrics/internal/cli"
	metricsv1alpha1 "github.com/eksa-metrics/eksa-metrics/pkg/apis/metrics/v1alpha1"
	"github.com/eksa-metrics/eksa-metrics/pkg/controller"
	"github.com/eksa-metrics/eksa-metrics/pkg/dashboards"
	"github.com/eksa-metrics/eksa-metrics/pkg/render"
	"github.com/eksa-metrics/eksa-metrics/pkg/spec"
	"github.com/eksa-metrics/eksa-metrics/pkg/templates"
	"github.com/eksa-metrics/eksa-metrics/test/framework"
)

// quiet says whether a request is one a controller at rest sends (watches,
// leader election, event series).
func quiet(k string) bool {
	return strings.HasPrefix(k, "WATCH ") || strings.Contains(k, "/leases/") || strings.HasPrefix(k, "PATCH /apis/events.k8s.io/")
}

// atRest waits until the controller has sent nothing but quiet requests
// for 3 s: the reconciles its own writes caused are done.
func atRest(t testing.TB, cnt *counter) {
	t.Helper()
	framework.WaitFor(t, "the controller at rest", time.Minute, func() (bool, error) {
		cnt.reset()
		time.Sleep(3 * time.Second)
		for k := range cnt.reset() {
			if !quiet(k) {
				return false, fmt.Errorf("still sending %s", k)
			}
		}
		return true, nil
	})
}

// busy sums the requests that are not quiet.
func busy(reqs map[string]int) (int, []string) {
	n, what := 0, []string{}
	for k, c := range reqs {
		if !quiet(k) {
			n += c
			what = append(what, fmt.Sprintf("%s ×%d", k, c))
		}
	}
	return n, what
}

func (f *fleet) appliedAll(t testing.TB, n int64) {
	t.Helper()
	f.waitFor(t, fmt.Sprintf("status: %d ready", n), func() error {
		if st := f.status(t); st["readyClusters"] != n || st["selectedClusters"] != n {
			return fmt.Errorf("%v", st)
		}
		return nil
	})
}

// The unit of work is one Cluster: Cluster API's churn on a
// KubeadmControlPlane and EKS-A's status churn on a Cluster cost no
// re-plan, and a change of one Cluster re-plans that Cluster only.
func TestControllerReplansOnlyWhatChanged(t *testing.T) {
	f := newFleet(t, "w1", "w2")
	cnt := &counter{reqs: map[string]int{}}
	f.startController(t, cnt)
	f.metricsConfig(t, true)
	f.appliedAll(t, 2)
	atRest(t, cnt)

	ctx := context.Background()
	kcps := f.mgmt.Dynamic.Resource(kcpGVR("v1beta2")).Namespace("eksa-system")
	clusters := f.mgmt.Dynamic.Resource(eksaClusterGVR).Namespace("default")
	for i := 0; i < 10; i++ {
		// What Cluster API's controllers and EKS-A's do all day: an
		// annotation on the KCP, its status, the Cluster's status.
		patch := fmt.Sprintf(`{"metadata":{"annotations":{"churn.test/n":"%d"}}}`, i)
		if _, err := kcps.Patch(ctx, "w1", types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		status := fmt.Sprintf(`{"status":{"observedGeneration":%d,"replicas":3}}`, i+1)
		if _, err := kcps.Patch(ctx, "w1", types.MergePatchType, []byte(status), metav1.PatchOptions{}, "status"); err != nil {
			t.Fatal(err)
		}
		cstatus := fmt.Sprintf(`{"status":{"failureMessage":null,"childrenReconciledGeneration":%d}}`, i+1)
		if _, err := clusters.Patch(ctx, "w1", types.MergePatchType, []byte(cstatus), metav1.PatchOptions{}, "status"); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(5 * time.Second) // what a re-plan would send, it would have sent by now
	n, what := busy(cnt.reset())
	t.Logf("30 annotation and status updates (10 on the KubeadmControlPlane's metadata, 10 on its status, 10 on the Cluster's status): %d requests to the management API server %v", n, what)
	if n > 20 {
		t.Errorf("churn cost %d requests (at most 20): %v", n, what)
	}

	// A label change on w1 (a spec-level change of that Cluster alone):
	// nothing of w2 is read.
	f.label(t, "w1", map[string]any{"metrics": "on", "team": "a"}, nil)
	atRest(t, cnt)
	time.Sleep(time.Second)
	f.label(t, "w1", map[string]any{"metrics": "on", "team": "b"}, nil)
	var reqs map[string]int
	framework.WaitFor(t, "w1 re-planned", 30*time.Second, func() (bool, error) {
		time.Sleep(3 * time.Second)
		reqs = cnt.reset()
		n, _ := busy(reqs)
		return n > 0, fmt.Errorf("no request")
	})
	atRest(t, cnt)
	for k := range reqs {
		if strings.Contains(k, "/w2") {
			t.Errorf("a change of w1 read w2's objects: %s", k)
		}
	}
	n, what = busy(reqs)
	t.Logf("a label change of w1: %d requests to the management API server, none for w2: %v", n, what)
}

// What eksa-metrics keeps in each cluster is watched there: a deleted
// DaemonSet, a widened reader binding and a deleted serving certificate in
// a workload cluster, and a deleted ClusterRole in the management cluster,
// are put back.
func TestControllerRepairsDriftInEveryCluster(t *testing.T) {
	f := newFleet(t, "w1", "w2", "mgmt")
	cnt := &counter{reqs: map[string]int{}}
	f.startController(t, cnt)
	f.metricsConfig(t, true)
	f.appliedAll(t, 3)
	atRest(t, cnt)
	ctx := context.Background()
	w1 := f.workloads["w1"]

	start := time.Now()
	if err := w1.Client.AppsV1().DaemonSets(templates.SystemNS).Delete(ctx, templates.NodeDS, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	f.waitFor(t, "the deleted DaemonSet back in w1", func() error {
		_, err := w1.Client.AppsV1().DaemonSets(templates.SystemNS).Get(ctx, templates.NodeDS, metav1.GetOptions{})
		return err
	})
	t.Logf("DaemonSet %s/%s deleted in w1: restored after %s", templates.SystemNS, templates.NodeDS, time.Since(start).Round(100*time.Millisecond))
	// The repair counts in the controller's metrics, for w1 only.
	f.waitFor(t, "a drift repair of w1 counted", func() error {
		if n := fleetMetric(t, "eksa_metrics_drift_repairs_total", map[string]string{"cluster_namespace": "default", "cluster": "w1"}); n < 1 {
			return fmt.Errorf("eksa_metrics_drift_repairs_total{cluster=w1} = %v", n)
		}
		return nil
	})
	for _, name := range []string{"w1", "w2", "mgmt"} {
		lbls := map[string]string{"cluster_namespace": "default", "cluster": name}
		if v := fleetMetric(t, "eksa_metrics_cluster_applied", lbls); v != 1 {
			t.Errorf("eksa_metrics_cluster_applied{cluster=%s} = %v, want 1", name, v)
		}
		if v := fleetMetric(t, "eksa_metrics_serving_certificate_renewal_timestamp_seconds", lbls); v < float64(time.Now().Unix()) {
			t.Errorf("eksa_metrics_serving_certificate_renewal_timestamp_seconds{cluster=%s} = %v, not in the future", name, v)
		}
	}
	// Every controller metric a management or fleet dashboard panel or alert
	// reads is one this controller-runtime manager serves (no dead panel).
	served := map[string]bool{}
	families, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, fam := range families {
		served[fam.GetName()] = true
	}
	read := controllerMetricsRead(t)
	for _, m := range read {
		if !served[m] {
			t.Errorf("a dashboard or an alert reads %s, which the controller-runtime manager does not serve", m)
		}
	}
	t.Logf("the dashboards and alerts read %d controller metrics, all served: %v", len(read), read)

	// Someone widens the reader binding: the subjects go back to the
	// MetricsConfig's scrapers.
	crbs, err := w1.Client.RbacV1().ClusterRoleBindings().List(ctx, metav1.ListOptions{LabelSelector: templates.ManagedByLabel + "=" + templates.Prefix})
	if err != nil || len(crbs.Items) == 0 {
		t.Fatalf("no ClusterRoleBinding of eksa-metrics in w1: %v", err)
	}
	crb := crbs.Items[0]
	for _, c := range crbs.Items {
		if c.RoleRef.Name == templates.ReaderRole {
			crb = c
		}
	}
	want := fmt.Sprint(crb.Subjects)
	crb.Subjects = append(crb.Subjects, crb.Subjects[0])
	crb.Subjects[len(crb.Subjects)-1].Name = "system:authenticated"
	crb.Subjects[len(crb.Subjects)-1].Kind = "Group"
	start = time.Now()
	if _, err := w1.Client.RbacV1().ClusterRoleBindings().Update(ctx, &crb, metav1.UpdateOptions{FieldManager: "kubectl-edit"}); err != nil {
		t.Fatal(err)
	}
	f.waitFor(t, "the binding's subjects restored", func() error {
		live, err := w1.Client.RbacV1().ClusterRoleBindings().Get(ctx, crb.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if got := fmt.Sprint(live.Subjects); got != want {
			return fmt.Errorf("subjects %s, want %s", got, want)
		}
		return nil
	})
	t.Logf("ClusterRoleBinding %s widened to system:authenticated in w1: restored after %s", crb.Name, time.Since(start).Round(100*time.Millisecond))

	// The serving CA's Secret: made again (a new CA, the proxies' serving
	// certificates with it).
	start = time.Now()
	if err := w1.Client.CoreV1().Secrets(templates.SystemNS).Delete(ctx, templates.ServingCA, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	f.waitFor(t, "the serving CA back in w1", func() error {
		_, err := w1.Client.CoreV1().Secrets(templates.SystemNS).Get(ctx, templates.ServingCA, metav1.GetOptions{})
		return err
	})
	t.Logf("Secret %s/%s deleted in w1: restored after %s", templates.SystemNS, templates.ServingCA, time.Since(start).Round(100*time.Millisecond))

	start = time.Now()
	if err := f.mgmt.Client.RbacV1().ClusterRoles().Delete(ctx, templates.ReaderRole, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	f.waitFor(t, "the reader ClusterRole back in the management cluster", func() error {
		_, err := f.mgmt.Client.RbacV1().ClusterRoles().Get(ctx, templates.ReaderRole, metav1.GetOptions{})
		return err
	})
	t.Logf("ClusterRole %s deleted in the management cluster: restored after %s", templates.ReaderRole, time.Since(start).Round(100*time.Millisecond))
	atRest(t, cnt)
	if objs := objects(t, f.workloads["w2"]); !has(objs, "DaemonSet/"+templates.NodeDS) {
		t.Errorf("w2 lost objects: %v", objs)
	}
}

// A workload cluster that does not answer is reported in its own state and
// retried with backoff; the others are applied meanwhile.
func TestControllerUnreachableClusterDoesNotHoldTheOthers(t *testing.T) {
	f := newFleet(t, "w1", "w2")
	// w3's kubeconfig names a port where nothing listens.
	dead := strings.ReplaceAll(string(flatKubeconfig(t, f.workloads["w1"].Kubeconfig(t, "admin", "kubernetes-admin", "system:masters"))),
		f.workloads["w1"].URL, fmt.Sprintf("https://127.0.0.1:%d", framework.FreePort(t)))
	f.eksaCluster(t, "default", "w3", "mgmt", []byte(dead))
	cnt := &counter{reqs: map[string]int{}}
	metricsAddr := fmt.Sprintf("127.0.0.1:%d", framework.FreePort(t))
	f.startControllerWith(t, cnt, func(o *cli.ControllerOptions) { o.MetricsAddress = metricsAddr })
	p := fleetPrometheus(t, f, metricsAddr)
	f.metricsConfig(t, true)
	f.waitFor(t, "w1 and w2 applied, w3 unreachable", func() error {
		st := f.status(t)
		if st["readyClusters"] != int64(2) || st["selectedClusters"] != int64(3) {
			return fmt.Errorf("%v", st)
		}
		for _, c := range f.clusterStates(t, "default", "fleet") {
			c := c.(map[string]any)
			if c["name"] == "w3" && !strings.Contains(fmt.Sprint(c["conditions"]), controllerReason("Unreachable")) {
				return fmt.Errorf("w3: %v", c)
			}
		}
		return nil
	})
	if cond := readyCondition(t, f); cond["status"] != "False" || !strings.Contains(fmt.Sprint(cond["message"]), "2 of 3") {
		t.Errorf("Ready: %v", cond)
	}
	// The controller's metrics say the same, per Cluster.
	for name, want := range map[string][2]float64{"w1": {1, 0}, "w2": {1, 0}, "w3": {0, 1}} {
		lbls := map[string]string{"cluster_namespace": "default", "cluster": name}
		if a, u := fleetMetric(t, "eksa_metrics_cluster_applied", lbls), fleetMetric(t, "eksa_metrics_cluster_unreachable", lbls); a != want[0] || u != want[1] {
			t.Errorf("%s: eksa_metrics_cluster_applied %v, eksa_metrics_cluster_unreachable %v, want %v", name, a, u, want)
		}
	}
	// And the fleet alerts, through a real Prometheus that scrapes the
	// controller's metrics endpoint and evaluates the rendered rules (for:
	// cut to 10 s): w3 unreachable and not applied, nothing for w1 and w2.
	since := time.Now()
	framework.WaitFor(t, "EksaMetricsWorkloadUnreachable and EksaMetricsClusterNotApplied firing for w3", 90*time.Second, func() (bool, error) {
		firing := map[string]bool{}
		for _, a := range p.Alerts(t) {
			if a.State == "firing" && a.Labels["cluster_namespace"] == "default" {
				firing[a.Labels["alertname"]+" "+a.Labels["cluster"]] = true
			}
		}
		for _, name := range []string{"w1", "w2"} {
			for _, alert := range []string{"EksaMetricsWorkloadUnreachable", "EksaMetricsClusterNotApplied"} {
				if firing[alert+" "+name] {
					t.Errorf("%s fires for %s, which is applied", alert, name)
				}
			}
		}
		return firing["EksaMetricsWorkloadUnreachable w3"] && firing["EksaMetricsClusterNotApplied w3"], fmt.Errorf("firing: %v", firing)
	}, p.Proc)
	t.Logf("EksaMetricsWorkloadUnreachable and EksaMetricsClusterNotApplied fired for w3 %s after its status said Unreachable (for: 10s)", time.Since(since).Round(time.Second))

	// Someone keeps deleting a serving certificate's Secret in w1: each
	// time it is issued again, and the seventh repair in the hour fires
	// EksaMetricsDriftRepeated for w1 (and for nobody else).
	ctx := context.Background()
	w1 := f.workloads["w1"].Client.CoreV1().Secrets(templates.SystemNS)
	certs, err := w1.List(ctx, metav1.ListOptions{LabelSelector: templates.ManagedByLabel + "=" + templates.Prefix + "," + templates.CertificateLabel})
	if err != nil {
		t.Fatal(err)
	}
	var secret string
	for _, s := range certs.Items {
		if s.Name != templates.ServingCA {
			secret = s.Name
		}
	}
	if secret == "" {
		t.Fatalf("no serving certificate Secret in w1: %d certificate Secrets", len(certs.Items))
	}
	since = time.Now()
	for i := range 7 {
		old, err := w1.Get(ctx, secret, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if err := w1.Delete(ctx, secret, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		f.waitFor(t, fmt.Sprintf("Secret %s issued again in w1 (deletion %d)", secret, i+1), func() error {
			now, err := w1.Get(ctx, secret, metav1.GetOptions{})
			if err == nil && now.UID == old.UID {
				return fmt.Errorf("still the deleted one")
			}
			return err
		})
	}
	t.Logf("Secret %s/%s deleted 7 times in w1: issued again each time, %s in all", templates.SystemNS, secret, time.Since(since).Round(100*time.Millisecond))
	since = time.Now()
	framework.WaitFor(t, "EksaMetricsDriftRepeated firing for w1", 90*time.Second, func() (bool, error) {
		var seen []string
		fired := false
		for _, a := range p.Alerts(t) {
			if a.Labels["alertname"] != "EksaMetricsDriftRepeated" {
				continue
			}
			if a.Labels["cluster"] != "w1" {
				t.Errorf("EksaMetricsDriftRepeated is %s for %v", a.State, a.Labels)
			}
			fired = fired || a.State == "firing" && a.Labels["cluster"] == "w1" && a.Labels["cluster_namespace"] == "default"
			seen = append(seen, a.State+" "+a.Labels["cluster"])
		}
		return fired, fmt.Errorf("EksaMetricsDriftRepeated: %v", seen)
	}, p.Proc)
	t.Logf("EksaMetricsDriftRepeated fired for w1 %s after the seventh repair", time.Since(since).Round(time.Second))
}

// fleetPrometheus runs a Prometheus that scrapes the controller's metrics
// endpoint at addr (controller-runtime's secure serving: a token the
// management API server authorizes for get /metrics) every 2 s, with the
// alerting rules rendered for a management cluster, every for: cut to 10 s
// (promtool tests the real durations: TestAlertsWithPromtool).
func fleetPrometheus(t *testing.T, f *fleet, addr string) *framework.Prometheus {
	t.Helper()
	ctx := context.Background()
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "test-metrics-reader"},
		Rules: []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}}}
	if _, err := f.mgmt.Client.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "test-metrics-reader"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: "prometheus", Namespace: "monitoring"}}}
	if _, err := f.mgmt.Client.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	write := func(name, content string) string {
		t.Helper()
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	r := renderManagement(t)
	token := write("token", f.mgmt.Token(t, "monitoring", "prometheus"))
	write("rules.yaml", framework.ShortFor(templates.RulesFile(r.Config), "10s"))
	// The controller serves a self-signed certificate (controller-runtime's
	// default; docs/controller.md, "Metrics").
	config := write("prometheus.yml", fmt.Sprintf(`global: {scrape_interval: 2s, scrape_timeout: 2s, evaluation_interval: 2s}
rule_files: [rules.yaml]
scrape_configs:
- job_name: eksa-metrics-controller
  scheme: https
  authorization: {credentials_file: %s}
  tls_config: {insecure_skip_verify: true}
  static_configs: [{targets: [%q]}]
`, token, addr))
	listen := fmt.Sprintf("127.0.0.1:%d", framework.FreePort(t))
	p := &framework.Prometheus{URL: "http://" + listen, Dir: dir}
	p.Proc = framework.Start(t, "prometheus", framework.Binary(t, "prometheus"), []string{"--config.file=" + config,
		"--storage.tsdb.path=" + filepath.Join(dir, "data"), "--web.listen-address=" + listen, "--log.level=warn"})
	p.WaitReady(t)
	p.WaitTargets(t, "the controller scraped", 60*time.Second, func(ts []framework.Target) error {
		for _, tg := range ts {
			if tg.Health != "up" {
				return fmt.Errorf("%s %s %s", tg.ScrapeURL, tg.Health, tg.LastError)
			}
		}
		if len(ts) == 0 {
			return fmt.Errorf("no target yet")
		}
		return nil
	})
	return p
}

// renderManagement renders the management cluster example.
func renderManagement(t testing.TB) *render.Result {
	t.Helper()
	raw, err := os.ReadFile("../../examples/vsphere-management.yaml")
	if err != nil {
		t.Fatal(err)
	}
	in, err := spec.Load("vsphere-management.yaml", bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	r, err := render.RenderFile(in, spec.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// controllerMetricMatch names the metrics a controller-runtime manager
// serves (and eksa-metrics' controller's own).
var controllerMetricMatch = regexp.MustCompile(`\b(eksa_metrics_[a-z_]+|controller_runtime_[a-z_]+|workqueue_[a-z_]+|leader_election_[a-z_]+)\b`)

// controllerMetricsRead lists the controller metrics the dashboards and
// alerts of a management cluster read.
func controllerMetricsRead(t testing.TB) []string {
	t.Helper()
	r := renderManagement(t)
	var exprs []string
	for _, d := range dashboards.Dashboards(r.Config) {
		for _, p := range d.Panels {
			exprs = append(exprs, p.Expr)
		}
	}
	for _, g := range templates.RuleGroups(r.Config) {
		for _, a := range g.Alerts {
			exprs = append(exprs, a.Expr)
		}
	}
	var out []string
	for _, e := range exprs {
		for _, m := range controllerMetricMatch.FindAllString(e, -1) {
			m = strings.TrimSuffix(strings.TrimSuffix(m, "_bucket"), "_count")
			if !slices.Contains(out, m) {
				out = append(out, m)
			}
		}
	}
	slices.Sort(out)
	if len(out) < 8 {
		t.Fatalf("only %v read", out)
	}
	return out
}

// fleetMetric is the value of the controller's series with these labels
// (the controller runs in this process: controller-runtime's registry, the
// one its metrics endpoint serves), -1 when there is none.
func fleetMetric(t testing.TB, name string, match map[string]string) float64 {
	t.Helper()
	families, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, fam := range families {
		if fam.GetName() != name {
			continue
		}
	series:
		for _, m := range fam.GetMetric() {
			got := map[string]string{}
			for _, l := range m.GetLabel() {
				got[l.GetName()] = l.GetValue()
			}
			for k, v := range match {
				if got[k] != v {
					continue series
				}
			}
			if m.GetCounter() != nil {
				return m.GetCounter().GetValue()
			}
			return m.GetGauge().GetValue()
		}
	}
	return -1
}

func controllerReason(r string) string { return "reason:" + r }

func readyCondition(t testing.TB, f *fleet) map[string]any {
	t.Helper()
	return readyConditionOf(t, f, "fleet")
}

func readyConditionOf(t testing.TB, f *fleet, name string) map[string]any {
	t.Helper()
	conds, _, _ := unstructured.NestedSlice(f.statusOf(t, name), "conditions")
	for _, c := range conds {
		if m := c.(map[string]any); m["type"] == "Ready" {
			return m
		}
	}
	return nil
}

// Two shards, each with its own lease: each keeps its own Clusters and
// writes its own part of the status; the unsharded one leaves a sharded
// Cluster alone.
func TestControllerShardsLeaveEachOthersClustersAlone(t *testing.T) {
	f := newFleet(t, "w1", "w2")
	f.label(t, "w2", map[string]any{"metrics": "on", controller.ShardLabel: "b"}, nil)
	cnt := &counter{reqs: map[string]int{}}
	f.startController(t, cnt)
	f.metricsConfig(t, true)
	f.appliedAll(t, 1)
	atRest(t, cnt)
	if objs := objects(t, f.workloads["w2"]); len(objs) > 0 {
		t.Errorf("the unsharded controller wrote to shard b's w2: %v", objs)
	}
	f.startControllerWith(t, &counter{reqs: map[string]int{}}, func(o *cli.ControllerOptions) {
		o.Shard = "b"
		o.MetricsAddress = "0"
	})
	f.waitFor(t, "shard b applies w2 and says so in status.shards", func() error {
		if objs := objects(t, f.workloads["w2"]); !has(objs, "DaemonSet/"+templates.NodeDS) {
			return fmt.Errorf("w2: %v", objs)
		}
		shards, _, _ := unstructured.NestedSlice(f.status(t), "shards")
		if len(shards) != 1 || shards[0].(map[string]any)["name"] != "b" || shards[0].(map[string]any)["readyClusters"] != int64(1) {
			return fmt.Errorf("status.shards %v", shards)
		}
		return nil
	})
	if st := f.status(t); st["readyClusters"] != int64(1) || st["selectedClusters"] != int64(1) {
		t.Errorf("the unsharded status changed: %v", st)
	}
	leases, err := f.mgmt.Client.CoordinationV1().Leases("eksa-metrics-system").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, l := range leases.Items {
		names = append(names, l.Name)
	}
	if !has(names, "eksa-metrics-controller") || !has(names, "eksa-metrics-controller-b") {
		t.Errorf("leases %v, want one per shard", names)
	}
}

// On a cluster that is not an EKS-A management cluster, or without the
// MetricsConfig CRD, the controller stops at once and says which API is
// missing, not a RESTMapper's "no matches for kind".
func TestControllerSaysWhichAPIIsMissing(t *testing.T) {
	cp := framework.StartControlPlane(t, framework.ControlPlaneOptions{Version: kubeVersion})
	run := func() error {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		errOut := &framework.LockedBuffer{}
		o := &cli.ControllerOptions{Kubeconfig: cp.Kubeconfig(t, "admin", "kubernetes-admin", "system:masters"), MetricsAddress: "0", ProbeAddress: "0", Concurrency: 1, Workers: 1}
		return o.Run(ctx, &cli.Factory{IOStreams: cli.IOStreams{Out: errOut, ErrOut: errOut}})
	}
	if err := run(); err == nil || !strings.Contains(err.Error(), "does not serve the EKS Anywhere Cluster API") {
		t.Errorf("no EKS-A CRDs: %v", err)
	}
	cp.InstallCRDDir(t, "eks-anywhere")
	if err := run(); err == nil || !strings.Contains(err.Error(), "does not serve the MetricsConfig API") || !strings.Contains(err.Error(), "controller manifests") {
		t.Errorf("no MetricsConfig CRD: %v", err)
	}
}

// A MetricsConfig that selects no Cluster says so: Ready False, reason
// SelectsNothing, with what to set, not "0 of 0 selected Clusters applied";
// once it selects one, the reason goes.
func TestControllerSaysAMetricsConfigSelectsNothing(t *testing.T) {
	f := newFleet(t, "w1")
	f.startController(t, &counter{reqs: map[string]int{}})
	f.metricsConfigSpec(t, map[string]any{"clusterSelector": map[string]any{"matchLabels": map[string]any{"metrics": "nowhere"}}})
	f.waitFor(t, "Ready False, SelectsNothing", func() error {
		c := readyCondition(t, f)
		if c == nil || c["status"] != "False" || c["reason"] != metricsv1alpha1.ReasonSelectsNothing ||
			!strings.Contains(fmt.Sprint(c["message"]), "spec.clusterSelector matches no EKS Anywhere Cluster in namespace default") {
			return fmt.Errorf("Ready: %v", c)
		}
		return nil
	})
	// And an event says it, where kubectl describe and kubectl events show it.
	f.waitFor(t, "a SelectsNothing event about the MetricsConfig", func() error {
		evs, err := f.mgmt.Client.EventsV1().Events("default").List(context.Background(), metav1.ListOptions{})
		if err != nil {
			return err
		}
		for _, e := range evs.Items {
			if e.Regarding.Kind == "MetricsConfig" && e.Regarding.Name == "fleet" && e.Reason == metricsv1alpha1.ReasonSelectsNothing && e.Type == "Warning" &&
				strings.Contains(e.Note, "spec.clusterSelector matches no EKS Anywhere Cluster") {
				return nil
			}
		}
		return fmt.Errorf("%d events, none SelectsNothing about MetricsConfig fleet", len(evs.Items))
	})

	// EKS-A's own GitOps: its Flux applies every document of
	// clusters/<management>/<cluster>/eksa-system/eksa-cluster.yaml to the
	// management cluster. A MetricsConfig document there whose clusterRef
	// names the file's Cluster is a spec validate passes and a resource the
	// controller keeps (docs/controller.md, "EKS Anywhere's GitOps").
	dir := t.TempDir()
	path := filepath.Join(dir, "eksa-cluster.yaml")
	if err := os.WriteFile(path, []byte(gitOpsClusterFile), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out, stderr := eksaMetrics("validate", "-f", path); code != cli.ExitOK {
		t.Fatalf("validate of the GitOps file: exit %d\n%s%s", code, out, stderr)
	}
	if err := f.mgmt.Dynamic.Resource(metricsConfigGVR).Namespace("default").Delete(context.Background(), "fleet", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	f.waitFor(t, "the selector-less MetricsConfig gone", func() error {
		if _, err := f.mgmt.Dynamic.Resource(metricsConfigGVR).Namespace("default").Get(context.Background(), "fleet", metav1.GetOptions{}); err == nil {
			return fmt.Errorf("still there")
		}
		return nil
	})
	for _, doc := range framework.ReadYAML(t, path) {
		if doc["kind"] == "MetricsConfig" { // the EKS-A documents are EKS-A's own, already there
			doc["metadata"].(map[string]any)["namespace"] = "default" // Flux's Kustomization puts them in the Cluster's namespace
			if err := f.mgmt.Apply(context.Background(), "flux", true, doc); err != nil {
				t.Fatalf("Flux's apply of the MetricsConfig document: %v", err)
			}
		}
	}
	f.waitFor(t, "w1 applied and Ready True once selected by its clusterRef", func() error {
		st := f.statusOf(t, "w1")
		if c := readyConditionOf(t, f, "w1"); c == nil || c["status"] != "True" || c["reason"] != metricsv1alpha1.ReasonApplied || st["readyClusters"] != int64(1) {
			return fmt.Errorf("Ready: %v, status %v", c, st)
		}
		return nil
	})
}

// gitOpsClusterFile is an eksa-cluster.yaml of EKS-A's GitOps layout for
// the fleet's Cluster w1, with a MetricsConfig document naming it.
const gitOpsClusterFile = `apiVersion: anywhere.eks.amazonaws.com/v1alpha1
kind: Cluster
metadata:
  name: w1
spec:
  kubernetesVersion: "1.34"
  eksaVersion: v0.26.1
  controlPlaneConfiguration: {count: 1}
  datacenterRef: {kind: DockerDatacenterConfig, name: w1}
  managementCluster: {name: mgmt}
---
apiVersion: anywhere.eks.amazonaws.com/v1alpha1
kind: DockerDatacenterConfig
metadata: {name: w1}
spec: {}
---
apiVersion: metrics.anywhere.eks.amazonaws.com/v1alpha1
kind: MetricsConfig
metadata: {name: w1} # a MetricsConfig document is named after its Cluster
spec:
  clusterRef: {kind: Cluster, name: w1}
  scrapers:
  - {kind: Group, name: metrics-readers}
`
