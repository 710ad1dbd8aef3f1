package verify

import (
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	metricsv1alpha1 "github.com/eksa-metrics/eksa-metrics/pkg/apis/metrics/v1alpha1"
	"github.com/eksa-metrics/eksa-metrics/pkg/components"
	"github.com/eksa-metrics/eksa-metrics/pkg/spec"
)

// One target per component and node, each with the z-pages its version
// serves and the paths the scraper must be refused.
func TestTargets(t *testing.T) {
	nodes := []Node{{Name: "w-2", Address: "10.0.0.3"}, {Name: "cp-1", Address: "10.0.0.1", ControlPlane: true}, {Name: "w-1", Address: "10.0.0.2"}}
	cfg := func(minor int, statusz, flagz bool) *spec.Config {
		return &spec.Config{APIServer: true, ControllerManager: true, Scheduler: true, Etcd: true, KubeProxy: true, Kubelet: true,
			Exposure: metricsv1alpha1.ExposureProxy, KubeVersion: spec.KubeVersion{Major: 1, Minor: minor}, Statusz: statusz, Flagz: flagz}
	}
	find := func(ts []Target, id components.ID, node string) Target {
		for _, t := range ts {
			if t.Component == id && t.Node == node {
				return t
			}
		}
		t.Fatalf("no target %s@%s", id, node)
		return Target{}
	}

	ts := Targets(cfg(36, true, false), "https://api:6443", nodes)
	var names []string
	for _, tg := range ts {
		names = append(names, tg.String())
	}
	want := []string{"kube-apiserver", "kube-controller-manager@cp-1", "kube-scheduler@cp-1", "etcd@cp-1",
		"kube-proxy@cp-1", "kube-proxy@w-1", "kube-proxy@w-2", "kubelet@cp-1", "kubelet@w-1", "kubelet@w-2"}
	if !slices.Equal(names, want) {
		t.Fatalf("targets %v, want %v", names, want)
	}
	k := find(ts, components.Kubelet, "w-1")
	if k.Endpoint != "https://10.0.0.2:10250" || !k.ZPages || len(k.FlagzPaths) != 0 ||
		!slices.Contains(k.Refused, "/pods") || !slices.Contains(k.Refused, "/exec/kube-system/pod/container") || !slices.Contains(k.Refused, "/configz") || !slices.Contains(k.Refused, "/flagz") {
		t.Errorf("kubelet on 1.36, statusz only: %+v", k)
	}
	if a := find(ts, components.KubeAPIServer, ""); !a.VerifyWithClusterCA || !slices.Equal(a.Refused, []string{"/flagz"}) {
		t.Errorf("API server: %+v", a)
	}

	// 1.34: the kubelet and kube-proxy serve no z-pages (their gates are not
	// eksa-metrics' to set); the kubelet's /configz exists anyway.
	ts = Targets(cfg(34, true, true), "https://api:6443", nodes)
	k = find(ts, components.Kubelet, "cp-1")
	if k.ZPages || !slices.Equal(k.FlagzPaths, []string{"/configz"}) {
		t.Errorf("kubelet on 1.34 with flagz: %+v", k)
	}
	if p := find(ts, components.KubeProxy, "w-2"); p.ZPages || len(p.FlagzPaths) != 0 {
		t.Errorf("kube-proxy on 1.34: %+v", p)
	}
	if m := find(ts, components.KubeControllerManager, "cp-1"); !m.ZPages || !slices.Equal(m.FlagzPaths, []string{"/flagz"}) {
		t.Errorf("kube-controller-manager on 1.34 (gates rendered): %+v", m)
	}

	// bindAddress with allowInsecure: plain targets get no token, so nothing is refused.
	c := cfg(36, true, true)
	c.Exposure = metricsv1alpha1.ExposureBindAddress
	if e := find(Targets(c, "https://api:6443", nodes), components.Etcd, "cp-1"); !e.Plain || e.Endpoint != "http://10.0.0.1:2381" || e.ZPages || len(e.Refused) != 0 {
		t.Errorf("etcd, bindAddress: %+v", e)
	}
}

func TestManagementTarget(t *testing.T) {
	tg := ManagementTarget("capi-controller-manager", "capi-controller-manager-7d9f", "192.168.1.7", "")
	if tg.String() != "capi-controller-manager@capi-controller-manager-7d9f" || tg.Endpoint != "https://192.168.1.7:8443" || !slices.Equal(tg.Paths, []string{"/metrics"}) {
		t.Errorf("%+v", tg)
	}
	if r := check(t.Context(), ManagementTarget("x", "", "", "no ready endpoint"), Options{}); r.Pass() || r.Problems[0] != "no ready endpoint" {
		t.Errorf("%+v", r)
	}
	// A pod address that does not answer (as from outside the pod network):
	// the reason says where verify has to run.
	silent, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	tg = ManagementTarget("x", "x-1", "127.0.0.1", "")
	tg.Endpoint = "https://" + silent.Addr().String()
	r := check(t.Context(), tg, Options{Timeout: 300 * time.Millisecond})
	if r.Pass() || len(r.Problems) != 1 || !strings.Contains(r.Problems[0], "run verify on a node or in a pod") {
		t.Errorf("unanswered pod address: %+v", r)
	}
	// Nothing listening on a pod: the hint is about the pod, not a DaemonSet.
	silent.Close()
	r = check(t.Context(), tg, Options{Timeout: 300 * time.Millisecond})
	if r.Pass() || len(r.Problems) != 1 || !strings.Contains(r.Problems[0], "connection refused") || strings.Contains(r.Problems[0], "DaemonSet") {
		t.Errorf("refused pod address: %+v", r)
	}
}
