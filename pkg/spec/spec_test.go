package spec

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"

	metricsv1alpha1 "github.com/eksa-metrics/eksa-metrics/pkg/apis/metrics/v1alpha1"
)

func TestParseKubeVersion(t *testing.T) {
	for in, want := range map[string]KubeVersion{"1.34": {1, 34}, "v1.36": {1, 36}, "1.30.2": {1, 30}} {
		if got, err := ParseKubeVersion(in); err != nil || got != want {
			t.Errorf("ParseKubeVersion(%q) = %v, %v", in, got, err)
		}
	}
	for _, in := range []string{"", "1", "1.x", "latest", "1.2.3.4", "-1.3"} {
		if _, err := ParseKubeVersion(in); err == nil {
			t.Errorf("ParseKubeVersion(%q): want an error", in)
		}
	}
}

func TestZPageGates(t *testing.T) {
	for minor, want := range map[int]bool{32: false, 33: true, 34: true, 35: true, 36: false, 37: false} {
		if got := (KubeVersion{1, minor}).ZPageGatesNeeded(); got != want {
			t.Errorf("1.%d: ZPageGatesNeeded = %t, want %t", minor, got, want)
		}
	}
}

func TestEKSAVersionSelectsCAPIContract(t *testing.T) {
	for eksa, want := range map[string]string{"v0.24.6": CAPIv1beta1, "v0.25.0": CAPIv1beta2, "v0.26.1": CAPIv1beta2, "": CAPIv1beta2} {
		doc := "apiVersion: anywhere.eks.amazonaws.com/v1alpha1\nkind: Cluster\nmetadata: {name: c}\nspec:\n  kubernetesVersion: \"1.34\"\n  eksaVersion: \"" + eksa + "\"\n  datacenterRef: {kind: DockerDatacenterConfig, name: c}\n  metrics:\n    scrapers: [{kind: Group, name: g}]\n"
		f, err := Load("c.yaml", strings.NewReader(doc))
		if err != nil {
			t.Fatal(err)
		}
		if got := Default(f.Input(), Options{}).CAPIVersion; got != want {
			t.Errorf("eksaVersion %q: CAPI %s, want %s", eksa, got, want)
		}
	}
}

func TestDefaults(t *testing.T) {
	doc := `apiVersion: anywhere.eks.amazonaws.com/v1alpha1
kind: Cluster
metadata: {name: w}
spec:
  kubernetesVersion: "1.36"
  datacenterRef: {kind: VSphereDatacenterConfig, name: w}
  managementCluster: {name: mgmt}
  externalEtcdConfiguration: {count: 3}
  controlPlaneConfiguration: {machineGroupRef: {kind: VSphereMachineConfig, name: w-cp}}
  metrics:
    scrapers: [{kind: User, name: u}]
---
apiVersion: anywhere.eks.amazonaws.com/v1alpha1
kind: VSphereMachineConfig
metadata: {name: w-cp}
spec: {osFamily: Bottlerocket}
`
	f, err := Load("w.yaml", strings.NewReader(doc))
	if err != nil {
		t.Fatal(err)
	}
	c := Default(f.Input(), Options{})
	if c.Management || c.ManagementComponents || !c.ExternalEtcd || c.Etcd || !c.ExternalEtcdScrape || c.Statusz || c.Flagz ||
		c.Exposure != metricsv1alpha1.ExposureProxy || c.MonitoringNamespace != "monitoring" || c.OSFamily != OSBottlerocket || c.Provider != ProviderVSphere ||
		c.Images.KubeRBACProxy != DefaultKubeRBACProxyImage || c.TLSMinVersion != metricsv1alpha1.TLS12 {
		t.Fatalf("unexpected defaults: %+v", c)
	}
}

func TestLoadReportsLinesOfNestedFields(t *testing.T) {
	doc := "apiVersion: anywhere.eks.amazonaws.com/v1alpha1\nkind: Cluster\nmetadata: {name: c}\nspec:\n  kubernetesVersion: \"1.34\"\n  datacenterRef: {kind: DockerDatacenterConfig, name: c}\n  metrics:\n    scrapers:\n    - kind: Group\n      name: g\n      namespace: 5\n"
	_, err := Load("c.yaml", strings.NewReader(doc))
	var inv *InvalidError
	if !errors.As(err, &inv) || len(inv.Problems) != 1 || inv.Problems[0].String() != `c.yaml:11: spec.metrics.scrapers[0].namespace: Invalid value: "5": must be a string, not a number; quote it` {
		t.Fatalf("got %v", err)
	}
}

// FuzzLoad: loading never panics, and what loads also renders or is refused
// with located problems.
func FuzzLoad(f *testing.F) {
	seeds, _ := filepath.Glob("../../internal/cli/testdata/*.yaml")
	examples, _ := filepath.Glob("../../examples/*.yaml")
	fixtures, _ := filepath.Glob("../../../shared/fixtures/eksa/specs/*.yaml")
	for _, p := range append(append(seeds, examples...), fixtures...) {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := Load("fuzz.yaml", bytes.NewReader(data))
		if err != nil {
			var inv *InvalidError
			if !errors.As(err, &inv) || len(inv.Problems) == 0 {
				t.Fatalf("a load error that is not a located problem list: %v", err)
			}
			return
		}
		c := Default(file.Input(), Options{})
		if errs := Validate(file.Input(), c, Options{}).Errors(); len(errs) > 0 {
			_, err := file.Locate(errs)
			var inv *InvalidError
			if !errors.As(err, &inv) || len(inv.Problems) != len(errs) {
				t.Fatalf("validation errors that do not locate as a problem list: %v", err)
			}
			return
		}
		if _, err := file.ClusterYAML(); err != nil && !strings.Contains(err.Error(), "flow-style") {
			t.Fatalf("ClusterYAML: %v", err)
		}
	})
}

// YAML syntax errors name the line at fault; the YAML library reports some of
// them one line early.
func TestSyntaxErrorLines(t *testing.T) {
	for in, want := range map[string]int{
		"a: 1\nb: [1, 2\n":             2, // an unclosed flow sequence
		"a: 1\nb:\n  c: 1\n d: 2\n":    4, // bad indentation
		"a: 1\nb: \"x\nc: 3\n":         2, // an unclosed quote
		"a: 1\nb: @x\nc: 3\n":          2, // a reserved character
		"a: 1\n- b\nc: 3\n":            2, // a list item in a mapping
		"a:\n  b: 1\n\tc: 2\n":         3, // a tab
		"x: 1\n---\na: 1\n- b\nc: 3\n": 4, // in a later document
	} {
		_, err := Load("f.yaml", strings.NewReader(in))
		var inv *InvalidError
		if !errors.As(err, &inv) || inv.Problems[0].Line != want {
			t.Errorf("%q: %v, want line %d", in, err, want)
		}
	}
}

func TestRemoveJSONMember(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{"spec": {"a": 1, "metrics": {"x": [1, {"y": "}"}]}, "b": 2}}`, `{"spec": {"a": 1, "b": 2}}`},
		{`{"spec": {"a": 1, "metrics": {}}}`, `{"spec": {"a": 1}}`},
		{`{"spec": {"metrics": "x\"y", "a": 1}}`, `{"spec": {"a": 1}}`},
		{`{"spec": {"metrics": null}}`, `{"spec": {}}`},
		{`{"kind": "C", "spec": {"a": [1, 2], "metrics": true}}`, `{"kind": "C", "spec": {"a": [1, 2]}}`},
	} {
		got, err := removeJSONMember([]byte(tc.in), "spec", "metrics")
		if err != nil || string(got) != tc.want {
			t.Errorf("%s: %s, %v; want %s", tc.in, got, err, tc.want)
		}
	}
}

// tls.certificates chooses who issues the proxies' certificates;
// cert-manager verifies like eksa-metrics, and neither goes with the curated
// package, which cannot mount the CA bundle.
func TestCertificatesIssuer(t *testing.T) {
	load := func(metrics string) (*Config, []string) {
		t.Helper()
		doc := "apiVersion: anywhere.eks.amazonaws.com/v1alpha1\nkind: Cluster\nmetadata: {name: c}\nspec:\n  kubernetesVersion: \"1.36\"\n  datacenterRef: {kind: DockerDatacenterConfig, name: c}\n  metrics:\n    scrapers: [{kind: Group, name: g}]\n" + metrics
		f, err := Load("c.yaml", strings.NewReader(doc))
		if err != nil {
			t.Fatal(err)
		}
		c := Default(f.Input(), Options{})
		var errs []string
		for _, e := range Validate(f.Input(), c, Options{}).Errors() {
			errs = append(errs, e.String())
		}
		return c, errs
	}
	c, errs := load("    tls: {certificates: cert-manager}\n")
	if len(errs) != 0 || !c.ServingCertificates || !c.CertManager {
		t.Errorf("cert-manager: %v, serving %v, cert-manager %v", errs, c.ServingCertificates, c.CertManager)
	}
	c, errs = load("")
	if len(errs) != 0 || !c.ServingCertificates || c.CertManager {
		t.Errorf("the default: %v, serving %v, cert-manager %v", errs, c.ServingCertificates, c.CertManager)
	}
	_, errs = load("    tls: {certificates: cert-manager}\n    scrapeConfig: {stack: eks-anywhere}\n")
	if len(errs) != 1 || !strings.Contains(errs[0], "spec.metrics.tls.certificates") || !strings.Contains(errs[0], "curated prometheus package") {
		t.Errorf("cert-manager with the curated package: %v", errs)
	}
	_, errs = load("    tls: {certificates: vault}\n")
	if len(errs) != 1 || !strings.Contains(errs[0], `"eksa-metrics", "cert-manager", "none"`) {
		t.Errorf("an unknown issuer: %v", errs)
	}
}

// An unknown field or a wrong type does not hide the other problems of the
// file, and every problem comes in the order of its line, whichever
// document it is in.
func TestLoadReportsEveryProblemSortedByLine(t *testing.T) {
	doc := `apiVersion: anywhere.eks.amazonaws.com/v1alpha1
kind: Cluster
metadata: {name: c}
spec:
  kubernetesVersion: "1.36"
  eksaVersion: v0.24.6
  datacenterRef: {kind: DockerDatacenterConfig, name: c}
---
apiVersion: metrics.anywhere.eks.amazonaws.com/v1alpha1
kind: MetricsConfig
metadata: {name: c}
spec:
  tls: {minVersion: VersionTLS11}
  scrapers: 5
  exposure: everywhere
  compnents: {}
`
	_, err := Load("c.yaml", strings.NewReader(doc))
	var inv *InvalidError
	if !errors.As(err, &inv) {
		t.Fatalf("got %v", err)
	}
	var got []string
	for _, p := range inv.Problems {
		got = append(got, p.File+":"+strconv.Itoa(p.Line)+": "+p.Field)
	}
	want := []string{
		"c.yaml:5: spec.kubernetesVersion", // validation, in the Cluster
		"c.yaml:13: spec.tls.minVersion",   // validation
		"c.yaml:14: spec.scrapers",         // the type error only, not also "required"
		"c.yaml:15: spec.exposure",         // validation
		"c.yaml:16: spec.compnents",        // unknown field
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("problems:\n%s\nwant:\n%s\n(%v)", strings.Join(got, "\n"), strings.Join(want, "\n"), err)
	}
}

// Validation errors are located in line order too.
func TestLocateSortsErrorsByLine(t *testing.T) {
	doc := "apiVersion: anywhere.eks.amazonaws.com/v1alpha1\nkind: Cluster\nmetadata: {name: c}\nspec:\n  kubernetesVersion: \"1.36\"\n  datacenterRef: {kind: DockerDatacenterConfig, name: c}\n  metrics:\n    scrapers: [{kind: Group, name: g}]\n    tls: {minVersion: VersionTLS11}\n    exposure: everywhere\n"
	doc = strings.Replace(doc, `"1.36"`, `"1.99"`, 1)
	f, err := Load("c.yaml", strings.NewReader(doc))
	if err != nil {
		t.Fatal(err)
	}
	in := f.Input()
	_, err = f.Locate(Validate(in, Default(in, Options{}), Options{}).Errors())
	var inv *InvalidError
	if !errors.As(err, &inv) || len(inv.Problems) != 3 {
		t.Fatalf("got %v", err)
	}
	for i, want := range []int{5, 9, 10} {
		if inv.Problems[i].Line != want {
			t.Fatalf("problem %d on line %d, want %d:\n%v", i, inv.Problems[i].Line, want, err)
		}
	}
}

// A value not among the supported ones suggests the one it is a typo of,
// and only then.
func TestDidYouMeanEnumValues(t *testing.T) {
	sup := field.NotSupported(field.NewPath("spec", "exposure"), "proxi", []string{"proxy", "bindAddress"})
	if got := didYouMean(sup); got != `; did you mean "proxy"?` {
		t.Errorf("proxi: %q", got)
	}
	if got := didYouMean(field.NotSupported(field.NewPath("spec", "exposure"), "tunnel", []string{"proxy", "bindAddress"})); got != "" {
		t.Errorf("no close value: %q", got)
	}
	if got := didYouMean(field.Invalid(field.NewPath("spec", "exposure"), "proxi", "bad")); got != "" {
		t.Errorf("not a NotSupported error: %q", got)
	}
}

// kubernetesVersion is a minor version, as EKS Anywhere's KubernetesVersion
// constants spell it: a patch release or a "v" is refused, with the value to
// write.
func TestKubernetesVersionIsAMinorVersion(t *testing.T) {
	for kube, want := range map[string]string{
		`"1.36"`:   "",
		`"1.36.2"`: `write "1.36"`,
		`"v1.36"`:  `write "1.36"`,
		`1.3`:      "eksa-metrics supports Kubernetes",
	} {
		doc := "apiVersion: anywhere.eks.amazonaws.com/v1alpha1\nkind: Cluster\nmetadata: {name: c}\nspec:\n  kubernetesVersion: " + kube + "\n  datacenterRef: {kind: DockerDatacenterConfig, name: c}\n  metrics:\n    scrapers: [{kind: Group, name: g}]\n"
		f, err := Load("c.yaml", strings.NewReader(doc))
		if err != nil {
			t.Fatal(err)
		}
		var errs []string
		for _, e := range Validate(f.Input(), Default(f.Input(), Options{}), Options{}).Errors() {
			errs = append(errs, e.String())
		}
		got := strings.Join(errs, "\n")
		if want == "" && got != "" || want != "" && (!strings.Contains(got, "spec.kubernetesVersion") || !strings.Contains(got, want)) {
			t.Errorf("kubernetesVersion: %s: %q, want %q", kube, got, want)
		}
	}
}
