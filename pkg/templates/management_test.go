package templates_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	metricsv1alpha1 "github.com/eksa-metrics/eksa-metrics/pkg/apis/metrics/v1alpha1"

	"go.yaml.in/yaml/v3"
	appsv1 "k8s.io/api/apps/v1"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/eksa-metrics/eksa-metrics/internal/testutil"
	"github.com/eksa-metrics/eksa-metrics/pkg/components"
	"github.com/eksa-metrics/eksa-metrics/pkg/spec"
	"github.com/eksa-metrics/eksa-metrics/pkg/templates"
)

func mgmtConfig(provider spec.Provider, eksa string) *spec.Config {
	v, _ := spec.ParseEKSAVersion(eksa)
	return &spec.Config{ClusterName: "mgmt", Provider: provider, Management: true, ManagementComponents: true, EKSAVersion: &v,
		TLSMinVersion: metricsv1alpha1.TLS12, Images: metricsv1alpha1.Images{KubeRBACProxy: spec.DefaultKubeRBACProxyImage}}
}

// shippedDeployment reads eksa-controller-manager as EKS-A ships it.
func shippedDeployment(t *testing.T) *appsv1.Deployment {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(testutil.SharedFixtures(t), "manifests", "eksa-components.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(raw))
	for {
		var doc map[string]any
		if err := dec.Decode(&doc); err != nil {
			t.Fatalf("no eksa-controller-manager Deployment: %v", err)
		}
		md, _ := doc["metadata"].(map[string]any)
		if doc["kind"] == "Deployment" && md["name"] == "eksa-controller-manager" {
			b, _ := json.Marshal(doc)
			var d appsv1.Deployment
			if err := json.Unmarshal(b, &d); err != nil {
				t.Fatal(err)
			}
			return &d
		}
	}
}

// leaves flattens an object into path -> value, to compare two versions.
func leaves(prefix string, v any, out map[string]string) {
	switch x := v.(type) {
	case map[string]any:
		for k, val := range x {
			leaves(prefix+"."+k, val, out)
		}
	case []any:
		for i, val := range x {
			leaves(prefix+"["+string(rune('0'+i))+"]", val, out)
		}
	default:
		b, _ := json.Marshal(x)
		out[prefix] = string(b)
	}
}

// The shipped eksa-controller-manager after the change: only the intended
// fields differ (the manager's args gain --tls-min-version; everything else,
// its other args included, is kept).
func TestEKSAControllerManagerEditGolden(t *testing.T) {
	d := shippedDeployment(t)
	var edit templates.DeploymentEdit
	for _, e := range templates.ManagementEdits(mgmtConfig(spec.ProviderVSphere, "v0.26.1")) {
		if e.Component.Deployment == "eksa-controller-manager" {
			edit = e
		}
	}
	before, _ := json.Marshal(d)
	changed, err := edit.Apply(d)
	if err != nil || !changed {
		t.Fatalf("changed=%t err=%v", changed, err)
	}
	after, _ := json.Marshal(d)
	var b, a map[string]any
	_ = json.Unmarshal(before, &b)
	_ = json.Unmarshal(after, &a)
	lb, la := map[string]string{}, map[string]string{}
	leaves("", b, lb)
	leaves("", a, la)
	var differ []string
	for k, v := range la {
		if lb[k] != v {
			differ = append(differ, k+"="+v)
		}
	}
	for k := range lb {
		if _, ok := la[k]; !ok {
			differ = append(differ, k+" removed")
		}
	}
	sort.Strings(differ)
	if want := []string{`.spec.template.spec.containers[0].args[3]="--tls-min-version=VersionTLS12"`}; !reflect.DeepEqual(differ, want) {
		t.Fatalf("fields that differ:\n%s", strings.Join(differ, "\n"))
	}
	out, _ := sigsyaml.Marshal(d)
	testutil.Golden(t, filepath.Join("testdata", "golden", "eksa-controller-manager.deployment.yaml"), out)
	if changed, _ := edit.Apply(d); changed {
		t.Fatal("a second edit changed the Deployment again")
	}
}

func TestEditsPerFamily(t *testing.T) {
	dep := func(containers string) *appsv1.Deployment {
		var d appsv1.Deployment
		if err := sigsyaml.Unmarshal([]byte("spec:\n  template:\n    spec:\n      containers:\n"+containers), &d); err != nil {
			t.Fatal(err)
		}
		return &d
	}
	edits := map[string]templates.DeploymentEdit{}
	for _, p := range []spec.Provider{spec.ProviderNutanix, spec.ProviderTinkerbell} {
		for _, e := range templates.ManagementEdits(mgmtConfig(p, "v0.26.1")) {
			edits[e.Component.Deployment] = e
		}
	}
	// CAPX: insecure diagnostics behind a kube-rbac-proxy become secure, the proxy goes.
	capx := dep(`      - name: manager
        args: ["--leader-elect", "--diagnostics-address=127.0.0.1:8080", "--insecure-diagnostics", "--v=2"]
        ports: [{name: metrics, containerPort: 8080}]
      - name: kube-rbac-proxy
        args: ["--secure-listen-address=0.0.0.0:8443", "--upstream=http://127.0.0.1:8080/"]
`)
	if _, err := edits["capx-controller-manager"].Apply(capx); err != nil {
		t.Fatal(err)
	}
	c := capx.Spec.Template.Spec.Containers
	if len(c) != 1 || strings.Join(c[0].Args, " ") != "--leader-elect --diagnostics-address=:8443 --insecure-diagnostics=false --v=2 --tls-min-version=VersionTLS12" ||
		len(c[0].Ports) != 1 || c[0].Ports[0].ContainerPort != components.MetricsPort {
		t.Fatalf("capx: %+v", c)
	}
	// CAPT: plain HTTP only: moved to loopback, behind a sidecar.
	capt := dep(`      - name: manager
        args: ["--leader-elect"]
`)
	if _, err := edits["capt-controller-manager"].Apply(capt); err != nil {
		t.Fatal(err)
	}
	c = capt.Spec.Template.Spec.Containers
	if len(c) != 2 || strings.Join(c[0].Args, " ") != "--leader-elect --metrics-bind-addr=127.0.0.1:8080" || c[1].Name != templates.SidecarName ||
		!strings.Contains(strings.Join(c[1].Args, " "), "--upstream=http://127.0.0.1:8080/ --allow-paths=/metrics") {
		t.Fatalf("capt: %+v", c)
	}
	// A Deployment without the container is an error naming it.
	if _, err := edits["capt-controller-manager"].Apply(dep("      - name: other\n")); err == nil || !strings.Contains(err.Error(), `no container "manager"`) {
		t.Fatalf("got %v", err)
	}
}

func TestManagementSelection(t *testing.T) {
	names := func(c *spec.Config) []string {
		var out []string
		for _, m := range templates.ManagementComponents(c) {
			out = append(out, m.Deployment)
		}
		return out
	}
	v := names(mgmtConfig(spec.ProviderVSphere, "v0.26.1"))
	if !contains(v, "capv-controller-manager") || contains(v, "capd-controller-manager") || contains(v, "capt-controller-manager") {
		t.Fatalf("vsphere: %v", v)
	}
	c := mgmtConfig(spec.ProviderVSphere, "v0.26.1")
	c.ManagementExclude = []string{"capi-system/capi-controller-manager"}
	if contains(names(c), "capi-controller-manager") {
		t.Fatal("exclude ignored")
	}
	c.ManagementComponents = false
	if len(names(c)) != 0 {
		t.Fatal("disabled but rendered")
	}
	// eksa-controller-manager gets auth-delegator from v0.25 only.
	binding := func(eksa string) bool {
		for _, o := range templates.ManagementObjects(mgmtConfig(spec.ProviderDocker, eksa)) {
			if md := o["metadata"].(map[string]any); md["name"] == "eksa-metrics-eksa-controller-manager:auth-delegator" {
				return true
			}
		}
		return false
	}
	if binding("v0.24.6") || !binding("v0.25.0") {
		t.Fatal("the eksa-controller-manager binding should start at v0.25.0")
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
