package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	metricsv1alpha1 "github.com/eksa-metrics/eksa-metrics/pkg/apis/metrics/v1alpha1"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/eksa-metrics/eksa-metrics/internal/cli"
	"github.com/eksa-metrics/eksa-metrics/pkg/verify"
	"github.com/eksa-metrics/eksa-metrics/test/framework"
)

type verifyRun struct {
	code    int
	results []verify.Result
	table   string
	stderr  string
}

func (v verifyRun) row(component string) *verify.Result {
	for i := range v.results {
		if string(v.results[i].Target.Component) == component {
			return &v.results[i]
		}
	}
	return nil
}

// verifier runs `eksa-metrics verify -o json` in-process.
type verifier struct {
	t                *testing.T
	kubeconfig, spec string
}

func (vr verifier) run() verifyRun {
	t := vr.t
	t.Helper()
	var out, errOut bytes.Buffer
	code := cli.Main(context.Background(), []string{"verify", "-f", vr.spec, "--kubeconfig", vr.kubeconfig, "-o", "json"}, cli.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut})
	var doc struct {
		Results []verify.Result `json:"results"`
	}
	if err := json.Unmarshal(out.Bytes(), &doc); err != nil && code != cli.ExitRuntime {
		t.Fatalf("verify -o json: %v\n%s\n%s", err, out.String(), errOut.String())
	}
	return verifyRun{code: code, results: doc.Results, stderr: errOut.String()}
}

// until runs verify until the condition holds: components cache
// authorization decisions (ten seconds for the control plane).
func (vr verifier) until(what string, cond func(verifyRun) bool) verifyRun {
	t := vr.t
	t.Helper()
	var v verifyRun
	for i := 0; i < 20; i++ {
		if v = vr.run(); cond(v) {
			return v
		}
		time.Sleep(2 * time.Second)
	}
	t.Fatalf("verify never showed %s; last run: exit %d %+v\n%s", what, v.code, v.results, v.stderr)
	return v
}

// rows returns every row of a target component.
func (v verifyRun) rows(component string) []verify.Result {
	var out []verify.Result
	for _, r := range v.results {
		if string(r.Target.Component) == component {
			out = append(out, r)
		}
	}
	return out
}

// verifyCluster runs `eksa-metrics verify` against the loopback test bed:
// one Node object stands for the control-plane node at NodeIP (no kubelet
// runs here, so the kubelet target is turned off in the spec verify reads;
// the three-node cluster of TestPrometheusScrapesWhatIsRendered verifies the
// kubelets and kube-proxies).
func verifyCluster(t *testing.T, cp *framework.ControlPlane, minor string, mode metricsv1alpha1.Exposure, procs []*framework.Process, breaks bool) {
	ctx := context.Background()
	node, err := cp.Client.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "cp-1",
		Labels: map[string]string{"node-role.kubernetes.io/control-plane": ""}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	node.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: NodeIP}}
	if _, err := cp.Client.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if mode == metricsv1alpha1.ExposureBindAddress {
		startKubeProxy(t, cp, NodeIP) // kube-proxy with metricsBindAddress on the node address
	}
	specPath := t.TempDir() + "/verify.yaml"
	// flagz off: the hollow kube-proxy serves no /flagz (kubemark does not
	// hand kube-proxy's flag reader over), so verify must not expect one.
	// The cluster gets the roles of that spec first (the ones applied before
	// grant /flagz, and verify rightly reports a scraper served /flagz that
	// the spec did not ask for).
	specText := strings.Replace(specFor(minor, mode), "  zPages: {statusz: true, flagz: true}", "  components: {kubelet: {enabled: false}}\n  zPages: {statusz: true}", 1)
	writeFile(t, specPath, specText)
	apply(t, cp, renderSpec(t, specText))
	kubeconfig := cp.Kubeconfig(t, "admin", "kubernetes-admin", "system:masters")
	vr := verifier{t: t, kubeconfig: kubeconfig, spec: specPath}
	until := vr.until
	v := until("every row passing", func(v verifyRun) bool { return v.code == 0 })
	want := map[string]bool{"kube-apiserver": true, "kube-controller-manager": true, "kube-scheduler": true, "etcd": true, "kube-proxy": true}
	for _, r := range v.results {
		delete(want, string(r.Target.Component))
		if !r.Pass() || r.Samples == 0 {
			t.Errorf("%s: %+v", r.Target, r)
		}
		if r.Target.ZPages && r.Version == "" {
			t.Errorf("%s: no version from /statusz: %+v", r.Target, r)
		}
	}
	if len(want) != 0 {
		t.Errorf("verify did not check %v", want)
	}
	if api := v.row("kube-apiserver"); api == nil || api.TLS != "cluster CA" || api.Version != strings.TrimPrefix(cp.Version, "v") {
		t.Errorf("kube-apiserver row: %+v", api)
	}
	// In proxy mode every proxy serves eksa-metrics' certificate (HAProxy
	// terminating TLS in front of kube-controller-manager); in bindAddress
	// mode kube-controller-manager serves its own self-signed one.
	wantTLS := map[string]string{"kube-controller-manager": "self-signed"}
	if mode == metricsv1alpha1.ExposureProxy {
		wantTLS = map[string]string{"kube-controller-manager": "eksa-metrics CA", "kube-scheduler": "eksa-metrics CA", "etcd": "eksa-metrics CA", "kube-proxy": "eksa-metrics CA"}
	}
	for comp, want := range wantTLS {
		if r := v.row(comp); r == nil || r.TLS != want {
			t.Errorf("%s row, want TLS %q: %+v", comp, want, r)
		}
	}
	sas, _ := cp.Client.CoreV1().ServiceAccounts("kube-system").List(ctx, metav1.ListOptions{})
	for _, sa := range sas.Items {
		if strings.HasPrefix(sa.Name, "eksa-metrics-verify-") {
			t.Errorf("verify left ServiceAccount %s behind", sa.Name)
		}
	}
	if !breaks {
		return
	}

	// Break 1: the reader binding is gone: the scraper is refused everywhere.
	crb, err := cp.Client.RbacV1().ClusterRoleBindings().Get(ctx, "eksa-metrics-reader", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := cp.Client.RbacV1().ClusterRoleBindings().Delete(ctx, crb.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	v = until("the scraper refused", func(v verifyRun) bool {
		r := v.row("kube-controller-manager")
		return v.code == cli.ExitInvalid && r != nil && r.Scraper == 403
	})
	t.Logf("without the reader binding: %s: %s", v.row("kube-controller-manager").Target, v.row("kube-controller-manager").Problems)
	if r := v.row("kube-controller-manager"); !strings.Contains(strings.Join(r.Problems, ";"), "lacks RBAC") {
		t.Errorf("the reason should say the scraper lacks RBAC: %v", r.Problems)
	}
	crb.ResourceVersion = ""
	if _, err := cp.Client.RbacV1().ClusterRoleBindings().Create(ctx, crb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	until("the scraper allowed again", func(v verifyRun) bool { return v.code == 0 })

	// Break 2: a binding grants the reader role to every ServiceAccount of
	// kube-system, so the unbound identity is served.
	leak := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "too-broad"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "eksa-metrics-reader"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: "system:serviceaccounts:kube-system"}}}
	if _, err := cp.Client.RbacV1().ClusterRoleBindings().Create(ctx, leak, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	v = until("a target serving an unbound identity", func(v verifyRun) bool {
		r := v.row("kube-scheduler")
		return v.code == cli.ExitInvalid && r != nil && r.Unbound == 200
	})
	t.Logf("with a too-broad binding: %s: %s", v.row("kube-scheduler").Target, v.row("kube-scheduler").Problems)
	if r := v.row("kube-scheduler"); !strings.Contains(strings.Join(r.Problems, ";"), "UNBOUND IDENTITY") {
		t.Errorf("the reason should name the unbound identity: %v", r.Problems)
	}
	_ = cp.Client.RbacV1().ClusterRoleBindings().Delete(ctx, leak.Name, metav1.DeleteOptions{})
	until("the unbound identity refused again", func(v verifyRun) bool { return v.code == 0 })

	// Break 3: the etcd proxy stops: only its row fails, as connection refused.
	if mode == metricsv1alpha1.ExposureProxy {
		for _, p := range procs {
			if p.Name == "kube-rbac-proxy-etcd" {
				p.Stop()
			}
		}
		v = until("the etcd row failing", func(v verifyRun) bool { return v.code == cli.ExitInvalid })
		for _, r := range v.results {
			if (r.Target.Component == "etcd") == r.Pass() {
				t.Errorf("%s: pass=%t %v", r.Target, r.Pass(), r.Problems)
			}
		}
		t.Logf("with the etcd proxy stopped: %s: %s", v.row("etcd").Target, v.row("etcd").Problems)
		if r := v.row("etcd"); !strings.Contains(strings.Join(r.Problems, ";"), "connection refused") {
			t.Errorf("the etcd row should say connection refused: %v", r.Problems)
		}
	}
}
