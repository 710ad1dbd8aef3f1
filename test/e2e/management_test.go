package e2e

import (
	"context"
	"crypto/tls"
	"fmt"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/eksa-metrics/eksa-metrics/internal/cli"
	"github.com/eksa-metrics/eksa-metrics/internal/testutil"
	"github.com/eksa-metrics/eksa-metrics/pkg/components"
	"github.com/eksa-metrics/eksa-metrics/pkg/dashboards"
	"github.com/eksa-metrics/eksa-metrics/pkg/render"
	"github.com/eksa-metrics/eksa-metrics/pkg/spec"
	"github.com/eksa-metrics/eksa-metrics/pkg/templates"
	"github.com/eksa-metrics/eksa-metrics/test/framework"
)

// The management components, for real, as EKS-A v0.26 ships them: the
// Cluster API core manager built from sigs.k8s.io/cluster-api runs with the
// container arguments of the real upstream Deployment after eksa-metrics'
// edit (here TLS 1.3) and its serving certificate's Secret where the edit
// mounts it, and serves its metrics securely, to TLS 1.3 only, with that
// certificate (verified by eksa-metrics verify and by a real Prometheus); the
// kube-rbac-proxy sidecar eksa-metrics adds to the curated-packages
// controller runs with its rendered arguments and mounts, as a kubelet runs
// it (in a mount namespace of its own, its token Secret, which the real
// token controller of kube-controller-manager fills, at the in-cluster
// path, and its serving certificate), so as eksa-metrics' own sidecar
// ServiceAccount and never the controller's, in front of a plain-HTTP
// controller-runtime endpoint on 127.0.0.1 (the same manager with
// --insecure-diagnostics), and does too.
func TestManagementComponentsEndToEnd(t *testing.T) {
	ctx := context.Background()
	manager := framework.Binary(t, "cluster-api-manager")
	cp := framework.StartControlPlane(t, framework.ControlPlaneOptions{Version: versions[0]})
	cp.InstallCRDs(t, spec.CAPIv1beta2) // ServiceMonitor and KubeadmControlPlane
	cp.InstallCRDDir(t, "cluster-api-core")
	shipped := cp.InstallUpstream(t, "capi-core-v1.13.2.yaml", "eks-anywhere-packages-v0.4.17.yaml")

	specText := strings.Replace(specFor("1.36", "proxy"), "  zPages:", "  managementComponents: {enabled: true}\n  tls: {minVersion: VersionTLS13}\n  zPages:", 1)
	r := renderSpec(t, specText)
	var objs []map[string]any
	for _, o := range r.Objects {
		if o.Kind() != "KubeadmControlPlane" {
			objs = append(objs, o.Object)
		}
	}
	servingCertificates(t, cp, r) // the sidecar's serving certificate, as apply makes it
	if err := cp.Apply(ctx, framework.FieldManager, false, objs...); err != nil {
		t.Fatal(err)
	}
	edits := map[string]templates.DeploymentEdit{}
	for _, e := range r.DeploymentEdits {
		edits[e.Component.Deployment] = e
	}
	// The edits applied to the real Deployments.
	editedPod := func(id string) corev1.PodSpec {
		e := edits[id[strings.Index(id, "/")+1:]]
		d := testutil.UpstreamDeployment(t, []map[string]any{shipped[id]}, e.Component.Namespace, e.Component.Deployment)
		if changed, err := e.Apply(d); err != nil || !changed {
			t.Fatalf("%s: changed=%t err=%v", id, changed, err)
		}
		return d.Spec.Template.Spec
	}
	capiPod := editedPod("capi-system/capi-controller-manager")
	capiArgs := capiPod.Containers[0].Args
	if !slices.Contains(capiArgs, "--tls-min-version=VersionTLS13") {
		t.Fatalf("capi-controller-manager args: %q", capiArgs)
	}
	// Its serving certificate, mounted where controller-runtime's metrics
	// server reads it: $TMPDIR/k8s-metrics-server/serving-certs, which is
	// /tmp/... in the shipped image (no TMPDIR). The pod here keeps the
	// host's /tmp (the test bed's files are there), so TMPDIR points the
	// same code at a directory of the test's own.
	capiTmp := t.TempDir()
	for _, m := range capiPod.Containers[0].VolumeMounts {
		if m.Name != templates.ServingVolume {
			continue
		}
		if m.MountPath != components.ControllerRuntimeCertDir {
			t.Fatalf("capi-controller-manager: the certificate is mounted at %s, not where its metrics server reads it", m.MountPath)
		}
		v := capiPod.Volumes[slices.IndexFunc(capiPod.Volumes, func(v corev1.Volume) bool { return v.Name == m.Name })]
		s, err := cp.Client.CoreV1().Secrets("capi-system").Get(ctx, v.Secret.SecretName, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		dir := filepath.Join(capiTmp, strings.TrimPrefix(m.MountPath, "/tmp/"))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for k, b := range s.Data {
			writeFile(t, filepath.Join(dir, k), string(b))
		}
	}
	if _, err := os.Stat(filepath.Join(capiTmp, "k8s-metrics-server/serving-certs/tls.key")); err != nil {
		t.Fatalf("capi-controller-manager: no serving certificate mounted: %v (mounts %+v)", err, capiPod.Containers[0].VolumeMounts)
	}
	pkgPod := editedPod("eksa-packages/eks-anywhere-packages")
	sidecar := pkgPod.Containers[slices.IndexFunc(pkgPod.Containers, func(c corev1.Container) bool { return c.Name == templates.SidecarName })]
	packages := edits["eks-anywhere-packages"]

	admin := cp.Kubeconfig(t, "capi-manager", "kubernetes-admin", "system:masters")
	certDir := t.TempDir()
	crt, key := cp.PKI.Serving(t, "capi-webhook", []string{"localhost"}, nil)
	for src, dst := range map[string]string{crt: "tls.crt", key: "tls.key"} {
		b, _ := os.ReadFile(src)
		if err := os.WriteFile(filepath.Join(certDir, dst), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// What a pod gives the manager and the test bed must change: the API
	// server, the webhook certificate, free ports.
	testBed := func() []string {
		return []string{"--kubeconfig=" + admin, "--webhook-cert-dir=" + certDir,
			fmt.Sprintf("--webhook-port=%d", framework.FreePort(t)), fmt.Sprintf("--health-addr=127.0.0.1:%d", framework.FreePort(t))}
	}
	// The shipped and edited arguments, with ":8443" (every address)
	// narrowed to a pod address of its own (one EndpointSlices accept).
	podIP, sidecarPodIP := framework.LocalAddress(t, 2), framework.LocalAddress(t, 3)
	var args []string
	for _, a := range capiArgs {
		args = append(args, strings.Replace(a, "=:8443", "="+podIP+":8443", 1))
	}
	// With the shipped --leader-elect: in a pod of capi-system, whose
	// namespace file tells controller-runtime where its Lease goes.
	podNamespace := filepath.Join(t.TempDir(), "namespace")
	writeFile(t, podNamespace, "capi-system")
	startSecure := func() *framework.Process {
		return framework.StartInPod(t, "cluster-api-manager", manager, append(args, testBed()...),
			map[string]string{"/var/run/secrets/kubernetes.io/serviceaccount/namespace": podNamespace}, "TMPDIR="+capiTmp)
	}
	secure := startSecure()

	scraper := cp.Token(t, scraperNS, scraperSA)
	unbound := cp.Token(t, unboundNS, unboundSA)
	expect := func(name, url string, p *framework.Process) {
		t.Helper()
		client := insecureClient()
		status := func(token string) int {
			req, _ := http.NewRequest(http.MethodGet, url, nil)
			if token != "" {
				req.Header.Set("Authorization", "Bearer "+token)
			}
			resp, err := client.Do(req)
			if err != nil {
				return 0
			}
			resp.Body.Close()
			return resp.StatusCode
		}
		framework.WaitFor(t, name+" serving the scraper", 90*time.Second, func() (bool, error) {
			c := status(scraper)
			return c == http.StatusOK, fmt.Errorf("status %d", c)
		}, p)
		if c := status(unbound); c != http.StatusForbidden {
			t.Errorf("%s: an unbound ServiceAccount got %d, want 403", name, c)
		}
		if c := status(""); c != http.StatusUnauthorized {
			t.Errorf("%s: no token got %d, want 401", name, c)
		}
		tls12 := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true, MaxVersion: tls.VersionTLS12}}} //nolint:gosec // self-signed test-bed endpoint
		if resp, err := tls12.Get(url); err == nil {
			resp.Body.Close()
			t.Errorf("%s: a TLS 1.2 client was served (%d), the spec asks for TLS 1.3", name, resp.StatusCode)
		}
	}
	expect("Cluster API manager (shipped secure diagnostics, edited)", "https://"+podIP+":8443/metrics", secure)
	// Verified: eksa-metrics' CA, the name of its metrics Service.
	verified := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{
		RootCAs: servingCA(t, cp), ServerName: templates.ManagementServingName(edits["capi-controller-manager"].Component), MinVersion: tls.VersionTLS13}}}
	if resp, err := verified.Get("https://" + podIP + ":8443/metrics"); err != nil {
		t.Errorf("the Cluster API manager's certificate does not verify with eksa-metrics' CA: %v", err)
	} else {
		resp.Body.Close()
	}

	// A plain-HTTP controller-runtime endpoint on 127.0.0.1:<upstream>, as the
	// packages controller serves it, and the sidecar in front.
	upstream := packages.Component.UpstreamPort
	plain := framework.Start(t, "cluster-api-manager (insecure diagnostics)", manager,
		append(testBed(), "--leader-elect=false", "--insecure-diagnostics", fmt.Sprintf("--diagnostics-address=127.0.0.1:%d", upstream)))
	var sidecarArgs []string
	for _, a := range sidecar.Args {
		sidecarArgs = append(sidecarArgs, strings.Replace(a, "0.0.0.0:", sidecarPodIP+":", 1))
	}
	// Its volumes, as the kubelet mounts them into the sidecar alone: the
	// token Secret of eksa-metrics' sidecar ServiceAccount (filled by the
	// token controller) at /var/run/secrets/kubernetes.io/serviceaccount,
	// where kube-rbac-proxy's in-cluster configuration reads token and
	// ca.crt (no --kubeconfig), and the serving certificate. Neither is the
	// Deployment's own ServiceAccount's token.
	tokens := cp.StartTokenController(t, admin)
	files := map[string]string{}
	for _, m := range sidecar.VolumeMounts {
		v := pkgPod.Volumes[slices.IndexFunc(pkgPod.Volumes, func(v corev1.Volume) bool { return v.Name == m.Name })]
		if v.Secret == nil {
			t.Fatalf("sidecar volume %s is not a Secret: %+v", v.Name, v.VolumeSource)
		}
		var s *corev1.Secret
		var err error
		if v.Secret.SecretName == templates.SidecarTokenSecret {
			s = cp.WaitServiceAccountToken(t, packages.Component.Namespace, v.Secret.SecretName, tokens)
		} else if s, err = cp.Client.CoreV1().Secrets(packages.Component.Namespace).Get(ctx, v.Secret.SecretName, metav1.GetOptions{}); err != nil {
			t.Fatal(err)
		}
		maps.Copy(files, framework.SecretFiles(t, s, m.MountPath))
	}
	if files["/var/run/secrets/kubernetes.io/serviceaccount/token"] == "" {
		t.Fatalf("the sidecar mounts no token of its own: %+v", sidecar.VolumeMounts)
	}
	proxy := framework.StartInPod(t, "kube-rbac-proxy sidecar", framework.Binary(t, "kube-rbac-proxy"), sidecarArgs, files, cp.InClusterEnv(t)...)
	expect("kube-rbac-proxy sidecar", "https://"+sidecarPodIP+":8443/metrics", proxy)
	_ = plain

	// eksa-metrics verify finds both through their metrics Services'
	// EndpointSlices (written here, as the EndpointSlice controller writes
	// them for the pods the Services select).
	for name, addr := range map[string]string{"capi-controller-manager": podIP, "eks-anywhere-packages": sidecarPodIP} {
		ns := edits[name].Component.Namespace
		ready := true
		if _, err := cp.Client.DiscoveryV1().EndpointSlices(ns).Create(ctx, &discoveryv1.EndpointSlice{
			ObjectMeta: metav1.ObjectMeta{Name: name + "-metrics-e2e", Labels: map[string]string{
				discoveryv1.LabelServiceName: name + "-metrics", discoveryv1.LabelManagedBy: "e2e.eksa-metrics.invalid"}},
			AddressType: discoveryv1.AddressTypeIPv4,
			Endpoints: []discoveryv1.Endpoint{{Addresses: []string{addr}, Conditions: discoveryv1.EndpointConditions{Ready: &ready},
				TargetRef: &corev1.ObjectReference{Kind: "Pod", Namespace: ns, Name: name + "-7d9f"}}},
			Ports: []discoveryv1.EndpointPort{{Name: ptr("https"), Port: ptr(int32(8443))}},
		}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	specPath := filepath.Join(t.TempDir(), "mgmt.yaml")
	writeFile(t, specPath, specText)
	vr := verifier{t: t, kubeconfig: cp.Kubeconfig(t, "admin", "kubernetes-admin", "system:masters"), spec: specPath}
	v := vr.until("every row passing", func(v verifyRun) bool { return v.code == 0 })
	for _, want := range []string{"kube-apiserver", "capi-controller-manager@capi-controller-manager-7d9f", "eks-anywhere-packages@eks-anywhere-packages-7d9f"} {
		if p := problemsOf(v, want); len(p) != 0 {
			t.Errorf("%s: %v", want, p)
		}
	}
	// The sidecar and the Cluster API manager both serve eksa-metrics'
	// certificate for their Service's name.
	for _, r := range v.results {
		want := map[string]string{"capi-controller-manager": "eksa-metrics CA", "eks-anywhere-packages": "eksa-metrics CA"}[string(r.Target.Component)]
		if want != "" && r.TLS != want {
			t.Errorf("%s: TLS %q, want %q", r.Target, r.TLS, want)
		}
	}
	if len(v.results) != 3 || !strings.Contains(v.stderr, "Deployment eksa-system/eksa-controller-manager is not installed") {
		t.Errorf("%d rows, want 3\n%s", len(v.results), v.stderr)
	}
	managementAlerts(t, cp, r, secure, startSecure)

	proxy.Stop()
	if err := cp.Client.DiscoveryV1().EndpointSlices("capi-system").Delete(ctx, "capi-controller-manager-metrics-e2e", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	v = vr.run()
	if got := strings.Join(problemsOf(v, "eks-anywhere-packages@eks-anywhere-packages-7d9f"), ";"); v.code != cli.ExitInvalid || !strings.Contains(got, "connection refused") {
		t.Errorf("with the sidecar stopped: exit %d: %s", v.code, got)
	}
	if got := strings.Join(problemsOf(v, "capi-controller-manager"), ";"); !strings.Contains(got, "has no ready endpoint") {
		t.Errorf("without endpoints: %s", got)
	}
	t.Logf("management rows after the breaks: %v; %v", problemsOf(v, "eks-anywhere-packages@eks-anywhere-packages-7d9f"), problemsOf(v, "capi-controller-manager"))
}

func ptr[T any](v T) *T { return &v }

// capiCritical waits for alert to fire for the Cluster API manager, with
// severity critical and namespace capi-system.
func capiCritical(t *testing.T, p *framework.Prometheus, alert string, timeout time.Duration) {
	t.Helper()
	framework.WaitFor(t, alert+" firing for capi-controller-manager", timeout, func() (bool, error) {
		var seen []string
		for _, a := range p.Alerts(t) {
			if a.Labels["alertname"] == alert && a.Labels["job"] == "capi-controller-manager" && a.State == "firing" {
				if a.Labels["severity"] != "critical" || a.Labels["namespace"] != "capi-system" {
					t.Errorf("%s labels %v", alert, a.Labels)
				}
				return true, nil
			}
			seen = append(seen, a.Labels["alertname"]+" "+a.State)
		}
		return false, fmt.Errorf("alerts %v", seen)
	})
}

// managementAlerts runs a real Prometheus as a pod of the scraper's
// ServiceAccount, with the rendered scrape configuration and rules (every
// for: cut to 10 seconds): the Cluster API manager and the packages
// controller's sidecar are scraped, every metric the management rules read
// is among what they expose, none of eksa-metrics' alerts is pending at
// rest, a Cluster API Cluster nobody can reconcile fires
// EksaMetricsReconcileErrors, and the Cluster API manager stopped fires
// EksaMetricsManagementControllerDown for it; started again while another
// holder keeps its Lease, it fires EksaMetricsNoLeader.
func managementAlerts(t *testing.T, cp *framework.ControlPlane, r *render.Result, capi *framework.Process, restart func() *framework.Process) {
	t.Helper()
	ctx := context.Background()
	// What kube-prometheus' prometheus-k8s holds for discovery: read
	// EndpointSlices, Services and Pods (not eksa-metrics' to grant).
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "e2e-prometheus-discovery"}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{"discovery.k8s.io"}, Resources: []string{"endpointslices"}, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{""}, Resources: []string{"services", "pods", "endpoints"}, Verbs: []string{"get", "list", "watch"}},
	}}
	if _, err := cp.Client.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "e2e-prometheus-discovery"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: scraperSA, Namespace: scraperNS}}}
	if _, err := cp.Client.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	main := "global: {scrape_interval: 2s, scrape_timeout: 2s, evaluation_interval: 2s}\nscrape_config_files: [s.yaml]\nrule_files: [rules.yaml]\n"
	files := cp.PrometheusMounts(t, scraperNS, "", "", templates.ServingCA) // the CA of the sidecar and the manager
	files["s.yaml"] = templates.ScrapeConfigFile(r.Config)
	files["rules.yaml"] = framework.ShortFor(templates.RulesFile(r.Config), "10s")
	p := cp.StartPrometheusInPod(t, scraperNS, scraperSA, main, files)
	defer p.Proc.Stop()
	jobs := []string{"capi-controller-manager", "eks-anywhere-packages"}
	p.WaitTargets(t, "the Cluster API manager and the packages controller scraped", 90*time.Second, func(ts []framework.Target) error {
		var seen []string
		for _, job := range jobs {
			up := false
			for _, tg := range ts {
				if tg.Labels["job"] == job {
					seen = append(seen, fmt.Sprintf("%s %s %s", job, tg.Health, tg.LastError))
					up = up || tg.Health == "up"
				}
			}
			if !up {
				return fmt.Errorf("%s not up: %v", job, seen)
			}
		}
		return nil
	})
	// No dead alert: each metric a management rule reads, exposed by the
	// real controllers (the packages controller's family, as the Cluster API
	// manager runs it here, without leader election).
	for _, g := range templates.RuleGroups(r.Config) {
		for _, a := range g.Alerts {
			job := map[string]string{"capi-system": "capi-controller-manager", "eksa-packages": "eks-anywhere-packages"}[a.Namespace]
			if job == "" {
				continue
			}
			for _, m := range a.Metrics {
				if m == "leader_election_master_status" && job != "capi-controller-manager" {
					continue
				}
				p.WaitQuery(t, fmt.Sprintf("%s (read by %s) from %s", m, a.Name, job), 60*time.Second,
					fmt.Sprintf("count(%s{job=%q})", m, job), func(res []map[string]string) bool { return len(res) > 0 })
			}
		}
	}
	// Every panel of the management dashboard has data (no dead panel).
	for _, d := range dashboards.Dashboards(r.Config) {
		if d.Name != templates.Prefix+"-management" {
			continue
		}
		for _, panel := range d.Panels {
			p.WaitQuery(t, fmt.Sprintf("dashboard %s, panel %q with data", d.Name, panel.Title), 60*time.Second, panel.Expr,
				func(res []map[string]string) bool { return len(res) > 0 })
		}
	}
	// At rest, over several evaluations, none of eksa-metrics' alerts is
	// pending or firing.
	for range 6 {
		for _, a := range p.Alerts(t) {
			if strings.HasPrefix(a.Labels["alertname"], "EksaMetrics") {
				t.Errorf("%s is %s at rest: %v", a.Labels["alertname"], a.State, a.Labels)
			}
		}
		time.Sleep(2 * time.Second)
	}
	// A Cluster API Cluster whose infrastructure kind no provider serves
	// (and without a kubeconfig Secret): the controllers that reconcile
	// Cluster API Clusters fail on it, and EksaMetricsReconcileErrors fires
	// for the one whose errors pass one in ten of its reconciles.
	broken := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Cluster",
		"metadata": map[string]any{"name": "broken", "namespace": "default"},
		"spec":     map[string]any{"infrastructureRef": map[string]any{"apiGroup": "infrastructure.cluster.x-k8s.io", "kind": "NoSuchCluster", "name": "broken"}}}}
	capiClusters := schema.GroupVersionResource{Group: "cluster.x-k8s.io", Version: "v1beta2", Resource: "clusters"}
	if _, err := cp.Dynamic.Resource(capiClusters).Namespace("default").Create(ctx, broken, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	created := time.Now()
	var failing map[string]string
	framework.WaitFor(t, "EksaMetricsReconcileErrors firing", 120*time.Second, func() (bool, error) {
		var seen []string
		for _, a := range p.Alerts(t) {
			if a.Labels["alertname"] == "EksaMetricsReconcileErrors" && a.State == "firing" {
				failing = a.Labels
				return true, nil
			}
			seen = append(seen, fmt.Sprintf("%s %s %v", a.Labels["alertname"], a.State, a.Labels))
		}
		return false, fmt.Errorf("alerts %v", seen)
	})
	if !slices.Contains(jobs, failing["job"]) || failing["severity"] != "warning" || failing["namespace"] == "" {
		t.Errorf("EksaMetricsReconcileErrors labels %v", failing)
	}
	t.Logf("a Cluster API Cluster with an infrastructure kind nobody serves: EksaMetricsReconcileErrors fired for %s controller %s (namespace %s) %s after it was created (for: 10s)",
		failing["job"], failing["controller"], failing["namespace"], time.Since(created).Round(time.Second))
	stopped := time.Now()
	capi.Stop()
	capiCritical(t, p, "EksaMetricsManagementControllerDown", 90*time.Second)
	t.Logf("the Cluster API manager stopped: EksaMetricsManagementControllerDown fired %s later (for: 10s)", time.Since(stopped).Round(time.Second))
	for _, a := range p.Alerts(t) {
		if strings.HasPrefix(a.Labels["alertname"], "EksaMetrics") && a.Labels["job"] != "capi-controller-manager" && a.Labels["alertname"] != "EksaMetricsReconcileErrors" {
			t.Errorf("%s is %s for %v after the Cluster API manager stopped", a.Labels["alertname"], a.State, a.Labels)
		}
	}

	// Another holder keeps the manager's Lease (a replica that is stuck, a
	// second installation with the same election ID): the manager, started
	// again, waits as a standby (leader_election_master_status 0) and no
	// replica reconciles.
	leases, err := cp.Client.CoordinationV1().Leases("capi-system").List(ctx, metav1.ListOptions{})
	if err != nil || len(leases.Items) != 1 {
		t.Fatalf("the Cluster API manager's Lease: %v, %v", leases, err)
	}
	lease := leases.Items[0]
	lease.Spec.HolderIdentity = ptr("another-replica")
	lease.Spec.LeaseDurationSeconds = ptr(int32(3600))
	lease.Spec.RenewTime = &metav1.MicroTime{Time: time.Now()}
	if _, err := cp.Client.CoordinationV1().Leases("capi-system").Update(ctx, &lease, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	restarted := time.Now()
	restart()
	capiCritical(t, p, "EksaMetricsNoLeader", 120*time.Second)
	t.Logf("the Cluster API manager started again while another-replica holds its Lease %s: EksaMetricsNoLeader fired %s later (for: 10s)", lease.Name, time.Since(restarted).Round(time.Second))
}
