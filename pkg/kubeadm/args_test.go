package kubeadm

import (
	"slices"
	"strings"
	"testing"

	metricsv1alpha1 "github.com/eksa-metrics/eksa-metrics/pkg/apis/metrics/v1alpha1"

	"github.com/eksa-metrics/eksa-metrics/pkg/spec"
)

func TestMergeFeatureGates(t *testing.T) {
	for _, tc := range []struct {
		existing string
		gates    map[string]bool
		want     string
	}{
		{"", map[string]bool{GateStatusz: true}, "ComponentStatusz=true"},
		{"KMSv1=true", map[string]bool{GateStatusz: true, GateFlagz: true}, "ComponentFlagz=true,ComponentStatusz=true,KMSv1=true"},
		{" KMSv1=true , ComponentStatusz=false", map[string]bool{GateStatusz: true}, "ComponentStatusz=true,KMSv1=true"},
		{"Foo", nil, "Foo=true"},
		{"B=false,A=true", nil, "A=true,B=false"},
	} {
		if got := MergeFeatureGates(tc.existing, tc.gates); got != tc.want {
			t.Errorf("MergeFeatureGates(%q, %v) = %q, want %q", tc.existing, tc.gates, got, tc.want)
		}
	}
}

func FuzzMergeFeatureGates(f *testing.F) {
	f.Add("KMSv1=true")
	f.Add("A=true,,B=false,C")
	f.Add(" = ,=x,y=")
	f.Fuzz(func(t *testing.T, existing string) {
		once := MergeFeatureGates(existing, map[string]bool{GateStatusz: true})
		if !strings.Contains(once, GateStatusz+"=true") {
			t.Fatalf("gate lost: %q", once)
		}
		// Merging is idempotent: a second merge changes nothing.
		if twice := MergeFeatureGates(once, map[string]bool{GateStatusz: true}); twice != once {
			t.Fatalf("not idempotent: %q then %q", once, twice)
		}
	})
}

func cfg(mutate func(*spec.Config)) *spec.Config {
	c := &spec.Config{ClusterName: "c", KubeVersion: spec.KubeVersion{Major: 1, Minor: 36}, Provider: spec.ProviderDocker,
		CAPIVersion: spec.CAPIv1beta2, Exposure: metricsv1alpha1.ExposureProxy, TLSMinVersion: metricsv1alpha1.TLS12,
		APIServer: true, ControllerManager: true, Scheduler: true, Etcd: true, KubeProxy: true, Kubelet: true,
		EtcdMetricsLevel: metricsv1alpha1.EtcdMetricsBasic}
	if mutate != nil {
		mutate(c)
	}
	return c
}

func TestPlan(t *testing.T) {
	for name, tc := range map[string]struct {
		cfg  *spec.Config
		want []string // component:name=value
	}{
		"proxy on 1.36 changes nothing": {cfg(nil), nil},
		"proxy with z-pages on 1.34 sets gates on three components": {cfg(func(c *spec.Config) {
			c.KubeVersion.Minor, c.Statusz, c.Flagz = 34, true, true
		}), []string{
			"apiServer:feature-gates=ComponentFlagz=true,ComponentStatusz=true",
			"controllerManager:feature-gates=ComponentFlagz=true,ComponentStatusz=true",
			"scheduler:feature-gates=ComponentFlagz=true,ComponentStatusz=true",
		}},
		"z-pages on 1.36 need no gate": {cfg(func(c *spec.Config) { c.Statusz, c.Flagz = true, true }), nil},
		"only statusz": {cfg(func(c *spec.Config) {
			c.KubeVersion.Minor, c.Statusz, c.APIServer, c.Scheduler = 33, true, false, false
		}),
			[]string{"controllerManager:feature-gates=ComponentStatusz=true"}},
		"bindAddress without allowInsecure leaves etcd alone": {cfg(func(c *spec.Config) { c.Exposure, c.ControllerManager = metricsv1alpha1.ExposureBindAddress, false }), []string{
			"scheduler:authentication-kubeconfig=/etc/kubernetes/scheduler.conf",
			"scheduler:authorization-kubeconfig=/etc/kubernetes/scheduler.conf",
			"scheduler:bind-address=0.0.0.0",
			"scheduler:tls-min-version=VersionTLS12",
		}},
		"bindAddress with allowInsecure exposes etcd": {cfg(func(c *spec.Config) {
			c.Exposure, c.AllowInsecure, c.ControllerManager, c.Scheduler = metricsv1alpha1.ExposureBindAddress, true, false, false
		}), []string{"etcd:listen-metrics-urls=http://0.0.0.0:2381"}},
		"TLS 1.3 in proxy mode reaches the components": {cfg(func(c *spec.Config) { c.TLSMinVersion = metricsv1alpha1.TLS13 }), []string{
			"controllerManager:tls-min-version=VersionTLS13", "scheduler:tls-min-version=VersionTLS13",
		}},
		"extensive etcd metrics": {cfg(func(c *spec.Config) { c.EtcdMetricsLevel = metricsv1alpha1.EtcdMetricsExtensive }), []string{"etcd:metrics=extensive"}},
		"external etcd is never patched": {cfg(func(c *spec.Config) {
			c.EtcdMetricsLevel, c.Etcd, c.ExternalEtcd = metricsv1alpha1.EtcdMetricsExtensive, false, true
		}), nil},
	} {
		t.Run(name, func(t *testing.T) {
			var got []string
			for _, it := range ChangeFor(tc.cfg).Items {
				got = append(got, string(it.Component)+":"+it.Name+"="+it.Value)
			}
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Fatalf("got:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}

func TestObjectShapes(t *testing.T) {
	c := cfg(func(c *spec.Config) { c.Exposure, c.AllowInsecure = metricsv1alpha1.ExposureBindAddress, true })
	v2 := ChangeFor(c).Object()
	list := v2["spec"].(map[string]any)["kubeadmConfigSpec"].(map[string]any)["clusterConfiguration"].(map[string]any)["etcd"].(map[string]any)["local"].(map[string]any)["extraArgs"]
	if _, ok := list.([]any); !ok || v2["apiVersion"] != "controlplane.cluster.x-k8s.io/v1beta2" {
		t.Fatalf("v1beta2 extraArgs should be a list: %#v", list)
	}
	c.CAPIVersion = spec.CAPIv1beta1
	v1 := ChangeFor(c).Object()
	m := v1["spec"].(map[string]any)["kubeadmConfigSpec"].(map[string]any)["clusterConfiguration"].(map[string]any)["scheduler"].(map[string]any)["extraArgs"]
	if mm, ok := m.(map[string]any); !ok || mm["bind-address"] != "0.0.0.0" || v1["apiVersion"] != "controlplane.cluster.x-k8s.io/v1beta1" {
		t.Fatalf("v1beta1 extraArgs should be a map: %#v", m)
	}
}

// Every item the render writes is a flag of Flags with a value of Values
// (feature-gates: the z-page gates as ZPageGates writes them), so that the
// controller's admission policy, which admits no other, admits it.
func TestValuesHoldEveryRenderedItem(t *testing.T) {
	var configs []*spec.Config
	for _, exposure := range []metricsv1alpha1.Exposure{metricsv1alpha1.ExposureProxy, metricsv1alpha1.ExposureBindAddress} {
		for _, tls := range []string{metricsv1alpha1.TLS12, metricsv1alpha1.TLS13} {
			for _, minor := range []int{33, 34, 35, 36, 37} {
				configs = append(configs, cfg(func(c *spec.Config) {
					c.Exposure, c.TLSMinVersion, c.KubeVersion.Minor = exposure, tls, minor
					c.AllowInsecure, c.Statusz, c.Flagz, c.KubeletServingCertificates = true, true, true, true
					c.EtcdMetricsLevel = metricsv1alpha1.EtcdMetricsExtensive
				}))
			}
		}
	}
	seen := map[string]bool{}
	for _, c := range configs {
		for _, it := range ChangeFor(c).Items {
			if !slices.Contains(Flags[it.Component], it.Name) {
				t.Errorf("%s: %s is rendered but not in Flags", it.Component, it.Name)
			}
			seen[it.Name] = true
			if it.Name == FeatureGates {
				for _, g := range strings.Split(it.Value, ",") {
					if !slices.Contains(ZPageGates(), g) {
						t.Errorf("%s: feature-gates %q has %q, not a z-page gate", it.Component, it.Value, g)
					}
				}
				continue
			}
			if !slices.Contains(Values(it.Component, it.Name), it.Value) {
				t.Errorf("%s: %s=%q is rendered but Values gives %q", it.Component, it.Name, it.Value, Values(it.Component, it.Name))
			}
		}
	}
	// The configurations reach every flag (the test can fail).
	for _, name := range FlagNames() {
		if !seen[name] {
			t.Errorf("no configuration renders %s", name)
		}
	}
}
