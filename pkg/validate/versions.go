package validate

import (
	"github.com/eksa-metrics/eksa-metrics/pkg/kubeadm"
)

// The flags eksa-metrics renders, per component, and the first Kubernetes
// minor (1.x) that accepts each; 0 means every supported version (1.28+).
// test/integration checks this table against the --help output of the real
// 1.34 and 1.36 binaries.
var componentFlags = map[kubeadm.Component]map[string]int{
	kubeadm.APIServer: {"feature-gates": 0},
	kubeadm.ControllerManager: {"bind-address": 0, "authentication-kubeconfig": 0, "authorization-kubeconfig": 0,
		"tls-min-version": 0, "feature-gates": 0},
	kubeadm.Scheduler: {"bind-address": 0, "authentication-kubeconfig": 0, "authorization-kubeconfig": 0,
		"tls-min-version": 0, "feature-gates": 0},
	kubeadm.Etcd: {"listen-metrics-urls": 0, "metrics": 0},
}

// The signer flags of tls.kubeletServingCertificates (kube-controller-manager
// has had them since 1.19).
func init() {
	for _, f := range kubeadm.SigningFlags() {
		componentFlags[kubeadm.ControllerManager][f] = 0
	}
}

// gate is a feature gate's life: it exists from Since (per component), and is
// on by default from DefaultOn. Gone is the first minor without it (0: still
// there in every supported version).
type gate struct {
	Since     map[kubeadm.Component]int
	DefaultOn int
	Gone      int
}

// featureGates eksa-metrics may render (KEP-4827, KEP-4828): the API server
// serves the z-pages from 1.32, the others from 1.33; beta and on in 1.36.
var featureGates = map[string]gate{
	kubeadm.GateStatusz: {Since: map[kubeadm.Component]int{kubeadm.APIServer: 32, kubeadm.ControllerManager: 33, kubeadm.Scheduler: 33}, DefaultOn: 36},
	kubeadm.GateFlagz:   {Since: map[kubeadm.Component]int{kubeadm.APIServer: 32, kubeadm.ControllerManager: 33, kubeadm.Scheduler: 33}, DefaultOn: 36},
	// Set by EKS-A itself with etcd encryption; kept when merging.
	"KMSv1": {Since: map[kubeadm.Component]int{kubeadm.APIServer: 28}},
}

// FlagKnown reports whether a component of Kubernetes 1.minor accepts flag.
func FlagKnown(comp kubeadm.Component, flag string, minor int) bool {
	since, ok := componentFlags[comp][flag]
	return ok && minor >= since
}

// GateKnown reports whether a component of Kubernetes 1.minor knows a gate.
func GateKnown(comp kubeadm.Component, name string, minor int) bool {
	g, ok := featureGates[name]
	if !ok {
		return false
	}
	since, ok := g.Since[comp]
	return ok && minor >= since && (g.Gone == 0 || minor < g.Gone)
}

// Flags lists the table, for the test against real binaries.
func Flags() map[kubeadm.Component]map[string]int { return componentFlags }

// Gates lists the gate table, for the test against real binaries.
func Gates() map[string]map[kubeadm.Component]int {
	out := map[string]map[kubeadm.Component]int{}
	for name, g := range featureGates {
		out[name] = g.Since
	}
	return out
}
