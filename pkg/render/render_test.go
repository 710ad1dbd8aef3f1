package render_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/eksa-metrics/eksa-metrics/internal/testutil"
	"github.com/eksa-metrics/eksa-metrics/pkg/output"
	"github.com/eksa-metrics/eksa-metrics/pkg/render"
	"github.com/eksa-metrics/eksa-metrics/pkg/spec"
)

var modes = []string{"proxy", "bindaddress"}

var firstName = regexp.MustCompile(`(?m)^metadata:\n(?:  .*\n)*?  name: "?([^"\n]+)"?$`)

// fixtureWithMetrics returns a shared EKS-A spec with one of our metrics
// sections appended as a MetricsConfig document.
func fixtureWithMetrics(t testing.TB, specPath, mode string) []byte {
	t.Helper()
	raw, err := os.ReadFile(specPath)
	if err != nil {
		t.Fatal(err)
	}
	m := firstName.FindSubmatch(raw)
	if m == nil {
		t.Fatalf("%s: no Cluster name found", specPath)
	}
	metrics, err := os.ReadFile(filepath.Join("testdata", "metrics-"+mode+".yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasSuffix(raw, []byte("\n")) {
		raw = append(raw, '\n')
	}
	return append(raw, bytes.ReplaceAll(metrics, []byte("CLUSTER"), m[1])...)
}

func renderBytes(t *testing.T, name string, data []byte, opts spec.Options) *render.Result {
	t.Helper()
	f, err := spec.Load(name, bytes.NewReader(data))
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	r, err := render.RenderFile(f, opts)
	if err != nil {
		t.Fatalf("render: %v", err)
	}
	return r
}

func fixtureSpecs(t testing.TB) []string {
	dir := testutil.SharedFixtures(t)
	specs, _ := filepath.Glob(filepath.Join(dir, "specs", "*.yaml"))
	if len(specs) < 6 {
		t.Fatalf("expected the 6 shared fixture specs, found %d", len(specs))
	}
	return specs
}

// Every shared EKS-A spec renders in both exposure modes; the output is pinned.
func TestGoldenFixtures(t *testing.T) {
	for _, sp := range fixtureSpecs(t) {
		base := strings.TrimSuffix(filepath.Base(sp), ".yaml")
		for _, mode := range modes {
			t.Run(base+"/"+mode, func(t *testing.T) {
				r := renderBytes(t, base+".yaml", fixtureWithMetrics(t, sp, mode), spec.Options{})
				var buf bytes.Buffer
				if err := output.WriteYAML(&buf, r); err != nil {
					t.Fatal(err)
				}
				testutil.Golden(t, filepath.Join("testdata", "golden", base+"."+mode+".yaml"), buf.Bytes())
				testutil.Golden(t, filepath.Join("testdata", "golden", base+"."+mode+".plan.md"), []byte(r.PlanMarkdown()))
			})
		}
	}
}

// The specs exactly as upstream EKS-A tests use them run Kubernetes 1.19 and
// 1.21: refused, with the line of kubernetesVersion.
func TestUpstreamFixturesAreRefusedForTheirVersion(t *testing.T) {
	dir := testutil.SharedFixtures(t)
	specs, _ := filepath.Glob(filepath.Join(dir, "specs", "upstream", "*.yaml"))
	if len(specs) == 0 {
		t.Fatal("no upstream fixture specs")
	}
	for _, sp := range specs {
		t.Run(filepath.Base(sp), func(t *testing.T) {
			f, err := spec.Load("cluster.yaml", bytes.NewReader(fixtureWithMetrics(t, sp, "proxy")))
			if err != nil {
				t.Fatal(err)
			}
			_, err = render.RenderFile(f, spec.Options{})
			if err == nil || !regexp.MustCompile(`cluster\.yaml:\d+: spec\.kubernetesVersion: .*supports Kubernetes 1\.28 to 1\.37`).MatchString(err.Error()) {
				t.Fatalf("want an unsupported-version error with its line, got %v", err)
			}
		})
	}
}

// cluster.yaml is the input without the metrics section, byte for byte.
func TestClusterYAMLIsTheInputWithoutMetrics(t *testing.T) {
	for _, sp := range fixtureSpecs(t) {
		raw, _ := os.ReadFile(sp)
		r := renderBytes(t, "c.yaml", fixtureWithMetrics(t, sp, "proxy"), spec.Options{})
		want := raw
		if !bytes.HasSuffix(want, []byte("\n")) {
			want = append(append([]byte{}, want...), '\n')
		}
		if !bytes.Equal(r.ClusterYAML, want) {
			t.Errorf("%s: cluster.yaml differs from the input:\n%s", filepath.Base(sp), r.ClusterYAML)
		}
	}
}

func TestClusterYAMLInlineForm(t *testing.T) {
	in := `apiVersion: anywhere.eks.amazonaws.com/v1alpha1
kind: Cluster
metadata:
  name: c1 # the name
spec:
  kubernetesVersion: "1.36"
  # the metrics section, removed with its contents
  metrics:
    scrapers:
    - kind: Group   # a comment inside
      name: g

    exposure: proxy
  # a comment that belongs to datacenterRef stays
  datacenterRef: {kind: DockerDatacenterConfig, name: c1}
---
apiVersion: anywhere.eks.amazonaws.com/v1alpha1
kind: DockerDatacenterConfig
metadata: {name: c1}
spec: {}
`
	want := strings.Replace(in, `  metrics:
    scrapers:
    - kind: Group   # a comment inside
      name: g

    exposure: proxy
`, "", 1)
	r := renderBytes(t, "c.yaml", []byte(in), spec.Options{})
	if string(r.ClusterYAML) != want {
		t.Fatalf("got:\n%s\nwant:\n%s", r.ClusterYAML, want)
	}
	// And the result is a valid EKS-A file without any metrics section.
	if _, err := spec.Load("c.yaml", bytes.NewReader(r.ClusterYAML)); err == nil || !strings.Contains(err.Error(), "no metrics section") {
		t.Fatalf("cluster.yaml still has a metrics section: %v", err)
	}
}

func TestClusterYAMLMetricsDocumentFirst(t *testing.T) {
	in := `apiVersion: metrics.anywhere.eks.amazonaws.com/v1alpha1
kind: MetricsConfig
metadata: {name: c1}
spec:
  scrapers: [{kind: Group, name: g}]
---
apiVersion: anywhere.eks.amazonaws.com/v1alpha1
kind: Cluster
metadata: {name: c1}
spec:
  kubernetesVersion: "1.36"
  datacenterRef: {kind: DockerDatacenterConfig, name: c1}
`
	r := renderBytes(t, "c.yaml", []byte(in), spec.Options{})
	want := in[strings.Index(in, "---\n")+4:]
	if string(r.ClusterYAML) != want {
		t.Fatalf("got:\n%s", r.ClusterYAML)
	}
}

// tls.certificates: cert-manager adds the Issuers and Certificates (pinned;
// namespaced, never a ClusterIssuer) to what tls.certificates: eksa-metrics
// renders, and changes nothing else: the proxies mount the same Secrets
// either way.
func TestGoldenCertManager(t *testing.T) {
	sp := filepath.Join(testutil.SharedFixtures(t), "specs", "docker.yaml")
	base := fixtureWithMetrics(t, sp, "proxy")
	own := renderBytes(t, "docker.yaml", append(slices.Clone(base), "  tls: {certificates: eksa-metrics}\n"...), spec.Options{})
	cm := renderBytes(t, "docker.yaml", append(slices.Clone(base), "  tls: {certificates: cert-manager}\n"...), spec.Options{})
	var added []string
	rest, onlyAdded := *cm, *cm
	rest.Objects, onlyAdded.Objects = nil, nil
	for _, o := range cm.Objects {
		if o.Kind() == "ClusterIssuer" {
			t.Errorf("%s: a ClusterIssuer signs a Certificate from any namespace", o)
		}
		if o.Kind() == "Certificate" || o.Kind() == "Issuer" {
			added = append(added, o.String())
			onlyAdded.Objects = append(onlyAdded.Objects, o)
		} else {
			rest.Objects = append(rest.Objects, o)
		}
	}
	if len(added) == 0 {
		t.Fatal("cert-manager renders no Certificate: the test checks nothing")
	}
	var ownYAML, restYAML, buf bytes.Buffer
	for out, r := range map[*bytes.Buffer]*render.Result{&ownYAML: own, &restYAML: &rest, &buf: &onlyAdded} {
		if err := output.WriteYAML(out, r); err != nil {
			t.Fatal(err)
		}
	}
	if ownYAML.String() != restYAML.String() {
		t.Errorf("cert-manager changes more than it adds (%s)", strings.Join(added, ", "))
	}
	testutil.Golden(t, filepath.Join("testdata", "golden", "docker.cert-manager.yaml"), buf.Bytes())
}

// A spec whose render makes an object larger than an API server stores is
// refused offline, naming the object and its size, instead of failing at
// apply after the objects before it were written.
func TestRenderRefusesAnObjectNoAPIServerStores(t *testing.T) {
	raw, err := os.ReadFile("../../examples/vsphere-management.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var labels strings.Builder
	labels.WriteString("    labels:\n")
	for i := 0; i < 20000; i++ {
		fmt.Fprintf(&labels, "      team.example.com/l%05d: %s\n", i, strings.Repeat("v", 63))
	}
	text := strings.Replace(string(raw), "  scrapeConfig:\n", "  scrapeConfig:\n"+labels.String(), 1)
	if text == string(raw) {
		t.Fatal("the example has no scrapeConfig section")
	}
	f, err := spec.Load("big.yaml", strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	_, err = render.RenderFile(f, spec.Options{})
	var ie *spec.InvalidError
	if !errors.As(err, &ie) || !strings.Contains(err.Error(), "ServiceMonitor") || !strings.Contains(err.Error(), "more than the 1572864 an API server stores") {
		t.Fatalf("want the ServiceMonitors refused by size, got %v", err)
	}
	if ie.Problems[0].File != "big.yaml" || ie.Problems[0].Line == 0 {
		t.Errorf("not located: %+v", ie.Problems[0])
	}
	// The example as it is renders (the test can fail).
	renderBytes(t, "vsphere-management.yaml", raw, spec.Options{})
}
