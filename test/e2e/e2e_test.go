// Package e2e starts the real components with what generate renders, on
// loopback, and scrapes them as the scraper, as an identity with no bindings
// and without credentials, for both exposure modes and two Kubernetes
// versions.
package e2e

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/eksa-metrics/eksa-metrics/internal/testutil"
	metricsv1alpha1 "github.com/eksa-metrics/eksa-metrics/pkg/apis/metrics/v1alpha1"
	"github.com/eksa-metrics/eksa-metrics/pkg/components"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/eksa-metrics/eksa-metrics/pkg/kubeadm"
	"github.com/eksa-metrics/eksa-metrics/pkg/render"
	"github.com/eksa-metrics/eksa-metrics/pkg/spec"
	"github.com/eksa-metrics/eksa-metrics/pkg/templates"
	"github.com/eksa-metrics/eksa-metrics/test/framework"
)

// NodeIP stands in for the node address: a loopback address other than
// 127.0.0.1, so that "reachable on the node IP" and "loopback only" differ.
const NodeIP = "127.0.0.2"

// Versions of the test bed (hack/testbed.sh builds both).
var versions = testutil.KubeVersions

const (
	scraperNS, scraperSA = "monitoring", "prometheus-k8s"
	scraperGroup         = "platform:metrics"
	unboundNS, unboundSA = "monitoring", "not-a-scraper"
)

func specFor(minor string, exposure metricsv1alpha1.Exposure) string {
	return e2eSpec(minor, fmt.Sprintf(`  scrapers:
  - {kind: ServiceAccount, name: %s, namespace: %s}
  - {kind: Group, name: "%s"}
  exposure: %s
  allowInsecure: %t
  zPages: {statusz: true, flagz: true}
`, scraperSA, scraperNS, scraperGroup, exposure, exposure == metricsv1alpha1.ExposureBindAddress))
}

// e2eSpec is the e2e cluster's file with a metrics section (its spec, the
// lines indented by two spaces), on EKS Anywhere v0.26.1 where that release
// ships the Kubernetes minor (the test bed's Cluster API and management
// manifests are v0.26's), else on the first release that ships it.
func e2eSpec(minor, metrics string) string {
	eksa := spec.EKSAVersion{Major: 0, Minor: 26, Patch: 1}
	if kv, err := spec.ParseKubeVersion(minor); err == nil {
		if lo, hi := eksa.KubeRange(); kv.Minor < lo || kv.Minor > hi {
			eksa = spec.FirstEKSAFor(kv.Minor)
		}
	}
	return fmt.Sprintf(`apiVersion: anywhere.eks.amazonaws.com/v1alpha1
kind: Cluster
metadata:
  name: e2e
spec:
  kubernetesVersion: "%s"
  eksaVersion: %s
  controlPlaneConfiguration:
    count: 1
    taints: [{key: dedicated, value: infra, effect: NoSchedule}]
  datacenterRef: {kind: DockerDatacenterConfig, name: e2e}
  managementCluster: {name: e2e}
---
apiVersion: anywhere.eks.amazonaws.com/v1alpha1
kind: DockerDatacenterConfig
metadata: {name: e2e}
spec: {}
---
apiVersion: metrics.anywhere.eks.amazonaws.com/v1alpha1
kind: MetricsConfig
metadata: {name: e2e}
spec:
%s`, minor, eksa, metrics)
}

// controlPlaneTaints are the e2e clusters' control-plane taints: the spec's
// controlPlaneConfiguration.taints, which replace kubeadm's default taint on
// an EKS-A cluster, so the control-plane proxies must schedule on a node
// with a taint they cannot know in advance.
var controlPlaneTaints = []string{"dedicated=infra:NoSchedule"}

// counts of what the suite checked, reported at the end.
type counts struct{ scrapes, sars int }

func TestEndToEnd(t *testing.T) {
	var total counts
	for _, v := range versions {
		for _, mode := range []metricsv1alpha1.Exposure{metricsv1alpha1.ExposureProxy, metricsv1alpha1.ExposureBindAddress} {
			t.Run(v+"/"+string(mode), func(t *testing.T) {
				c := runCluster(t, v, mode)
				total.scrapes += c.scrapes
				total.sars += c.sars
				t.Logf("%d scrape checks, %d SubjectAccessReview checks", c.scrapes, c.sars)
			})
		}
	}
	t.Logf("end-to-end total: %d scrape checks, %d SubjectAccessReview checks", total.scrapes, total.sars)
}

// onNode replaces the wildcard address a rendered flag binds to with NodeIP:
// the test listens on loopback only, never on the machine's interfaces.
func onNode(args kubeadm.Args) kubeadm.Args {
	out := make(kubeadm.Args, len(args))
	for i, a := range args {
		out[i] = kubeadm.Arg{Name: a.Name, Value: strings.ReplaceAll(a.Value, "0.0.0.0", NodeIP)}
	}
	return out
}

func runCluster(t *testing.T, version string, mode metricsv1alpha1.Exposure) counts {
	minor := minorOf(version)
	r := renderSpec(t, specFor(minor, mode))
	ch := r.Change

	cp := framework.StartControlPlane(t, framework.ControlPlaneOptions{
		Version:       version,
		EtcdArgs:      framework.Override(kubeadm.Args{{Name: "listen-metrics-urls", Value: "http://127.0.0.1:2381"}}, onNode(ch.Args(kubeadm.Etcd))),
		APIServerArgs: ch.Args(kubeadm.APIServer),
	})
	cp.InstallCRDs(t, spec.CAPIv1beta2)
	apply(t, cp, r)

	kcmKubeconfig := cp.Kubeconfig(t, "controller-manager", "system:kube-controller-manager")
	schedKubeconfig := cp.Kubeconfig(t, "scheduler", "system:kube-scheduler")
	paths := map[string]string{kubeadm.ControllerManagerKubeconfig: kcmKubeconfig, kubeadm.SchedulerKubeconfig: schedKubeconfig}
	bin := func(name string) string { return framework.Binary(t, filepath.Join("k8s", version, name)) }

	// What kubeadm writes into the static pod manifests, then the rendered extraArgs.
	kcm := framework.Start(t, "kube-controller-manager", bin("kube-controller-manager"), framework.Args(framework.Override(
		cp.KubeadmControllerManagerArgs(kcmKubeconfig), framework.NodePaths(onNode(ch.Args(kubeadm.ControllerManager)), paths))))
	sched := framework.Start(t, "kube-scheduler", bin("kube-scheduler"), framework.Args(framework.Override(
		framework.KubeadmSchedulerArgs(schedKubeconfig), framework.NodePaths(onNode(ch.Args(kubeadm.Scheduler)), paths))))

	componentHost := "127.0.0.1"
	if mode == metricsv1alpha1.ExposureBindAddress {
		componentHost = NodeIP
	}
	waitHealthy(t, fmt.Sprintf("https://%s:10257/healthz", componentHost), kcm)
	waitHealthy(t, fmt.Sprintf("https://%s:10259/healthz", componentHost), sched)

	var procs []*framework.Process
	if mode == metricsv1alpha1.ExposureProxy {
		procs = startProxies(t, cp, r)
	}

	c := scrapeAll(t, cp, r, mode, procs)
	c.sars = sarMatrix(t, cp, r)
	verifyCluster(t, cp, minor, mode, procs, version == versions[0])
	return c
}

func waitHealthy(t *testing.T, url string, p *framework.Process) {
	t.Helper()
	client := insecureClient()
	framework.WaitFor(t, url, 90*time.Second, func() (bool, error) {
		resp, err := client.Get(url)
		if err != nil {
			return false, err
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, fmt.Errorf("status %d", resp.StatusCode)
	}, p)
}

// insecureClient skips verification: the components serve self-signed
// certificates (the scrape configuration says the same).
func insecureClient() *http.Client {
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // self-signed test-bed endpoints
}

// container finds a container of a rendered DaemonSet.
func container(t *testing.T, r *render.Result, ds, name string) map[string]any {
	t.Helper()
	for _, o := range r.Objects {
		if o.Kind() != "DaemonSet" || o.Name() != ds {
			continue
		}
		spec := o.Object["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)
		for _, c := range spec["containers"].([]any) {
			if cm := c.(map[string]any); cm["name"] == name {
				return cm
			}
		}
	}
	t.Fatalf("DaemonSet %s has no container %s", ds, name)
	return nil
}

func strs(v any) []string {
	var out []string
	for _, x := range v.([]any) {
		out = append(out, x.(string))
	}
	return out
}

// startProxies runs haproxy and the kube-rbac-proxies exactly as the rendered
// DaemonSets would, with NODE_IP set to the stand-in node address.
func startProxies(t *testing.T, cp *framework.ControlPlane, r *render.Result) []*framework.Process {
	var procs []*framework.Process
	// HAProxy: the rendered command, with the rendered ConfigMap as its file.
	var cfg string
	for _, o := range r.Objects {
		if o.Kind() == "ConfigMap" && o.Name() == templates.ControlPlaneDS {
			cfg = o.Object["data"].(map[string]any)[templates.HAProxyCfgKey].(string)
		}
	}
	cfgPath := filepath.Join(t.TempDir(), templates.HAProxyCfgKey)
	if err := os.WriteFile(cfgPath, []byte(servingFiles(t, cp, cfg)), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := strs(container(t, r, templates.ControlPlaneDS, "haproxy")["command"])
	for i, a := range cmd {
		if strings.HasSuffix(a, "/"+templates.HAProxyCfgKey) {
			cmd[i] = cfgPath
		}
	}
	procs = append(procs, framework.Start(t, "haproxy", framework.LookPath(t, cmd[0]), cmd[1:], templates.NodeIPEnv+"="+NodeIP))

	// kube-rbac-proxy as the rendered ServiceAccount, with the rendered args.
	token := cp.Token(t, templates.SystemNS, templates.ProxySA)
	kubeconfig := cp.TokenKubeconfig(t, "kube-rbac-proxy", token)
	startKubeProxy(t, cp, "127.0.0.1")
	for _, ref := range []struct{ ds, container string }{
		{templates.ControlPlaneDS, "kube-rbac-proxy-etcd"},
		{templates.NodeDS, "kube-rbac-proxy-kube-proxy"},
	} {
		var args []string
		for _, a := range strs(container(t, r, ref.ds, ref.container)["args"]) {
			args = append(args, strings.ReplaceAll(a, "$("+templates.NodeIPEnv+")", NodeIP))
		}
		args = append(args, "--kubeconfig="+kubeconfig) // in a pod: the in-cluster config of the same ServiceAccount
		for i := range args {
			args[i] = servingFiles(t, cp, args[i])
		}
		procs = append(procs, framework.Start(t, ref.container, framework.Binary(t, "kube-rbac-proxy"), args))
	}
	return procs
}

// startKubeProxy runs kube-proxy's real metrics server (the hollow node's
// kube-proxy: the real server over a proxier that writes no packet-filter
// rules) with its metrics on host:10249, as kubeadm's config.conf puts it
// on 127.0.0.1 and the bindAddress edit on the node address.
func startKubeProxy(t *testing.T, cp *framework.ControlPlane, host string) {
	t.Helper()
	args := []string{"--morph=proxy", "--kubeconfig=" + cp.Kubeconfig(t, "kube-proxy", "system:kube-proxy"), "--node-name=cp-1",
		"--metrics-bind-address=" + host + ":10249"}
	p := framework.Start(t, "kube-proxy", framework.Binary(t, filepath.Join("k8s", cp.Version, "hollow-node")), args)
	framework.WaitFor(t, "kube-proxy's metrics server", 30*time.Second, func() (bool, error) {
		resp, err := http.Get("http://" + host + ":10249/healthz")
		if err != nil {
			return false, err
		}
		resp.Body.Close()
		return true, nil
	}, p)
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

type target struct {
	name   string
	base   string
	paths  []string
	zpages bool
	// statuszOnly: of the z-pages only /statusz (kube-proxy: the hollow
	// node's kube-proxy serves no /flagz, and no z-page before 1.36, whose
	// gates eksa-metrics does not set for kube-proxy).
	statuszOnly bool
	insecure    bool     // plain HTTP without authentication (bindAddress with allowInsecure)
	blocked     []string // paths the proxy must not pass (404 even for the scraper)
}

func scrapeAll(t *testing.T, cp *framework.ControlPlane, r *render.Result, mode metricsv1alpha1.Exposure, procs []*framework.Process) counts {
	node := func(port int) string { return fmt.Sprintf("https://%s:%d", NodeIP, port) }
	targets := []target{
		{name: "kube-apiserver", base: cp.URL, paths: []string{"/metrics", "/metrics/slis"}, zpages: true},
		{name: "kube-controller-manager", base: node(10257), paths: []string{"/metrics", "/metrics/slis"}, zpages: true},
		{name: "kube-scheduler", base: node(10259), paths: []string{"/metrics", "/metrics/slis", "/metrics/resources"}, zpages: true},
	}
	if mode == metricsv1alpha1.ExposureProxy {
		targets = append(targets,
			target{name: "etcd (kube-rbac-proxy)", base: node(2381), paths: []string{"/metrics"}, blocked: []string{"/health", "/debug/vars"}},
			target{name: "kube-proxy (kube-rbac-proxy)", base: node(10249), paths: []string{"/metrics", "/metrics/slis"}, zpages: cp.Minor() >= "1.36", statuszOnly: true, blocked: []string{"/configz", "/healthz"}},
		)
	} else {
		targets = append(targets, target{name: "etcd (plain HTTP, allowInsecure)", base: fmt.Sprintf("http://%s:2381", NodeIP), paths: []string{"/metrics"}, insecure: true})
	}

	scraper := cp.Token(t, scraperNS, scraperSA)
	unbound := cp.Token(t, unboundNS, unboundSA)
	var n int
	client := insecureClient()
	get := func(url, token, accept string) (int, string, http.Header) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, url, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		if accept != "" {
			req.Header.Set("Accept", accept)
		}
		var resp *http.Response
		var err error
		for i := 0; i < 50; i++ { // proxies and RBAC caches settle in a few seconds
			if resp, err = client.Do(req); err == nil {
				break
			}
			time.Sleep(200 * time.Millisecond)
		}
		if err != nil {
			t.Fatalf("GET %s: %v", url, err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		n++
		return resp.StatusCode, string(body), resp.Header
	}
	eventually := func(url, token, accept string, want int) (string, bool) {
		var code int
		var body string
		for i := 0; i < 30; i++ {
			code, body, _ = get(url, token, accept)
			if code == want {
				return body, true
			}
			time.Sleep(time.Second)
		}
		t.Errorf("GET %s: status %d, want %d: %.300s", url, code, want, body)
		return body, false
	}

	for _, tg := range targets {
		paths := tg.paths
		switch {
		case tg.zpages && tg.statuszOnly:
			paths = append(append([]string{}, paths...), "/statusz")
		case tg.zpages:
			paths = append(append([]string{}, paths...), "/statusz", "/flagz")
		}
		for _, p := range paths {
			url := tg.base + p
			// Kubernetes 1.33 and 1.34 answer a z-page request without an explicit
			// text/plain Accept header with 406.
			accept := ""
			if p == "/statusz" || p == "/flagz" {
				accept = "text/plain"
			}
			if tg.insecure {
				// Accepted by allowInsecure: anyone can read it. Pinned so that the risk stays visible.
				if _, ok := eventually(url, "", accept, http.StatusOK); !ok {
					continue
				}
				continue
			}
			body, ok := eventually(url, scraper, accept, http.StatusOK)
			if ok && strings.HasPrefix(p, "/metrics") {
				parser := expfmt.NewTextParser(model.UTF8Validation)
				families, err := parser.TextToMetricFamilies(strings.NewReader(body))
				// The scheduler's /metrics/resources is empty while no pod exists.
				if err != nil || len(families) == 0 && p != "/metrics/resources" {
					t.Errorf("%s %s: not a Prometheus exposition (%d families): %v", tg.name, p, len(families), err)
				}
			}
			if code, body, _ := get(url, unbound, accept); code != http.StatusForbidden {
				t.Errorf("%s %s: an unbound ServiceAccount got %d, want 403: %.200s", tg.name, p, code, body)
			}
			if code, _, _ := get(url, "", accept); code != http.StatusUnauthorized && code != http.StatusForbidden {
				t.Errorf("%s %s: no token got %d, want 401 or 403", tg.name, p, code)
			}
		}
		for _, p := range tg.blocked {
			if code, _, _ := get(tg.base+p, scraper, ""); code != http.StatusNotFound {
				t.Errorf("%s %s: the scraper got %d through the proxy, want 404 (not in --allow-paths)", tg.name, p, code)
			}
		}
		if tg.zpages && !strings.Contains(tg.name, "kube-proxy") {
			checkStatusz(t, get, tg, cp.Minor(), scraper)
		}
	}
	if mode == metricsv1alpha1.ExposureProxy && r.Config.ServingCertificates {
		// HAProxy's path allow-list: an identity the components serve /configz
		// and /debug/pprof/ (cluster-admin) gets them on the loopback port and
		// HAProxy's own 403 on the node address, while /metrics works there.
		admin := adminToken(t, cp)
		for _, port := range []int{10257, 10259} {
			for _, p := range []string{"/configz", "/debug/pprof/"} {
				// 200 on the loopback port, else this check proves nothing (RBAC settles in moments).
				eventually(fmt.Sprintf("https://127.0.0.1:%d%s", port, p), admin, "", http.StatusOK)
				if code, body, _ := get(node(port)+p, admin, ""); code != http.StatusForbidden || !strings.Contains(body, "Request forbidden by administrative rules") {
					t.Errorf("%s%s: cluster-admin got %d through HAProxy, want HAProxy's 403: %.200s", node(port), p, code, body)
				}
			}
			if code, _, _ := get(node(port)+"/metrics", admin, ""); code != http.StatusOK {
				t.Errorf("%s/metrics: cluster-admin got %d through HAProxy", node(port), code)
			}
		}
		// Our proxies are scraped with verification on, as the rendered
		// tlsConfig says: eksa-metrics' CA and the certificate's one name.
		pool := servingCA(t, cp)
		for id, port := range map[components.ID]int{components.Etcd: 2381, components.KubeProxy: 10249, components.KubeControllerManager: 10257, components.KubeScheduler: 10259} {
			if err := verifiedScrape(t, pool, id, node(port)+"/metrics", scraper); err != nil {
				t.Errorf("%s proxy, verifying its certificate: %v", id, err)
			}
			n++
		}
	}
	return counts{scrapes: n}
}

// adminToken is a token of a ServiceAccount bound to cluster-admin.
func adminToken(t *testing.T, cp *framework.ControlPlane) string {
	t.Helper()
	tok := cp.Token(t, "kube-system", "e2e-admin")
	crb := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "e2e-admin"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "e2e-admin", Namespace: "kube-system"}}}
	if _, err := cp.Client.RbacV1().ClusterRoleBindings().Create(context.Background(), crb, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	return tok
}

// checkStatusz reads /statusz in the structured form where the version
// serves one (the release table: config.k8s.io/v1beta1 from 1.36); 1.34 has
// only the text form.
func checkStatusz(t *testing.T, get func(url, token, accept string) (int, string, http.Header), tg target, minor, token string) {
	t.Helper()
	url := tg.base + "/statusz"
	form := kubeRelease(t, minor).Statusz
	if form == "" {
		if code, body, _ := get(url, token, "text/plain"); code != http.StatusOK || len(body) < 20 {
			t.Errorf("%s /statusz (text): %d %.200q", tg.name, code, body)
		}
		return
	}
	code, body, hdr := get(url, token, "application/json;as=Statusz;v="+form+";g=config.k8s.io")
	var st struct {
		APIVersion    string `json:"apiVersion"`
		Kind          string `json:"kind"`
		BinaryVersion string `json:"binaryVersion"`
		UptimeSeconds int64  `json:"uptimeSeconds"`
	}
	if code != http.StatusOK || !strings.HasPrefix(hdr.Get("Content-Type"), "application/json") {
		t.Errorf("%s /statusz (structured): %d %s %.200q", tg.name, code, hdr.Get("Content-Type"), body)
		return
	}
	if err := json.Unmarshal([]byte(body), &st); err != nil || st.Kind != "Statusz" || st.APIVersion != "config.k8s.io/"+form || st.BinaryVersion == "" {
		t.Errorf("%s /statusz: not a config.k8s.io/%s Statusz (%v): %.300s", tg.name, form, err, body)
	}
}
