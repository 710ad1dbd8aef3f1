package framework

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// StartPrometheusOperator runs the real prometheus-operator on the
// control-plane node against the cluster, with the kubelet Service it
// maintains (kube-system/kubelet, EndpointSlices), after installing its CRDs.
func (c *Cluster) StartPrometheusOperator(t testing.TB) *Process {
	t.Helper()
	c.InstallCRDDir(t, "prometheus-operator-full")
	kubeconfig := c.Kubeconfig(t, "prometheus-operator", "prometheus-operator", "system:masters")
	return c.Host.Start(t, "prometheus-operator", Binary(t, "prometheus-operator"), []string{
		"--kubelet-service=kube-system/kubelet", "--kubelet-endpoints=true", "--kubelet-endpointslice=true",
		"--web.listen-address=127.0.0.1:8080", "--log-level=warn",
	}, "KUBECONFIG="+kubeconfig)
}

// certPath is a TLS asset the operator's configuration refers to.
var certPath = regexp.MustCompile(`/etc/prometheus/certs/[^\s"']+`)

var configVar = regexp.MustCompile(`\$\(([A-Z_][A-Z0-9_]*)\)`)

// OperatorConfig waits for the configuration prometheus-operator generates
// for a Prometheus object (Secret prometheus-<name>, key prometheus.yaml.gz),
// and expands the $(VAR) references its config-reloader expands from the
// pod's environment (POD_NAME). It is returned as the operator wrote it, with
// no other change.
func (c *Cluster) OperatorConfig(t testing.TB, namespace, name string, wantJobs int) string {
	t.Helper()
	var config string
	WaitFor(t, fmt.Sprintf("prometheus-operator's configuration of Prometheus %s/%s with %d ServiceMonitor jobs", namespace, name, wantJobs), 60*time.Second, func() (bool, error) {
		s, err := c.Client.CoreV1().Secrets(namespace).Get(context.Background(), "prometheus-"+name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		zr, err := gzip.NewReader(bytes.NewReader(s.Data["prometheus.yaml.gz"]))
		if err != nil {
			return false, err
		}
		raw, err := io.ReadAll(zr)
		if err != nil {
			return false, err
		}
		config = string(raw)
		n := strings.Count(config, "job_name: serviceMonitor/")
		return n >= wantJobs, fmt.Errorf("%d ServiceMonitor jobs so far", n)
	})
	env := map[string]string{"POD_NAME": "prometheus-" + name + "-0", "SHARD": "0"}
	return configVar.ReplaceAllStringFunc(config, func(m string) string {
		v, ok := env[configVar.FindStringSubmatch(m)[1]]
		if !ok {
			t.Fatalf("the operator's configuration refers to %s, which this test does not set", m)
		}
		return v
	})
}

// PrometheusMounts are the files a Prometheus pod sees besides its identity,
// by absolute path: for the prometheus-operator Prometheus named prometheus
// (if any), the TLS assets the operator collects from ServiceMonitors
// (/etc/prometheus/certs/<key>, from its Secret prometheus-<name>-tls-assets-0);
// and each ConfigMap of configMaps (a Prometheus' spec.configMaps) at
// /etc/prometheus/configmaps/<name>/<key>, from namespace, when it exists (as
// an optional ConfigMap volume: a configuration that needs a missing one
// fails to load, which the caller sees).
// The operator writes the assets apart from the configuration: with config
// (its configuration) given, it waits until every asset the configuration
// names is there.
func (c *ControlPlane) PrometheusMounts(t testing.TB, namespace, prometheus, config string, configMaps ...string) map[string]string {
	t.Helper()
	ctx := context.Background()
	out := map[string]string{}
	if prometheus != "" {
		WaitFor(t, "prometheus-operator's TLS assets of Prometheus "+namespace+"/"+prometheus, 60*time.Second, func() (bool, error) {
			s, err := c.Client.CoreV1().Secrets(namespace).Get(ctx, "prometheus-"+prometheus+"-tls-assets-0", metav1.GetOptions{})
			if err == nil {
				for k, v := range s.Data {
					out["/etc/prometheus/certs/"+k] = string(v)
				}
			}
			for _, path := range certPath.FindAllString(config, -1) {
				if _, ok := out[path]; !ok {
					return false, fmt.Errorf("%s not in the assets yet (%v)", path, err)
				}
			}
			return true, nil
		})
	}
	for _, name := range configMaps {
		cm, err := c.Client.CoreV1().ConfigMaps(namespace).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			t.Fatalf("ConfigMap %s/%s for Prometheus: %v", namespace, name, err)
		}
		for k, v := range cm.Data {
			out["/etc/prometheus/configmaps/"+name+"/"+k] = v
		}
	}
	return out
}

// Prometheus is a real Prometheus server running on a node as a pod would.
type Prometheus struct {
	URL  string
	Proc *Process
	Dir  string
}

// PodIdentity is what a pod's ServiceAccount gives its containers.
func (c *ControlPlane) PodIdentity(t testing.TB, namespace, serviceAccount string) map[string]string {
	t.Helper()
	dir := t.TempDir()
	token, ca := filepath.Join(dir, "token"), filepath.Join(dir, "ca.crt")
	writeFile(t, token, c.Token(t, namespace, serviceAccount))
	raw, err := os.ReadFile(c.PKI.CACert)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, ca, string(raw))
	writeFile(t, filepath.Join(dir, "namespace"), namespace)
	return map[string]string{saDir + "/token": token, saDir + "/ca.crt": ca, saDir + "/namespace": filepath.Join(dir, "namespace")}
}

func writeFile(t testing.TB, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// StartPrometheus runs Prometheus on a node with a configuration, as the
// ServiceAccount namespace/serviceAccount, the way it runs in a pod: its
// token and CA at the in-cluster paths, KUBERNETES_SERVICE_HOST/PORT set
// (so kubernetes_sd_configs reach the API server in-cluster). extra files
// (relative to the configuration's directory) sit next to it, as
// scrape_config_files would; those with an absolute path are mounted there
// (PrometheusMounts).
func (c *Cluster) StartPrometheus(t testing.TB, node *Node, port int, namespace, serviceAccount, config string, extra map[string]string, args ...string) *Prometheus {
	t.Helper()
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "prometheus.yml"), config)
	addr := fmt.Sprintf("%s:%d", node.Host.IP, port)
	p := &Prometheus{URL: "http://" + addr, Dir: dir}
	p.Proc = c.StartAgent(t, node, "prometheus", namespace, serviceAccount, dir, extra, append([]string{
		"--config.file=" + filepath.Join(dir, "prometheus.yml"),
		"--storage.tsdb.path=" + filepath.Join(dir, "data"),
		"--web.listen-address=" + addr,
		"--log.level=warn",
	}, args...)...)
	p.WaitReady(t)
	return p
}

// StartPrometheusInPod is StartPrometheus for a control plane on the test's
// own loopback (no node): Prometheus listens on 127.0.0.1, as a pod of
// namespace/serviceAccount (StartInPod), and finds this API server through
// its in-cluster environment.
func (c *ControlPlane) StartPrometheusInPod(t testing.TB, namespace, serviceAccount, config string, extra map[string]string) *Prometheus {
	t.Helper()
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "prometheus.yml"), config)
	files := c.agentFiles(t, namespace, serviceAccount, dir, extra)
	addr := fmt.Sprintf("127.0.0.1:%d", FreePort(t))
	p := &Prometheus{URL: "http://" + addr, Dir: dir}
	p.Proc = StartInPod(t, "prometheus", Binary(t, "prometheus"), []string{
		"--config.file=" + filepath.Join(dir, "prometheus.yml"),
		"--storage.tsdb.path=" + filepath.Join(dir, "data"),
		"--web.listen-address=" + addr,
		"--log.level=warn",
	}, files, c.InClusterEnv(t)...)
	p.WaitReady(t)
	return p
}

// WaitReady waits until Prometheus answers /-/ready.
func (p *Prometheus) WaitReady(t testing.TB) {
	t.Helper()
	WaitFor(t, "prometheus ready", 60*time.Second, func() (bool, error) {
		resp, err := http.Get(p.URL + "/-/ready")
		if err != nil {
			return false, err
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, fmt.Errorf("status %d", resp.StatusCode)
	}, p.Proc)
}

// forClause is the for: of a rule in a rendered rule file.
var forClause = regexp.MustCompile(`(?m)^(\s+)for: \S+$`)

// ShortFor sets every for: of a rendered rule file to d, so that a break
// fires in a test within a minute (promtool tests the real durations:
// TestAlertsWithPromtool).
func ShortFor(rules, d string) string { return forClause.ReplaceAllString(rules, "${1}for: "+d) }

// StartRemoteWriteReceiver runs a Prometheus that scrapes nothing and
// takes remote writes on /api/v1/write: where the agents that are not a
// Prometheus server send what they scrape.
func (c *Cluster) StartRemoteWriteReceiver(t testing.TB, node *Node, port int) *Prometheus {
	t.Helper()
	c.ServiceAccount(t, "default", "default")
	return c.StartPrometheus(t, node, port, "default", "default", "global: {}\n", nil, "--web.enable-remote-write-receiver")
}

// StartAgent runs a scraping agent (binary bin of the test bed) on a node as
// a pod of the ServiceAccount namespace/serviceAccount would run it: its
// token and CA at the in-cluster paths, KUBERNETES_SERVICE_HOST/PORT set.
// Files of extra with an absolute path are mounted there (a ConfigMap
// volume); the others are written into dir.
func (c *Cluster) StartAgent(t testing.TB, node *Node, bin, namespace, serviceAccount, dir string, extra map[string]string, args ...string) *Process {
	t.Helper()
	files := c.agentFiles(t, namespace, serviceAccount, dir, extra)
	return node.Host.StartInPod(t, bin+"@"+node.Name, Binary(t, bin), args, files, "KUBERNETES_SERVICE_HOST="+c.Host.IP, "KUBERNETES_SERVICE_PORT=6443")
}

// agentFiles are the files of an agent's pod: its ServiceAccount's, and
// extra, those with an absolute path mounted there (a ConfigMap volume),
// the others written into dir.
func (c *ControlPlane) agentFiles(t testing.TB, namespace, serviceAccount, dir string, extra map[string]string) map[string]string {
	t.Helper()
	files := c.PodIdentity(t, namespace, serviceAccount)
	for name, content := range extra {
		if filepath.IsAbs(name) {
			files[name] = filepath.Join(dir, "mounts", strings.ReplaceAll(strings.TrimPrefix(name, "/"), "/", "_"))
			_ = os.MkdirAll(filepath.Dir(files[name]), 0o755)
			writeFile(t, files[name], content)
			continue
		}
		writeFile(t, filepath.Join(dir, name), content)
	}
	return files
}

// Target is one active target, as Prometheus's /api/v1/targets reports it.
type Target struct {
	Labels     map[string]string `json:"labels"`
	ScrapePool string            `json:"scrapePool"`
	ScrapeURL  string            `json:"scrapeUrl"`
	Health     string            `json:"health"`
	LastError  string            `json:"lastError"`
}

// Targets lists the active targets.
func (p *Prometheus) Targets(t testing.TB) []Target {
	t.Helper()
	var doc struct {
		Data struct {
			ActiveTargets []Target `json:"activeTargets"`
		} `json:"data"`
	}
	p.get(t, "/api/v1/targets?state=active", &doc)
	return doc.Data.ActiveTargets
}

// Query runs an instant query and returns the result vector's samples.
func (p *Prometheus) Query(t testing.TB, expr string) []map[string]string {
	t.Helper()
	var doc struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			Result []struct {
				Metric map[string]string `json:"metric"`
			} `json:"result"`
		} `json:"data"`
	}
	p.get(t, "/api/v1/query?query="+url.QueryEscape(expr), &doc)
	if doc.Status != "success" {
		t.Fatalf("query %s: %s", expr, doc.Error)
	}
	var out []map[string]string
	for _, r := range doc.Data.Result {
		out = append(out, r.Metric)
	}
	return out
}

// Alert is one pending or firing alert, as /api/v1/alerts reports it.
type Alert struct {
	Labels map[string]string `json:"labels"`
	State  string            `json:"state"`
}

// Alerts lists the pending and firing alerts of the rules Prometheus loaded.
func (p *Prometheus) Alerts(t testing.TB) []Alert {
	t.Helper()
	var doc struct {
		Data struct {
			Alerts []Alert `json:"alerts"`
		} `json:"data"`
	}
	p.get(t, "/api/v1/alerts", &doc)
	return doc.Data.Alerts
}

// WaitQuery runs an instant query until cond holds for its result (Prometheus
// state is eventually consistent: staleness markers, rule evaluation and
// scrapes land on their own schedule), and returns the last result.
func (p *Prometheus) WaitQuery(t testing.TB, what string, timeout time.Duration, expr string, cond func([]map[string]string) bool) []map[string]string {
	t.Helper()
	var res []map[string]string
	WaitFor(t, what+" ("+expr+")", timeout, func() (bool, error) {
		res = p.Query(t, expr)
		return cond(res), fmt.Errorf("result %v", res)
	})
	return res
}

func (p *Prometheus) get(t testing.TB, path string, into any) {
	t.Helper()
	resp, err := http.Get(p.URL + path)
	if err != nil {
		t.Fatalf("prometheus %s: %v", path, err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(into); err != nil {
		t.Fatalf("prometheus %s: %v", path, err)
	}
}

// WaitTargets waits until Prometheus has want active targets and cond holds
// for their list, and returns the last list.
func (p *Prometheus) WaitTargets(t testing.TB, what string, timeout time.Duration, cond func([]Target) error) []Target {
	t.Helper()
	var ts []Target
	var last error
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		ts = p.Targets(t)
		if last = cond(ts); last == nil {
			return ts
		}
		time.Sleep(time.Second)
	}
	var b strings.Builder
	for _, tg := range ts {
		fmt.Fprintf(&b, "\n  %s %s %s %v %s", tg.Health, tg.ScrapePool, tg.ScrapeURL, tg.Labels, tg.LastError)
	}
	t.Fatalf("timed out after %s waiting for %s: %v; targets:%s", timeout, what, last, b.String())
	return nil
}
