package spec_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/eksa-metrics/eksa-metrics/internal/testutil"
	"github.com/eksa-metrics/eksa-metrics/pkg/spec"
)

func bindAddressInsecure(t *testing.T, kube, components string) spec.Issues {
	t.Helper()
	doc := "apiVersion: anywhere.eks.amazonaws.com/v1alpha1\nkind: Cluster\nmetadata: {name: c}\nspec:\n  kubernetesVersion: \"" + kube + "\"\n  eksaVersion: v0.26.1\n  datacenterRef: {kind: DockerDatacenterConfig, name: c}\n  metrics:\n    scrapers: [{kind: Group, name: g}]\n    exposure: bindAddress\n    allowInsecure: true\n" + components
	f, err := spec.Load("c.yaml", strings.NewReader(doc))
	if err != nil {
		t.Fatal(err)
	}
	in := f.Input()
	return spec.Validate(in, spec.Default(in, spec.Options{}), spec.Options{})
}

func allowInsecureWarning(t *testing.T, issues spec.Issues) string {
	t.Helper()
	for _, is := range issues.Warnings() {
		if is.Field == "spec.metrics.allowInsecure" {
			return is.Detail
		}
	}
	t.Fatalf("no warning on spec.metrics.allowInsecure: %v", issues)
	return ""
}

// The allowInsecure warning names every path kube-proxy's metrics server
// serves unauthenticated once it leaves loopback, not only its metrics.
func TestInsecureWarningNamesEveryKubeProxyPath(t *testing.T) {
	for kube, zpages := range map[string]string{"1.34": "where the ComponentStatusz and ComponentFlagz feature gates are on", "1.36": "/statusz, /flagz (every flag)"} {
		w := allowInsecureWarning(t, bindAddressInsecure(t, kube, ""))
		for _, want := range []string{"etcd's metrics (2381)", "kube-proxy's metrics server (10249)", "/metrics,", "/metrics/slis", "/healthz", "/proxyMode", "/configz", "/statusz", "/flagz", "/debug/pprof/", "/debug/flags/v", zpages, "restrict them with a host firewall"} {
			if !strings.Contains(w, want) {
				t.Errorf("%s: the warning does not name %q: %s", kube, want, w)
			}
		}
	}
	w := allowInsecureWarning(t, bindAddressInsecure(t, "1.36", "    components: {kubeProxy: {enabled: false}}\n"))
	if strings.Contains(w, "kube-proxy") || !strings.HasPrefix(w, "etcd's metrics (2381) will be served") {
		t.Errorf("kube-proxy off: %s", w)
	}
}

// installers are the calls of serveMetrics that register paths, and the
// path each registers (KubeProxyMetricsServerPaths must name it).
var installers = map[string]string{
	"healthz.InstallHandler":             "/healthz",
	"slis.SLIMetricsWithReset{}.Install": "/metrics/slis",
	"routes.Profiling{}.Install":         "/debug/pprof/",
	"routes.DebugFlags{}.Install":        "/debug/flags/v",
	"configz.InstallHandler":             "/configz",
	"flagz.Install":                      "/flagz",
	"statusz.Install":                    "/statusz",
}

// KubeProxyMetricsServerPaths is held true against kube-proxy's own source
// for every Kubernetes version of the test bed: each path serveMetrics
// registers, literally or through an installer, is named.
func TestKubeProxyMetricsServerPathsMatchUpstream(t *testing.T) {
	out, err := exec.Command("go", "env", "GOMODCACHE").Output()
	if err != nil {
		t.Skipf("go env GOMODCACHE: %v", err)
	}
	for _, v := range testutil.KubeVersions {
		file := filepath.Join(strings.TrimSpace(string(out)), "k8s.io", "kubernetes@"+v, "cmd", "kube-proxy", "app", "server.go")
		src, err := os.ReadFile(file)
		if err != nil {
			if os.Getenv("EKSA_METRICS_BIN") != "" {
				t.Fatalf("%s: %v (make testbed downloads it)", file, err)
			}
			t.Skipf("k8s.io/kubernetes %s is not in the module cache (make testbed downloads it): %v", v, err)
		}
		body := string(src)
		start := strings.Index(body, "\nfunc serveMetrics(")
		end := strings.Index(body[max(start, 0):], "\n\tfn := func(")
		if start < 0 || end < 0 {
			t.Fatalf("%s: no serveMetrics with its server closure", file)
		}
		body = body[start : start+end]
		named := spec.KubeProxyMetricsServerPaths(spec.KubeVersion{Major: 1, Minor: 36})
		literals := regexp.MustCompile(`Handle(?:Func)?\("(/[^"]*)"`).FindAllStringSubmatch(body, -1)
		if len(literals) < 2 {
			t.Fatalf("%s: found %d paths, the parse is broken", file, len(literals))
		}
		for _, m := range literals {
			if !strings.Contains(named, m[1]+",") && !strings.Contains(named, m[1]+" ") {
				t.Errorf("kube-proxy %s serves %s (%s): KubeProxyMetricsServerPaths does not name it", v, m[1], file)
			}
		}
		calls := regexp.MustCompile(`(?m)^\s*([A-Za-z.{}]+\.Install\w*)\(`).FindAllStringSubmatch(body, -1)
		seen := map[string]bool{}
		for _, m := range calls {
			path, ok := installers[m[1]]
			if !ok {
				t.Errorf("kube-proxy %s calls %s in serveMetrics (%s): name the paths it serves in KubeProxyMetricsServerPaths and here", v, m[1], file)
				continue
			}
			seen[m[1]] = true
			if !strings.Contains(named, path) {
				t.Errorf("%s serves %s: KubeProxyMetricsServerPaths does not name it", m[1], path)
			}
		}
		for call := range installers {
			if !seen[call] {
				t.Errorf("kube-proxy %s no longer calls %s in serveMetrics: update KubeProxyMetricsServerPaths", v, call)
			}
		}
	}
}
