package render_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/eksa-metrics/eksa-metrics/pkg/render"
	"github.com/eksa-metrics/eksa-metrics/pkg/spec"
)

// cluster is a vSphere management cluster file with a MetricsConfig; cp
// goes under controlPlaneConfiguration, metrics under the MetricsConfig's spec.
func cluster(kube, cp, metrics string) string {
	return `apiVersion: anywhere.eks.amazonaws.com/v1alpha1
kind: Cluster
metadata:
  name: c1
spec:
  kubernetesVersion: "` + kube + `"
  eksaVersion: v0.26.1
  datacenterRef: {kind: VSphereDatacenterConfig, name: c1}
  controlPlaneConfiguration:
    count: 1
` + cp + `---
apiVersion: metrics.anywhere.eks.amazonaws.com/v1alpha1
kind: MetricsConfig
metadata:
  name: c1
spec:
  scrapers: [{kind: Group, name: g}]
` + metrics
}

func warnings(r *render.Result) string {
	var out []string
	for _, w := range r.Warnings {
		out = append(out, w.String())
	}
	return strings.Join(out, "\n")
}

// A user's apiServerExtraArgs feature-gates (line 12) is merged with the
// z-page gates into the one item EKS-A renders: nothing rendered for the
// API server, a warning at that line with the merged value, and PLAN.md
// saying where the value goes.
func TestUserFeatureGatesWarnAtTheirLine(t *testing.T) {
	in := cluster("1.34", "    apiServerExtraArgs:\n      feature-gates: MyGate=true\n", "  zPages: {statusz: true}\n")
	r := renderBytes(t, "c.yaml", []byte(in), spec.Options{})
	cc := r.Change.Object()["spec"].(map[string]any)["kubeadmConfigSpec"].(map[string]any)["clusterConfiguration"].(map[string]any)
	if cc["apiServer"] != nil || cc["controllerManager"] == nil {
		t.Fatalf("want the gates of the controller manager and none for the API server: %v", cc)
	}
	want := `c.yaml:12: spec.controlPlaneConfiguration.apiServerExtraArgs[feature-gates]: EKS Anywhere renders this --feature-gates item for the apiServer`
	if w := warnings(r); !strings.Contains(w, want) || !strings.Contains(w, `set this value to "ComponentStatusz=true,MyGate=true"`) {
		t.Fatalf("warnings lack %q with the merged value:\n%s", want, w)
	}
	if plan := r.PlanMarkdown(); !strings.Contains(plan, "Set `apiServerExtraArgs.feature-gates` to this value") {
		t.Fatalf("PLAN.md does not say where the merged value goes:\n%s", plan)
	}
	// With the merged value in the Cluster: no apiServer item, no warning.
	in = cluster("1.34", "    apiServerExtraArgs:\n      feature-gates: ComponentStatusz=true,MyGate=true\n", "  zPages: {statusz: true}\n")
	r = renderBytes(t, "c.yaml", []byte(in), spec.Options{})
	if len(r.Change.Args("apiServer")) != 0 || strings.Contains(warnings(r), "apiServerExtraArgs") {
		t.Fatalf("gates already set, yet %v\n%s", r.Change.Args("apiServer"), warnings(r))
	}
}

// Inputs that do nothing are warned about, at their line.
func TestWarningsForInputsThatDoNothing(t *testing.T) {
	for name, tc := range map[string]struct{ metrics, want string }{
		"exclude naming no Deployment": {"  managementComponents:\n    exclude: [capi-system/capi-controler-manager]\n",
			`c.yaml:19: spec.managementComponents.exclude[0]: "capi-system/capi-controler-manager" names no Deployment of the management catalog`},
		"exclude of another provider": {"  managementComponents:\n    exclude: [capt-system/capt-controller-manager]\n",
			`c.yaml:19: spec.managementComponents.exclude[0]: excludes nothing: capt-system/capt-controller-manager runs only with provider tinkerbell`},
		"allowInsecure in proxy mode": {"  allowInsecure: true\n",
			`c.yaml:18: spec.allowInsecure: does nothing with exposure: proxy`},
		"allowInsecure without plain-HTTP endpoints": {"  exposure: bindAddress\n  allowInsecure: true\n  components: {etcd: {enabled: false}, kubeProxy: {enabled: false}}\n",
			`c.yaml:19: spec.allowInsecure: does nothing: stacked etcd and kube-proxy`},
		"no scrape configuration": {"  scrapeConfig: {serviceMonitors: false, prometheus: false}\n",
			`c.yaml:18: spec.scrapeConfig: renders no scrape configuration (scrapeConfig.serviceMonitors and scrapeConfig.prometheus are both false)`},
	} {
		t.Run(name, func(t *testing.T) {
			r := renderBytes(t, "c.yaml", []byte(cluster("1.36", "", tc.metrics)), spec.Options{})
			if w := warnings(r); !strings.Contains(w, tc.want) {
				t.Fatalf("warnings lack %q:\n%s", tc.want, w)
			}
		})
	}
	// And a plain spec says none of these.
	r := renderBytes(t, "c.yaml", []byte(cluster("1.36", "", "  managementComponents:\n    exclude: [capi-system/capi-controller-manager]\n")), spec.Options{})
	for _, not := range []string{"exclude", "allowInsecure", "scrapeConfig"} {
		if w := warnings(r); strings.Contains(w, "spec."+not) {
			t.Errorf("unexpected %s warning:\n%s", not, w)
		}
	}
}

// bindAddress names only the secure-port components it opens.
func TestBindAddressWarningNamesEnabledComponents(t *testing.T) {
	r := renderBytes(t, "c.yaml", []byte(cluster("1.36", "", "  exposure: bindAddress\n  allowInsecure: true\n  components: {kubeScheduler: {enabled: false}}\n")), spec.Options{})
	w := warnings(r)
	if !strings.Contains(w, "bind-address=0.0.0.0 on kube-controller-manager (a CIS 1.3.7 deviation)") || strings.Contains(w, "kube-scheduler (a CIS") {
		t.Fatalf("bindAddress warning names a disabled component:\n%s", w)
	}
}

// kubernetesVersion must be one the eksaVersion release ships; CloudStack
// is gone from v0.26.
func TestVersionCombinations(t *testing.T) {
	load := func(doc string) error {
		f, err := spec.Load("c.yaml", strings.NewReader(doc))
		if err != nil {
			return err
		}
		_, err = render.RenderFile(f, spec.Options{})
		return err
	}
	for _, tc := range []struct{ kube, eksa, dc, want string }{
		{"1.36", "v0.24.6", "VSphereDatacenterConfig", `c.yaml:6: spec.kubernetesVersion: Invalid value: "1.36": EKS Anywhere v0.24.6 (spec.eksaVersion) supports Kubernetes 1.28 to 1.34: set kubernetesVersion to 1.34 or lower, or eksaVersion to v0.26.0 or later, the first release with Kubernetes 1.36`},
		{"1.35", "v0.24.6", "VSphereDatacenterConfig", `c.yaml:6: spec.kubernetesVersion: Invalid value: "1.35": EKS Anywhere v0.24.6 (spec.eksaVersion) supports Kubernetes 1.28 to 1.34: set kubernetesVersion to 1.34 or lower, or eksaVersion to v0.25.0 or later`},
		{"1.36", "v0.25.2", "VSphereDatacenterConfig", `supports Kubernetes 1.29 to 1.35`},
		{"1.29", "v0.26.1", "VSphereDatacenterConfig", `c.yaml:6: spec.kubernetesVersion: Invalid value: "1.29": EKS Anywhere v0.26.1 (spec.eksaVersion) supports Kubernetes 1.30 to 1.36: upgrade the Cluster to 1.30 or later`},
		{"1.33", "v0.22.3", "VSphereDatacenterConfig", `supports Kubernetes 1.28 to 1.32`},
		{"1.34", "v0.26.1", "CloudStackDatacenterConfig", `c.yaml:7: spec.eksaVersion: Invalid value: "v0.26.1": CloudStack (datacenterRef.kind CloudStackDatacenterConfig) was removed from EKS Anywhere in v0.26.0`},
	} {
		doc := strings.NewReplacer(`"1.36"`, `"`+tc.kube+`"`, "v0.26.1", tc.eksa, "VSphereDatacenterConfig", tc.dc).Replace(cluster("1.36", "", ""))
		err := load(doc)
		var inv *spec.InvalidError
		if !errors.As(err, &inv) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s on %s (%s): got %v, want %q", tc.kube, tc.eksa, tc.dc, err, tc.want)
		}
	}
	for _, tc := range []struct{ kube, eksa, dc string }{
		{"1.34", "v0.24.6", "VSphereDatacenterConfig"}, {"1.35", "v0.25.0", "VSphereDatacenterConfig"}, {"1.36", "v0.26.1", "VSphereDatacenterConfig"},
		{"1.30", "v0.20.7", "VSphereDatacenterConfig"}, {"1.37", "v0.27.0", "VSphereDatacenterConfig"}, {"1.34", "v0.25.1", "CloudStackDatacenterConfig"},
	} {
		doc := strings.NewReplacer(`"1.36"`, `"`+tc.kube+`"`, "v0.26.1", tc.eksa, "VSphereDatacenterConfig", tc.dc).Replace(cluster("1.36", "", ""))
		if err := load(doc); err != nil {
			t.Errorf("%s on %s (%s): %v", tc.kube, tc.eksa, tc.dc, err)
		}
	}
}
