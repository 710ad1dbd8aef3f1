package integration

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/eksa-metrics/eksa-metrics/internal/cli"
	"github.com/eksa-metrics/eksa-metrics/internal/testutil"
	"github.com/eksa-metrics/eksa-metrics/pkg/kubeadm"
	"github.com/eksa-metrics/eksa-metrics/pkg/spec"
	"github.com/eksa-metrics/eksa-metrics/test/framework"
)

// requests counts what eksa-metrics sends, and can fail every mutating
// request (a write: not a read, not a server dry run) after the first
// failAfter ones.
type requests struct {
	mu        sync.Mutex
	writes    int
	dryRuns   int
	total     int
	failAfter int
}

func (r *requests) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripper(func(req *http.Request) (*http.Response, error) {
		r.mu.Lock()
		r.total++
		// A server dry run persists nothing (apply asks one of the
		// KubeadmControlPlane to know whether the control plane rolls).
		dryRun := strings.Contains(req.URL.RawQuery, "dryRun=All")
		mutating := req.Method != http.MethodGet && req.Method != http.MethodHead && !dryRun
		if dryRun {
			r.dryRuns++
		}
		if mutating {
			r.writes++
			if r.failAfter > 0 && r.writes > r.failAfter {
				r.mu.Unlock()
				return nil, errors.New("injected fault: connection reset")
			}
		}
		r.mu.Unlock()
		return rt.RoundTrip(req)
	})
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// apply runs `eksa-metrics apply` in-process and returns the exit code, the
// stderr, and the requests sent.
func apply(t testing.TB, faults int, args ...string) (int, string, *requests) {
	t.Helper()
	var out, errOut bytes.Buffer
	f := &cli.Factory{IOStreams: cli.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}}
	reqs := &requests{failAfter: faults}
	cmd := cli.NewCmdApply(f, func(o *cli.ApplyOptions) error {
		o.WrapTransport = reqs.wrap
		return o.Run(context.Background())
	})
	cmd.SetArgs(args)
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	cmd.SilenceErrors, cmd.SilenceUsage = true, true
	err := cmd.Execute()
	if err != nil {
		errOut.WriteString("Error: " + err.Error() + "\n")
	}
	if out.Len() != 0 {
		t.Errorf("apply wrote to stdout: %s", out.String())
	}
	return cli.ExitCode(err), errOut.String(), reqs
}

func writeSpec(t testing.TB, specName, metrics string) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(testutil.SharedFixtures(t), "specs", specName+".yaml"))
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "cluster.yaml")
	doc := string(raw) + "\n---\napiVersion: metrics.anywhere.eks.amazonaws.com/v1alpha1\nkind: MetricsConfig\nmetadata: {name: test}\nspec:\n" + metrics
	if err := os.WriteFile(p, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

const zPagesOn = `  scrapers: [{kind: ServiceAccount, name: prometheus-k8s, namespace: monitoring}]
  zPages: {statusz: true, flagz: true}
`
const zPagesOff = `  scrapers: [{kind: ServiceAccount, name: prometheus-k8s, namespace: monitoring}]
  zPages: {statusz: false, flagz: false}
`

// The acceptance path of apply on a real API server, for both contracts:
// EKS-A's forced re-apply keeps eksa-metrics' items; a second apply sends
// no write; turning z-pages off removes exactly the items eksa-metrics added.
func TestApplySurvivesEKSAReconcileAndConverges(t *testing.T) {
	for _, tc := range []struct{ capi, spec, rendered, eksaVersion string }{
		{spec.CAPIv1beta2, "docker", "docker.v1beta2", "v0.26.1"},
		{spec.CAPIv1beta1, "vsphere-external-etcd", "vsphere-external-etcd.v1beta1", "v0.24.6"},
	} {
		t.Run(tc.capi, func(t *testing.T) {
			ctx := context.Background()
			cp := framework.StartControlPlane(t, framework.ControlPlaneOptions{Version: kubeVersion})
			cp.InstallCRDs(t, tc.capi)
			cp.ServiceAccount(t, "monitoring", "prometheus-k8s") // the scraper, as its stack creates it
			kubeconfig := cp.Kubeconfig(t, "admin", "kubernetes-admin", "system:masters")
			eksa := eksaKCP(t, tc.rendered, tc.capi)
			if err := cp.Apply(ctx, "eks-a-controller", true, eksa); err != nil {
				t.Fatal(err)
			}
			before := liveKCP(t, cp, tc.capi)

			// A 1.34 spec with z-pages: feature gates on three components.
			on := writeSpecVersion(t, tc.spec, zPagesOn, "1.34", tc.eksaVersion)
			code, stderr, first := apply(t, 0, "-f", on, "--kubeconfig", kubeconfig)
			if code != cli.ExitUsage || !strings.Contains(stderr, "--allow-control-plane-rollout") || first.writes != 0 {
				t.Fatalf("without --allow-control-plane-rollout: exit %d, %d writes:\n%s", code, first.writes, stderr)
			}
			code, stderr, first = apply(t, 0, "-f", on, "--kubeconfig", kubeconfig, "--allow-control-plane-rollout")
			if code != 0 {
				t.Fatalf("first apply: exit %d:\n%s", code, stderr)
			}
			t.Logf("first apply: %d requests, %d of them writes", first.total, first.writes)
			if err := cp.Apply(ctx, "eks-a-controller", true, eksa); err != nil {
				t.Fatalf("EKS-A's re-apply: %v", err)
			}
			for _, comp := range []kubeadm.Component{kubeadm.APIServer, kubeadm.ControllerManager, kubeadm.Scheduler} {
				if got := liveArgs(t, liveKCP(t, cp, tc.capi), comp.Path())["feature-gates"]; got != "ComponentFlagz=true,ComponentStatusz=true" {
					t.Errorf("%s feature-gates after EKS-A's reconcile: %q", comp, got)
				}
			}
			code, stderr, second := apply(t, 0, "-f", on, "--kubeconfig", kubeconfig, "--allow-control-plane-rollout")
			if code != 0 || second.writes != 0 || !strings.Contains(stderr, "0 to create, 0 to change") {
				t.Fatalf("second apply: exit %d, %d writes (want 0):\n%s", code, second.writes, stderr)
			}
			t.Logf("second apply: %d requests, %d writes", second.total, second.writes)

			off := writeSpecVersion(t, tc.spec, zPagesOff, "1.34", tc.eksaVersion)
			if code, stderr, _ := apply(t, 0, "-f", off, "--kubeconfig", kubeconfig, "--allow-control-plane-rollout"); code != 0 {
				t.Fatalf("z-pages off: exit %d:\n%s", code, stderr)
			}
			after := liveKCP(t, cp, tc.capi)
			for _, comp := range kubeadm.Components() {
				if b, a := liveArgs(t, before, comp.Path()), liveArgs(t, after, comp.Path()); !reflect.DeepEqual(b, a) {
					t.Errorf("%s extraArgs after turning z-pages off: %v, want EKS-A's own %v", comp, a, b)
				}
			}
			if _, _, third := apply(t, 0, "-f", off, "--kubeconfig", kubeconfig); third.writes != 0 {
				t.Errorf("apply after the release: %d writes, want 0", third.writes)
			}
		})
	}
}

func writeSpecVersion(t testing.TB, specName, metrics, kube, eksa string) string {
	t.Helper()
	p := writeSpec(t, specName, metrics)
	raw, _ := os.ReadFile(p)
	s := strings.Replace(string(raw), `kubernetesVersion: "1.36"`, `kubernetesVersion: "`+kube+`"`, 1)
	s = strings.Replace(s, `kubernetesVersion: "1.34"`, `kubernetesVersion: "`+kube+`"`+"\n  eksaVersion: "+eksa, 1)
	if !strings.Contains(s, "eksaVersion") {
		s = strings.Replace(s, `kubernetesVersion: "`+kube+`"`, `kubernetesVersion: "`+kube+`"`+"\n  eksaVersion: "+eksa, 1)
	}
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func liveKCP(t *testing.T, cp *framework.ControlPlane, capi string) *unstructured.Unstructured {
	t.Helper()
	u, err := cp.Dynamic.Resource(kcpGVR(capi)).Namespace("eksa-system").Get(context.Background(), "test", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// bindAddress mode edits the kube-proxy ConfigMap by read-modify-write:
// every other byte stays, kube-proxy restarts, an interrupted apply
// converges when run again.
func TestApplyKubeProxyEditAndFaults(t *testing.T) {
	ctx := context.Background()
	cp := framework.StartControlPlane(t, framework.ControlPlaneOptions{Version: kubeVersion})
	cp.InstallCRDs(t, spec.CAPIv1beta2)
	kubeconfig := cp.Kubeconfig(t, "admin", "kubernetes-admin", "system:masters")
	if err := cp.Apply(ctx, "eks-a-controller", true, eksaKCP(t, "docker.v1beta2", spec.CAPIv1beta2)); err != nil {
		t.Fatal(err)
	}
	conf := "apiVersion: kubeproxy.config.k8s.io/v1alpha1\nbindAddress: 0.0.0.0\nclusterCIDR: 192.168.0.0/16\n# a comment kubeadm does not write, kept anyway\nkind: KubeProxyConfiguration\nmetricsBindAddress: \"\"\nmode: iptables\n"
	kubeconfigConf := "apiVersion: v1\nkind: Config\n"
	if _, err := cp.Client.CoreV1().ConfigMaps("kube-system").Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "kube-proxy", Namespace: "kube-system"},
		Data:       map[string]string{"config.conf": conf, "kubeconfig.conf": kubeconfigConf},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	labels := map[string]string{"k8s-app": "kube-proxy"}
	if _, err := cp.Client.AppsV1().DaemonSets("kube-system").Create(ctx, &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: "kube-proxy", Namespace: "kube-system"},
		Spec: appsv1.DaemonSetSpec{Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: labels},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "kube-proxy", Image: "registry.invalid/kube-proxy:v1"}}},
		}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	p := writeSpecVersion(t, "docker", `  scrapers: [{kind: Group, name: "platform:metrics"}]
  exposure: bindAddress
  allowInsecure: true
`, "1.34", "v0.26.1")
	args := []string{"-f", p, "--kubeconfig", kubeconfig, "--allow-control-plane-rollout"}

	// Interrupted after three writes: the apply fails...
	code, stderr, faulty := apply(t, 3, args...)
	if code != cli.ExitRuntime || !strings.Contains(stderr, "injected fault") {
		t.Fatalf("interrupted apply: exit %d:\n%s", code, stderr)
	}
	t.Logf("interrupted apply: %d writes attempted", faulty.writes)
	// ...and converges when run again.
	code, stderr, full := apply(t, 0, args...)
	if code != 0 {
		t.Fatalf("apply after the fault: exit %d:\n%s", code, stderr)
	}
	t.Logf("converging apply: %d requests, %d writes", full.total, full.writes)
	if _, stderr, again := apply(t, 0, args...); again.writes != 0 {
		t.Fatalf("apply after convergence: %d writes, want 0:\n%s", again.writes, stderr)
	}

	cm, err := cp.Client.CoreV1().ConfigMaps("kube-system").Get(ctx, "kube-proxy", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if want := strings.Replace(conf, `metricsBindAddress: ""`, `metricsBindAddress: "0.0.0.0:10249"`, 1); cm.Data["config.conf"] != want {
		t.Errorf("config.conf:\n%s\nwant:\n%s", cm.Data["config.conf"], want)
	}
	if cm.Data["kubeconfig.conf"] != kubeconfigConf {
		t.Errorf("kubeconfig.conf changed: %q", cm.Data["kubeconfig.conf"])
	}
	ds, err := cp.Client.AppsV1().DaemonSets("kube-system").Get(ctx, "kube-proxy", metav1.GetOptions{})
	if err != nil || ds.Spec.Template.Annotations["eksa-metrics/restartedAt"] == "" {
		t.Errorf("kube-proxy was not restarted: %v %v", err, ds.Spec.Template.Annotations)
	}
}

// An object of a rendered name that eksa-metrics did not create is never
// taken over, with or without --force-conflicts (a later prune would
// delete it): nothing is written. Fields of eksa-metrics' own object that
// another manager took since are reported with its name and not forced,
// unless --force-conflicts says so.
func TestApplyReportsConflicts(t *testing.T) {
	ctx := context.Background()
	cp := framework.StartControlPlane(t, framework.ControlPlaneOptions{Version: kubeVersion})
	cp.InstallCRDs(t, spec.CAPIv1beta2)
	kubeconfig := cp.Kubeconfig(t, "admin", "kubernetes-admin", "system:masters")
	theirs := map[string]any{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": map[string]any{"name": "eksa-metrics-reader"},
		"rules": []any{map[string]any{"verbs": []any{"get"}, "nonResourceURLs": []any{"/metrics"}}}}
	if err := cp.Apply(ctx, "platform-team", true, theirs); err != nil {
		t.Fatal(err)
	}
	p := writeSpecVersion(t, "docker", "  scrapers: [{kind: Group, name: g}]\n", "1.36", "v0.26.1")
	for _, force := range []bool{false, true} {
		args := []string{"-f", p, "--kubeconfig", kubeconfig}
		if force {
			args = append(args, "--force-conflicts")
		}
		code, stderr, reqs := apply(t, 0, args...)
		if code == 0 || reqs.writes != 0 || !strings.Contains(stderr, "ClusterRole eksa-metrics-reader") || !strings.Contains(stderr, "never takes over an object it did not create") {
			t.Fatalf("a foreign ClusterRole of eksa-metrics' name (--force-conflicts %t): exit %d, %d writes:\n%s", force, code, reqs.writes, stderr)
		}
	}
	if err := cp.Client.RbacV1().ClusterRoles().Delete(ctx, "eksa-metrics-reader", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if code, stderr, _ := apply(t, 0, "-f", p, "--kubeconfig", kubeconfig); code != 0 {
		t.Fatalf("exit %d:\n%s", code, stderr)
	}
	// platform-team takes a field of eksa-metrics' ClusterRole.
	if err := cp.Apply(ctx, "platform-team", true, theirs); err != nil {
		t.Fatal(err)
	}
	code, stderr, _ := apply(t, 0, "-f", p, "--kubeconfig", kubeconfig)
	if code != cli.ExitRuntime || !strings.Contains(stderr, `"platform-team"`) || !strings.Contains(stderr, "--force-conflicts") {
		t.Fatalf("want a conflict naming platform-team: exit %d:\n%s", code, stderr)
	}
	if code, stderr, _ := apply(t, 0, "-f", p, "--kubeconfig", kubeconfig, "--force-conflicts"); code != 0 {
		t.Fatalf("--force-conflicts: exit %d:\n%s", code, stderr)
	}
}

// apply changes EKS-A's KubeadmControlPlane and never creates one: a missing
// one is reported before anything is written.
func TestApplyRefusesAMissingKubeadmControlPlane(t *testing.T) {
	cp := framework.StartControlPlane(t, framework.ControlPlaneOptions{Version: kubeVersion})
	cp.InstallCRDs(t, spec.CAPIv1beta2)
	kubeconfig := cp.Kubeconfig(t, "admin", "kubernetes-admin", "system:masters")
	p := writeSpecVersion(t, "docker", "  scrapers: [{kind: Group, name: g}]\n  zPages: {statusz: true}\n", "1.34", "v0.26.1")
	code, stderr, reqs := apply(t, 0, "-f", p, "--kubeconfig", kubeconfig, "--allow-control-plane-rollout")
	if code != cli.ExitRuntime || reqs.writes != 0 || !strings.Contains(stderr, "has no KubeadmControlPlane eksa-system/test to change") {
		t.Fatalf("exit %d, %d writes:\n%s", code, reqs.writes, stderr)
	}
}

// An unreachable cluster gives exit 1 and names the kubeconfig and context.
func TestApplyUnreachableCluster(t *testing.T) {
	dir := t.TempDir()
	kc := filepath.Join(dir, "gone.kubeconfig")
	if err := os.WriteFile(kc, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: not-a-real-token}}]
contexts: [{name: prod, context: {cluster: c, user: u}}]
current-context: prod
`), 0o600); err != nil {
		t.Fatal(err)
	}
	p := writeSpecVersion(t, "docker", "  scrapers: [{kind: Group, name: g}]\n", "1.36", "v0.26.1")
	code, stderr, _ := apply(t, 0, "-f", p, "--kubeconfig", kc, "--context", "prod")
	if code != cli.ExitRuntime || !strings.Contains(stderr, kc) || !strings.Contains(stderr, `context "prod"`) || !strings.Contains(stderr, "https://127.0.0.1:1") {
		t.Fatalf("exit %d:\n%s", code, stderr)
	}
}

// --wait waits for the DaemonSets it changed: it times out with a clear
// message while no DaemonSet controller runs, and returns once a real
// kube-controller-manager has reconciled them.
func TestApplyWait(t *testing.T) {
	cp := framework.StartControlPlane(t, framework.ControlPlaneOptions{Version: kubeVersion})
	cp.InstallCRDs(t, spec.CAPIv1beta2)
	kubeconfig := cp.Kubeconfig(t, "admin", "kubernetes-admin", "system:masters")
	p := writeSpecVersion(t, "docker", "  scrapers: [{kind: Group, name: g}]\n", "1.36", "v0.26.1")
	if err := cp.Apply(context.Background(), "eks-a-controller", true, eksaKCP(t, "docker.v1beta2", spec.CAPIv1beta2)); err != nil {
		t.Fatal(err)
	}

	code, stderr, _ := apply(t, 0, "-f", p, "--kubeconfig", kubeconfig, "--wait", "--timeout", "2s")
	if code != cli.ExitRuntime || !strings.Contains(stderr, "timed out after 2s waiting for DaemonSet kube-system/eksa-metrics-") {
		t.Fatalf("want a timeout naming the DaemonSet: exit %d:\n%s", code, stderr)
	}

	kcm := cp.Kubeconfig(t, "controller-manager", "system:kube-controller-manager")
	framework.Start(t, "kube-controller-manager", framework.Binary(t, filepath.Join("k8s", kubeVersion, "kube-controller-manager")), []string{
		"--kubeconfig=" + kcm, "--controllers=daemonset,serviceaccount-token", "--use-service-account-credentials=true",
		"--service-account-private-key-file=" + cp.PKI.ServiceAccountKey, "--leader-elect=false", "--secure-port=0",
	})
	// Change something so that the DaemonSets are applied again, then wait.
	p2 := writeSpecVersion(t, "docker", "  scrapers: [{kind: Group, name: g}]\n  tls: {minVersion: VersionTLS13}\n  exposure: proxy\n", "1.36", "v0.26.1")
	code, stderr, _ = apply(t, 0, "-f", p2, "--kubeconfig", kubeconfig, "--wait", "--timeout", "20s", "--allow-control-plane-rollout")
	if code != cli.ExitRuntime || !strings.Contains(stderr, "DaemonSet kube-system/eksa-metrics-control-plane-proxy is ready") {
		// The KubeadmControlPlane (TLS 1.3 reaches the components) never rolls out here: no Cluster API controller runs.
		t.Fatalf("want the DaemonSets ready, then a KubeadmControlPlane timeout: exit %d:\n%s", code, stderr)
	}
	if !strings.Contains(stderr, "waiting for KubeadmControlPlane eksa-system/test") {
		t.Fatalf("want a wait on the KubeadmControlPlane:\n%s", stderr)
	}
}

// --dry-run=client sends nothing; --dry-run=server sends every request with
// dryRun=All and nothing is persisted. A workload cluster's kubeconfig comes
// from the management cluster's Secret eksa-system/<cluster>-kubeconfig.
func TestApplyDryRunsAndWorkloadKubeconfig(t *testing.T) {
	ctx := context.Background()
	cp := framework.StartControlPlane(t, framework.ControlPlaneOptions{Version: kubeVersion})
	cp.InstallCRDs(t, spec.CAPIv1beta2)
	kubeconfig := cp.Kubeconfig(t, "admin", "kubernetes-admin", "system:masters")
	workloadSpec := writeSpecVersion(t, "docker", "  scrapers: [{kind: Group, name: g}]\n", "1.36", "v0.26.1")
	raw, _ := os.ReadFile(workloadSpec)
	if err := os.WriteFile(workloadSpec, []byte(strings.Replace(string(raw), "managementCluster:\n    name: test", "managementCluster:\n    name: mgmt", 1)), 0o644); err != nil {
		t.Fatal(err)
	}

	code, stderr, _ := apply(t, 0, "-f", workloadSpec, "--kubeconfig", kubeconfig)
	if code != cli.ExitRuntime || !strings.Contains(stderr, "no Secret eksa-system/test-kubeconfig") || !strings.Contains(stderr, "--workload-kubeconfig") {
		t.Fatalf("missing workload kubeconfig Secret: exit %d:\n%s", code, stderr)
	}
	// Inline, as Cluster API writes it: file paths in a Secret are refused.
	data := flatKubeconfig(t, kubeconfig)
	cp.ServiceAccount(t, "eksa-system", "default") // creates the namespace
	if _, err := cp.Client.CoreV1().Secrets("eksa-system").Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "test-kubeconfig", Namespace: "eksa-system"}, Data: map[string][]byte{"value": data},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	for _, mode := range []string{"client", "server"} {
		code, stderr, reqs := apply(t, 0, "-f", workloadSpec, "--kubeconfig", kubeconfig, "--dry-run="+mode)
		if code != 0 {
			t.Fatalf("--dry-run=%s: exit %d:\n%s", mode, code, stderr)
		}
		if mode == "client" && reqs.writes != 0 {
			t.Errorf("--dry-run=client sent %d writes", reqs.writes)
		}
		if mode == "server" && (reqs.writes != 0 || reqs.dryRuns == 0 || !strings.Contains(stderr, "nothing was persisted")) {
			t.Errorf("--dry-run=server: %d writes, %d server dry runs:\n%s", reqs.writes, reqs.dryRuns, stderr)
		}
		if _, err := cp.Client.RbacV1().ClusterRoles().Get(ctx, "eksa-metrics-reader", metav1.GetOptions{}); err == nil {
			t.Fatalf("--dry-run=%s persisted the ClusterRole", mode)
		}
	}
	if code, stderr, _ := apply(t, 0, "-f", workloadSpec, "--kubeconfig", kubeconfig); code != 0 || !strings.Contains(stderr, "(workload cluster)") {
		t.Fatalf("apply through the Secret's kubeconfig: exit %d:\n%s", code, stderr)
	}
	if _, err := cp.Client.RbacV1().ClusterRoles().Get(ctx, "eksa-metrics-reader", metav1.GetOptions{}); err != nil {
		t.Fatalf("the workload objects were not applied: %v", err)
	}
}

// Management-component Deployments are edited by read-modify-write: the
// rendered flags replace or join the container's args, every other argument
// and field stays, a second apply writes nothing, and Deployments that are
// not installed are skipped.
func TestApplyEditsManagementDeployments(t *testing.T) {
	ctx := context.Background()
	cp := framework.StartControlPlane(t, framework.ControlPlaneOptions{Version: kubeVersion})
	cp.InstallCRDs(t, spec.CAPIv1beta2)
	kubeconfig := cp.Kubeconfig(t, "admin", "kubernetes-admin", "system:masters")
	cp.ServiceAccount(t, "capi-system", "capi-manager") // creates the namespace
	labels := map[string]string{"cluster.x-k8s.io/provider": "cluster-api"}
	shipped := []string{"--leader-elect", "--diagnostics-address=:8443", "--insecure-diagnostics=false", "--feature-gates=MachinePool=true", "--namespace=eksa-system"}
	if _, err := cp.Client.AppsV1().Deployments("capi-system").Create(ctx, &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "capi-controller-manager", Namespace: "capi-system"},
		Spec: appsv1.DeploymentSpec{Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: labels},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "manager", Image: "registry.invalid/capi:v1.13.2", Args: shipped,
				Ports: []corev1.ContainerPort{{Name: "metrics", ContainerPort: 8443, Protocol: corev1.ProtocolTCP}}}}},
		}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	p := writeSpecVersion(t, "docker", "  scrapers: [{kind: Group, name: g}]\n  tls: {minVersion: VersionTLS13}\n", "1.36", "v0.26.1")
	if err := cp.Apply(ctx, "eks-a-controller", true, eksaKCP(t, "docker.v1beta2", spec.CAPIv1beta2)); err != nil {
		t.Fatal(err)
	}
	code, stderr, _ := apply(t, 0, "-f", p, "--kubeconfig", kubeconfig, "--allow-control-plane-rollout")
	if code != 0 || !strings.Contains(stderr, "~ edit Deployment capi-system/capi-controller-manager") || !strings.Contains(stderr, "· skip Deployment capd-system/capd-controller-manager (management cluster): not installed") {
		t.Fatalf("exit %d:\n%s", code, stderr)
	}
	d, err := cp.Client.AppsV1().Deployments("capi-system").Get(ctx, "capi-controller-manager", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := append(append([]string{}, shipped...), "--tls-min-version=VersionTLS13")
	if got := d.Spec.Template.Spec.Containers[0].Args; !reflect.DeepEqual(got, want) {
		t.Fatalf("args %q, want %q", got, want)
	}
	if _, stderr, again := apply(t, 0, "-f", p, "--kubeconfig", kubeconfig); again.writes != 0 {
		t.Fatalf("second apply: %d writes:\n%s", again.writes, stderr)
	}
}
