package integration

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/eksa-metrics/eksa-metrics/config"
	"github.com/eksa-metrics/eksa-metrics/internal/testutil"
	"github.com/eksa-metrics/eksa-metrics/pkg/templates"
	"github.com/eksa-metrics/eksa-metrics/test/framework"
)

// buildBinary builds eksa-metrics from this checkout once per test run (the
// packages are already compiled for the test, so this is mostly a link).
var buildBinary = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "eksa-metrics-bin-")
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "eksa-metrics")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/eksa-metrics")
	cmd.Dir = testutil.RepoRoot()
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build: %v\n%s", err, out)
	}
	return bin, nil
})

// holdingProxy stands between the controller and a workload API server: it
// forwards every request, and once armed it holds back every write after
// the first `allow`, until released. A write held back is a controller in
// the middle of applying that cluster.
type holdingProxy struct {
	srv     *httptest.Server
	mu      sync.Mutex
	armed   bool
	allow   int
	writes  int
	release chan struct{}
	held    chan struct{} // closed at the first write held back
}

func newHoldingProxy(t testing.TB, w *framework.ControlPlane, allow int) *holdingProxy {
	t.Helper()
	target, err := url.Parse(w.URL)
	if err != nil {
		t.Fatal(err)
	}
	rt, err := rest.TransportFor(w.Admin)
	if err != nil {
		t.Fatal(err)
	}
	p := &holdingProxy{allow: allow, release: make(chan struct{}), held: make(chan struct{})}
	rp := &httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) { r.SetURL(target); r.Out.Host = target.Host },
		Transport: rt, FlushInterval: -1}
	p.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(rw http.ResponseWriter, req *http.Request) {
		if req.Method != http.MethodGet && p.hold() {
			select {
			case <-p.release:
			case <-req.Context().Done():
				return
			}
		}
		rp.ServeHTTP(rw, req)
	}))
	// The workload kubeconfig trusts the workload cluster's CA: the proxy
	// serves a certificate from it.
	cert, key := w.PKI.Serving(t, "holding-proxy", nil, []net.IP{net.ParseIP("127.0.0.1")})
	pair, err := tls.LoadX509KeyPair(cert, key)
	if err != nil {
		t.Fatal(err)
	}
	p.srv.TLS = &tls.Config{Certificates: []tls.Certificate{pair}}
	p.srv.StartTLS()
	t.Cleanup(p.srv.Close)
	return p
}

func (p *holdingProxy) hold() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.armed {
		return false
	}
	p.writes++
	if p.writes <= p.allow {
		return false
	}
	if p.writes == p.allow+1 {
		close(p.held)
	}
	return true
}

func (p *holdingProxy) arm() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.armed = true
}

func (p *holdingProxy) open() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.armed = false
	select {
	case <-p.release:
	default:
		close(p.release)
	}
}

// pointKubeconfigSecret makes a workload cluster's kubeconfig Secret name
// another server address, as a changed endpoint would.
func (f *fleet) pointKubeconfigSecret(t testing.TB, name, server string) {
	t.Helper()
	ctx := context.Background()
	s, err := f.mgmt.Client.CoreV1().Secrets("eksa-system").Get(ctx, name+"-kubeconfig", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.Load(s.Data["value"])
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cfg.Clusters {
		c.Server = server
	}
	if s.Data["value"], err = clientcmd.Write(*cfg); err != nil {
		t.Fatal(err)
	}
	if _, err := f.mgmt.Client.CoreV1().Secrets("eksa-system").Update(ctx, s, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// lease returns the holder of the controller's leader-election Lease.
func (f *fleet) lease(t testing.TB) string {
	t.Helper()
	l, err := f.mgmt.Client.CoordinationV1().Leases(config.DefaultNamespace).Get(context.Background(), "eksa-metrics-controller", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if l.Spec.HolderIdentity == nil {
		return ""
	}
	return *l.Spec.HolderIdentity
}

// The controller as it runs in its pod: the eksa-metrics binary, a process
// with its own flags and signals. Killed with SIGKILL while it is applying a
// workload cluster (its writes there held back), it leaves that cluster
// half-applied and a lease it did not release; a second process takes the
// lease over when it expires and converges: every object there, the CA the
// first one wrote kept (not replaced by a second CA), the status ready.
// Stopped with SIGTERM, the process releases the lease on its way out.
func TestControllerProcessKilledMidReconcile(t *testing.T) {
	bin, err := buildBinary()
	if err != nil {
		t.Fatal(err)
	}
	f := newFleet(t, "w1", "w2")
	proxy := newHoldingProxy(t, f.workloads["w1"], 3)
	f.pointKubeconfigSecret(t, "w1", proxy.srv.URL)
	var metricsAddr string
	run := func(name string) *framework.Process {
		metricsAddr = fmt.Sprintf("127.0.0.1:%d", framework.FreePort(t))
		return framework.Start(t, name, bin, []string{"controller", "run", "--kubeconfig", f.controllerKubeconfig,
			"--metrics-bind-address", metricsAddr, "--health-probe-bind-address", "0",
			"--leader-election-namespace", config.DefaultNamespace, "--management-cluster", "default/mgmt"})
	}

	proxy.arm()
	first := run("controller-1")
	f.metricsConfig(t, true)
	select {
	case <-proxy.held:
	case <-time.After(90 * time.Second):
		t.Fatalf("the controller never got to its fourth write in w1; w1 has %v; status %v", objects(t, f.workloads["w1"]), f.status(t))
	}
	first.Kill()
	killed := time.Now()
	partial := objects(t, f.workloads["w1"])
	ca := func() []byte {
		s, err := f.workloads["w1"].Client.CoreV1().Secrets("kube-system").Get(context.Background(), "eksa-metrics-serving-ca", metav1.GetOptions{})
		if err != nil {
			return nil
		}
		return s.Data[corev1.TLSCertKey]
	}
	caBefore := ca()
	holder := f.lease(t)
	t.Logf("killed with w1 half-applied: %v (CA written: %t); lease held by %q", partial, caBefore != nil, holder)
	if holder == "" {
		t.Fatal("the lease was released by a process killed with SIGKILL: the test did not kill it")
	}

	proxy.open()
	second := run("controller-2")
	framework.WaitFor(t, "converged after the kill", 120*time.Second, func() (bool, error) {
		w1, w2 := objects(t, f.workloads["w1"]), objects(t, f.workloads["w2"])
		if st := f.status(t); !slices.Equal(w1, w2) || st["readyClusters"] != int64(2) {
			return false, fmt.Errorf("w1 %v, w2 %v; status %v", w1, w2, st)
		}
		return true, nil
	}, second)
	t.Logf("converged %s after the kill (the lease the killed process held had to expire first)", time.Since(killed).Round(100*time.Millisecond))
	if slices.Equal(partial, objects(t, f.workloads["w1"])) {
		t.Errorf("w1 had every object when the first controller was killed: it was not killed mid-reconcile")
	}
	if caBefore != nil && string(ca()) != string(caBefore) {
		t.Error("the restarted controller replaced the CA the killed one had written: every certificate issued from it stops verifying")
	}
	if f.lease(t) == holder {
		t.Errorf("the lease is still held by the killed process %q", holder)
	}

	// Its own metrics: HTTPS, a caller allowed to get /metrics only.
	f.controllerMetrics(t, metricsAddr)

	// bindAddress changes the KubeadmControlPlane: without
	// allowControlPlaneRollout nothing of either Cluster changes and the
	// status says why; with it, the items go in and the proxies go.
	kcpGeneration := func(name string) int64 {
		k, err := f.mgmt.Dynamic.Resource(kcpGVR("v1beta2")).Namespace("eksa-system").Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return k.GetGeneration()
	}
	before := kcpGeneration("w1")
	// (kube-proxy's bindAddress edit reads kubeadm's kube-proxy ConfigMap,
	// which these workload API servers have not got.)
	noKubeProxy := map[string]any{"kubeProxy": map[string]any{"enabled": false}}
	f.metricsConfigSpec(t, map[string]any{"exposure": "bindAddress", "allowInsecure": true, "components": noKubeProxy})
	f.waitFor(t, "the rollout refused", func() error {
		for _, c := range f.clusterStates(t, "default", "fleet") {
			if !strings.Contains(fmt.Sprint(c), "RolloutNotAllowed") {
				return fmt.Errorf("%v", c)
			}
		}
		return nil
	})
	if ok, msg := f.verified(t, "w1"); ok || !strings.Contains(msg, "after a successful apply") {
		t.Errorf("Verified after a refused apply: %t, %s; want Unknown", ok, msg)
	}
	if g := kcpGeneration("w1"); g != before {
		t.Errorf("the KubeadmControlPlane changed (generation %d to %d) without allowControlPlaneRollout", before, g)
	}
	if w1 := objects(t, f.workloads["w1"]); !slices.Equal(w1, objects(t, f.workloads["w2"])) || !has(w1, "DaemonSet/"+templates.NodeDS) {
		t.Errorf("w1 changed while its rollout was refused: %v", w1)
	}
	f.metricsConfigSpec(t, map[string]any{"exposure": "bindAddress", "allowInsecure": true, "components": noKubeProxy, "allowControlPlaneRollout": true})
	f.waitFor(t, "the rollout allowed", func() error {
		if g := kcpGeneration("w1"); g == before {
			return fmt.Errorf("the KubeadmControlPlane is unchanged")
		}
		if objs := objects(t, f.workloads["w1"]); has(objs, "DaemonSet/"+templates.NodeDS) {
			return fmt.Errorf("the proxies are still there: %v", objs)
		}
		return nil
	})

	// Everything it did, it did with the RBAC of its manifests.
	for _, line := range strings.Split(second.Tail(100000), "\n") {
		if strings.Contains(line, "forbidden") {
			t.Errorf("the controller was refused by the API server: %s", line)
		}
	}

	second.Stop()
	if done, err := second.Exited(); !done || err != nil {
		t.Errorf("SIGTERM: exited %t, %v; want a clean exit", done, err)
	}
	if h := f.lease(t); h != "" {
		t.Errorf("stopped with SIGTERM, the controller left the lease held by %q: a new replica waits out the lease duration", h)
	}
}

// controllerMetrics checks the controller's own metrics endpoint: TLS, no
// token 401, a ServiceAccount without the right 403, one allowed to get
// /metrics 200 with the controller-runtime metrics.
func (f *fleet) controllerMetrics(t testing.TB, addr string) {
	t.Helper()
	ctx := context.Background()
	f.mgmt.ServiceAccount(t, "default", "controller-scraper")
	f.mgmt.ServiceAccount(t, "default", "stranger")
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "controller-metrics-reader"},
		Rules: []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}}}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "controller-metrics-reader"},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: role.Name},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: "default", Name: "controller-scraper"}}}
	if _, err := f.mgmt.Client.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.mgmt.Client.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The endpoint serves a self-signed certificate made at start.
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // the controller's self-signed metrics certificate
	get := func(token string) (int, string) {
		req, _ := http.NewRequest(http.MethodGet, "https://"+addr+"/metrics", nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := client.Do(req)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	scraper, stranger := f.mgmt.Token(t, "default", "controller-scraper"), f.mgmt.Token(t, "default", "stranger")
	framework.WaitFor(t, "the controller's metrics for its scraper", 30*time.Second, func() (bool, error) {
		code, body := get(scraper)
		return code == http.StatusOK && strings.Contains(body, "controller_runtime_reconcile_total"), fmt.Errorf("%d", code)
	})
	if code, _ := get(""); code != http.StatusUnauthorized {
		t.Errorf("no token: %d, want 401", code)
	}
	if code, _ := get(stranger); code != http.StatusForbidden {
		t.Errorf("a ServiceAccount without get /metrics: %d, want 403", code)
	}
}
