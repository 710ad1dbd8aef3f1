package spec

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// kubeletSpec is a vSphere Cluster with one group that already has a
// kubeletConfiguration of its own, and the option on.
const kubeletSpec = `apiVersion: anywhere.eks.amazonaws.com/v1alpha1
kind: Cluster
metadata:
  name: c
spec:
  kubernetesVersion: "1.34"
  controlPlaneConfiguration:
    # three machines
    count: 3
    machineGroupRef: {kind: VSphereMachineConfig, name: cp}
  workerNodeGroupConfigurations:
  - name: md-0
    count: 2
    machineGroupRef: {kind: VSphereMachineConfig, name: w}
  -   count: 1
      name: md-1
      kubeletConfiguration:
        kind: KubeletConfiguration
        maxPods: 80
  datacenterRef: {kind: VSphereDatacenterConfig, name: c}
  metrics:
    scrapers: [{kind: ServiceAccount, name: prometheus, namespace: monitoring}]
    images: {eksaMetrics: registry.example/eksa-metrics:v0.1.0}
    tls:
      kubeletServingCertificates: true
---
apiVersion: anywhere.eks.amazonaws.com/v1alpha1
kind: VSphereMachineConfig
metadata: {name: cp}
spec: {osFamily: ubuntu}
`

func kubeletConfigs(t *testing.T, clusterYAML []byte) []map[string]any {
	t.Helper()
	doc, _, _ := bytes.Cut(clusterYAML, []byte("\n---\n"))
	var cl Cluster
	if err := yaml.UnmarshalStrict(doc, &cl, yaml.DisallowUnknownFields); err != nil {
		// unknown fields of the real Cluster are fine; decode loosely
		if err := yaml.Unmarshal(doc, &cl); err != nil {
			t.Fatalf("cluster.yaml does not parse: %v\n%s", err, clusterYAML)
		}
	}
	out := []map[string]any{cl.Spec.ControlPlaneConfiguration.KubeletConfiguration}
	for _, w := range cl.Spec.WorkerNodeGroupConfigurations {
		out = append(out, w.KubeletConfiguration)
	}
	return out
}

// cluster.yaml gets serverTLSBootstrap: true in every node group, with the
// flags EKS-A drops once kubeletConfiguration is set kept as settings, and
// the user's own kubeletConfiguration kept; every other line is unchanged.
func TestClusterYAMLAddsServerTLSBootstrap(t *testing.T) {
	for _, eol := range []string{"\n", "\r\n"} {
		raw := strings.ReplaceAll(kubeletSpec, "\n", eol)
		f, err := Load("c.yaml", strings.NewReader(raw))
		if err != nil {
			t.Fatal(err)
		}
		in := f.Input()
		c := Default(in, Options{})
		if errs := Validate(in, c, Options{}).Errors(); len(errs) > 0 {
			t.Fatalf("valid spec refused: %v", errs)
		}
		if got := in.kubeletBootstrapGroups(); strings.Join(got, ",") != "control plane,worker node group md-0,worker node group md-1" {
			t.Fatalf("groups to change: %v", got)
		}
		out, err := f.ClusterYAML()
		if err != nil {
			t.Fatal(err)
		}
		if eol == "\r\n" && bytes.Count(out, []byte("\n")) != bytes.Count(out, []byte("\r\n")) {
			t.Fatalf("CRLF file got LF lines:\n%q", out)
		}
		kcs := kubeletConfigs(t, bytes.ReplaceAll(out, []byte("\r\n"), []byte("\n")))
		if len(kcs) != 3 {
			t.Fatalf("groups: %d", len(kcs))
		}
		for i, kc := range kcs {
			if kc["serverTLSBootstrap"] != true {
				t.Errorf("group %d: serverTLSBootstrap %v in\n%s", i, kc["serverTLSBootstrap"], out)
			}
		}
		if kcs[0]["readOnlyPort"] != float64(0) || kcs[0]["authentication"] == nil {
			t.Errorf("a new kubeletConfiguration must keep read-only-port 0 and anonymous-auth false: %v", kcs[0])
		}
		if kcs[2]["maxPods"] != float64(80) || kcs[2]["readOnlyPort"] != nil {
			t.Errorf("the user's kubeletConfiguration must be kept as it is, plus serverTLSBootstrap: %v", kcs[2])
		}
		// Every original line but the metrics section's is there, in order.
		var kept []string
		for _, l := range strings.SplitAfter(raw, eol) {
			kept = append(kept, l)
		}
		rest := string(out)
		for _, l := range kept {
			if strings.HasPrefix(strings.TrimSpace(l), "metrics:") {
				break
			}
			i := strings.Index(rest, l)
			if i < 0 {
				t.Fatalf("line %q lost or reordered in\n%s", l, out)
			}
			rest = rest[i+len(l):]
		}
		if !strings.Contains(string(out), "  controlPlaneConfiguration:"+eol+"    kubeletConfiguration:") {
			t.Errorf("the comment of count must stay above count:\n%s", out)
		}
	}
}

// What EKS-A would not honour, or would break, is refused.
func TestKubeletServingCertificatesRefusals(t *testing.T) {
	for _, tc := range []struct{ name, from, to, want string }{
		{"snow", "VSphereDatacenterConfig", "SnowDatacenterConfig", "Snow provider does not apply kubeletConfiguration"},
		{"bottlerocket", "spec: {osFamily: ubuntu}", "spec: {osFamily: bottlerocket}", "control plane runs Bottlerocket"},
		{"explicit false", "maxPods: 80", "maxPods: 80\n        serverTLSBootstrap: false", "needs it true"},
		{"no image", "    images: {eksaMetrics: registry.example/eksa-metrics:v0.1.0}\n", "", "kubeletServingCertificates: Invalid value: true: needs images.eksaMetrics"},
		{"docker labels", "VSphereDatacenterConfig", "DockerDatacenterConfig", "node labels"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			raw := strings.Replace(kubeletSpec, tc.from, tc.to, 1)
			if tc.name == "docker labels" {
				raw = strings.Replace(raw, "  - name: md-0\n", "  - name: md-0\n    labels: {tier: web}\n", 1)
			}
			f, err := Load("c.yaml", strings.NewReader(raw))
			if err != nil {
				t.Fatal(err)
			}
			in := f.Input()
			c := Default(in, Options{})
			errs := Validate(in, c, Options{}).Errors()
			_, err = f.Locate(errs)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("want an error with %q, got %v", tc.want, err)
			}
			// At the line of the field it is about, not its parent's.
			at := "kubeletServingCertificates: true"
			if tc.name == "explicit false" {
				at = "serverTLSBootstrap: false"
			}
			var ie *InvalidError
			if !errors.As(err, &ie) {
				t.Fatalf("%T", err)
			}
			for _, p := range ie.Problems {
				if strings.Contains(p.Detail, tc.want) || strings.Contains(p.String(), tc.want) {
					if lines := strings.Split(raw, "\n"); p.Line < 1 || !strings.Contains(lines[p.Line-1], at) {
						t.Errorf("%s is reported at line %d, not at %q", p.Field, p.Line, at)
					}
				}
			}
		})
	}
	// The controller does not edit Clusters: a group without the setting is an error there.
	f, err := Load("c.yaml", strings.NewReader(kubeletSpec))
	if err != nil {
		t.Fatal(err)
	}
	in := f.Input()
	in.Resource = true
	if errs := Validate(in, Default(in, Options{}), Options{}).Errors(); len(errs) != 3 || !strings.Contains(errs[0].Detail, "set serverTLSBootstrap: true in the Cluster's kubeletConfiguration") {
		t.Fatalf("resource: %v", errs)
	}
}
