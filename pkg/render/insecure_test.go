package render_test

import (
	"bytes"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/eksa-metrics/eksa-metrics/internal/testutil"
	"github.com/eksa-metrics/eksa-metrics/pkg/components"
	"github.com/eksa-metrics/eksa-metrics/pkg/render"
	"github.com/eksa-metrics/eksa-metrics/pkg/spec"
	"github.com/eksa-metrics/eksa-metrics/pkg/templates"
)

// skipCount is how many scrape endpoints of one component skip certificate
// verification, as ServiceMonitor endpoints and as plain scrape jobs.
type skipCount struct{ monitors, monitorsVerified, jobs, jobsVerified int }

// TestGoldenInsecureSkipVerifyCount counts, per component, the scrapes that skip
// certificate verification in everything rendered for the examples and the
// shared EKS-A specs (both exposure modes), and pins the table: a change in
// it is a change in what Prometheus trusts. Every skip must carry its reason
// (the annotation on a ServiceMonitor, the comment in the file), and the API
// server is always verified.
func TestGoldenInsecureSkipVerifyCount(t *testing.T) {
	inputs := skipInputs(t)
	if len(inputs) < 3+2*6 {
		t.Fatalf("only %d inputs", len(inputs))
	}
	counts := map[string]*skipCount{}
	at := func(comp string) *skipCount {
		if counts[comp] == nil {
			counts[comp] = &skipCount{}
		}
		return counts[comp]
	}
	for _, name := range sortedKeys(inputs) {
		tally(t, name, renderBytes(t, "cluster.yaml", inputs[name], spec.Options{}), at)
	}
	b := table(counts, fmt.Sprintf("# Scrapes with insecureSkipVerify in everything rendered for %d inputs\n# (the examples, and the shared EKS-A specs in both exposure modes):\n# ServiceMonitor endpoints and plain scrape jobs, skipping / verifying.\n", len(inputs)))
	t.Log("\n" + b.String())
	testutil.Golden(t, filepath.Join("testdata", "insecure-skip-verify.txt"), []byte(b.String()))
}

// TestGoldenKubeletServingCertificatesVerifyAll: the same inputs with
// tls.kubeletServingCertificates on. Where the cluster's node groups can
// take serverTLSBootstrap, the only scrapes left skipping verification are
// kube-controller-manager's and kube-scheduler's in bindAddress mode (their
// own self-signed certificates; docs/components.md); where they cannot, the
// option is refused with the reason, which the table pins.
func TestGoldenKubeletServingCertificatesVerifyAll(t *testing.T) {
	inputs := skipInputs(t)
	counts := map[string]*skipCount{}
	at := func(comp string) *skipCount {
		if counts[comp] == nil {
			counts[comp] = &skipCount{}
		}
		return counts[comp]
	}
	var refused strings.Builder
	for _, name := range sortedKeys(inputs) {
		f, err := spec.Load("cluster.yaml", bytes.NewReader(inputs[name]))
		if err != nil {
			t.Fatal(err)
		}
		f.Metrics.TLS.KubeletServingCertificates = ptr.To(true)
		f.Metrics.Images.EKSAMetrics = "registry.example.com/eksa-metrics:v0.0.0-test"
		r, err := render.RenderFile(f, spec.Options{})
		if err != nil {
			fmt.Fprintf(&refused, "# refused: %s: %s\n", name, err)
			continue
		}
		if !strings.Contains(string(r.ClusterYAML), "serverTLSBootstrap: true") {
			t.Errorf("%s: cluster.yaml has no serverTLSBootstrap", name)
		}
		c := map[string]*skipCount{}
		tally(t, name, r, func(comp string) *skipCount {
			if c[comp] == nil {
				c[comp] = &skipCount{}
			}
			return c[comp]
		})
		for comp, n := range c {
			if (n.monitors > 0 || n.jobs > 0) && (r.Config.Exposure != "bindAddress" || comp != "kube-controller-manager" && comp != "kube-scheduler") {
				t.Errorf("%s: %s still skips verification (%d monitors, %d jobs)", name, comp, n.monitors, n.jobs)
			}
			*at(comp) = skipCount{at(comp).monitors + n.monitors, at(comp).monitorsVerified + n.monitorsVerified, at(comp).jobs + n.jobs, at(comp).jobsVerified + n.jobsVerified}
		}
	}
	b := table(counts, "# Scrapes with insecureSkipVerify with tls.kubeletServingCertificates: true, for\n# the inputs of insecure-skip-verify.txt where the option is accepted;\n# ServiceMonitor endpoints and plain scrape jobs, skipping / verifying.\n")
	b.WriteString(refused.String())
	t.Log("\n" + b.String())
	testutil.Golden(t, filepath.Join("testdata", "insecure-skip-verify-kubelet-serving.txt"), []byte(b.String()))
}

// skipInputs are the examples and the shared EKS-A specs in both exposure
// modes.
func skipInputs(t *testing.T) map[string][]byte {
	inputs := map[string][]byte{}
	examples, _ := filepath.Glob(filepath.Join(testutil.RepoRoot(), "examples", "*.yaml"))
	for _, e := range examples {
		b, err := os.ReadFile(e)
		if err != nil {
			t.Fatal(err)
		}
		inputs["examples/"+filepath.Base(e)] = b
	}
	for _, sp := range fixtureSpecs(t) {
		for _, mode := range modes {
			inputs["fixtures/"+filepath.Base(sp)+"/"+mode] = fixtureWithMetrics(t, sp, mode)
		}
	}
	return inputs
}

// tally counts one render's scrape endpoints that skip and that verify
// certificates, per component, and checks that every skip says why.
func tally(t *testing.T, name string, r *render.Result, at func(string) *skipCount) {
	t.Helper()
	for _, o := range r.Objects {
		if o.Kind() != "ServiceMonitor" {
			continue
		}
		md := o.Object["metadata"].(map[string]any)
		comp := md["labels"].(map[string]any)[templates.ComponentLabel].(string)
		spec := o.Object["spec"].(map[string]any)
		skipped := false
		for _, ep := range spec["endpoints"].([]any) {
			tls, _ := ep.(map[string]any)["tlsConfig"].(map[string]any)
			if tls == nil {
				continue
			}
			if tls["insecureSkipVerify"] == true {
				at(comp).monitors++
				skipped = true
			} else {
				at(comp).monitorsVerified++
			}
		}
		ann, _ := md["annotations"].(map[string]any)
		if skipped && (ann == nil || ann[templates.InsecureSkipVerifyAnnotation] == "") {
			t.Errorf("%s: ServiceMonitor %s skips verification without saying why", name, o.Name())
		}
		if skipped && comp == "kube-apiserver" {
			t.Errorf("%s: the API server's ServiceMonitor skips verification", name)
		}
	}
	file := templates.ScrapeConfigFile(r.Config)
	var doc struct {
		ScrapeConfigs []struct {
			JobName   string `json:"job_name"`
			TLSConfig *struct {
				InsecureSkipVerify bool `json:"insecure_skip_verify"`
			} `json:"tls_config"`
		} `json:"scrape_configs"`
	}
	if err := yaml.Unmarshal([]byte(file), &doc); err != nil {
		t.Fatalf("%s: the scrape file does not parse: %v", name, err)
	}
	for _, j := range doc.ScrapeConfigs {
		if j.TLSConfig == nil {
			continue
		}
		job := strings.SplitN(strings.TrimPrefix(j.JobName, templates.Prefix+"/"), "/", 2)[0]
		comp := job // a management controller's job is its Deployment's name
		for _, row := range components.ClusterCatalog {
			if row.Job == job {
				comp = string(row.ID)
			}
		}
		if !j.TLSConfig.InsecureSkipVerify {
			at(comp).jobsVerified++
			continue
		}
		at(comp).jobs++
		if !regexp.MustCompile(`(?m)^# insecure_skip_verify: .+\n- job_name: "?` + regexp.QuoteMeta(j.JobName) + `"?\n`).MatchString(file) {
			t.Errorf("%s: job %s skips verification without a comment saying why", name, j.JobName)
		}
	}
}

// table is the counts as the golden files hold them.
func table(counts map[string]*skipCount, header string) *strings.Builder {
	var b strings.Builder
	b.WriteString(header)
	fmt.Fprintf(&b, "%-46s %14s %14s\n", "component", "monitors", "jobs")
	var total skipCount
	for _, comp := range sortedKeys(counts) {
		c := counts[comp]
		fmt.Fprintf(&b, "%-46s %6d / %-6d %6d / %d\n", comp, c.monitors, c.monitorsVerified, c.jobs, c.jobsVerified)
		total.monitors += c.monitors
		total.monitorsVerified += c.monitorsVerified
		total.jobs += c.jobs
		total.jobsVerified += c.jobsVerified
	}
	fmt.Fprintf(&b, "%-46s %6d / %-6d %6d / %d\n", "total", total.monitors, total.monitorsVerified, total.jobs, total.jobsVerified)
	return &b
}

func sortedKeys[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}
