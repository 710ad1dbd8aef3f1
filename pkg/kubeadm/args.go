// Package kubeadm renders the KubeadmControlPlane change that eksa-metrics
// needs, as a server-side-apply partial object for both Cluster API
// contracts: v1beta1 (extraArgs are maps) and v1beta2 (extraArgs are
// {name, value} lists whose names must be unique).
package kubeadm

import (
	"slices"
	"sort"
	"strings"

	metricsv1alpha1 "github.com/eksa-metrics/eksa-metrics/pkg/apis/metrics/v1alpha1"
	"github.com/eksa-metrics/eksa-metrics/pkg/components"
)

// Component is a control-plane component with extraArgs in the
// ClusterConfiguration.
type Component string

const (
	APIServer         Component = "apiServer"
	ControllerManager Component = "controllerManager"
	Scheduler         Component = "scheduler"
	Etcd              Component = "etcd" // etcd.local
)

// Components are the catalog's components that kubeadm configures in the
// clusterConfiguration, in rendering order.
func Components() []Component {
	var out []Component
	for _, row := range components.ClusterCatalog {
		if row.Kubeadm != "" {
			out = append(out, Component(row.Kubeadm))
		}
	}
	return out
}

// Path is where the component's extraArgs live under spec.kubeadmConfigSpec.clusterConfiguration.
func (c Component) Path() []string {
	if c == Etcd {
		return []string{"etcd", "local", "extraArgs"}
	}
	return []string{string(c), "extraArgs"}
}

// Arg is one extraArgs item.
type Arg struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// Args is a component's extraArgs, kept sorted by name (as EKS-A writes them).
type Args []Arg

// Get returns the value of name.
func (a Args) Get(name string) (string, bool) {
	for _, x := range a {
		if x.Name == name {
			return x.Value, true
		}
	}
	return "", false
}

// Set replaces the item called name, or adds it; the result is sorted.
func (a Args) Set(name, value string) Args {
	out := make(Args, 0, len(a)+1)
	for _, x := range a {
		if x.Name != name {
			out = append(out, x)
		}
	}
	out = append(out, Arg{name, value})
	sort.SliceStable(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// FeatureGates is the name of the flag that carries feature gates.
const FeatureGates = "feature-gates"

// Flags are the extraArgs items eksa-metrics renders (ChangeFor), per
// component: the only ones its controller may change in a
// KubeadmControlPlane (its admission policy holds it to them).
var Flags = map[Component][]string{
	APIServer:         {FeatureGates},
	ControllerManager: append([]string{"bind-address", "authentication-kubeconfig", "authorization-kubeconfig", "tls-min-version", FeatureGates}, SigningFlags()...),
	Scheduler:         {"bind-address", "authentication-kubeconfig", "authorization-kubeconfig", "tls-min-version", FeatureGates},
	Etcd:              {"listen-metrics-urls", "metrics"},
}

// Values are the values the render gives a flag of Flags (feature-gates
// aside: its value merges the z-page gates, ZPageGates, into the gates EKS-A
// has), and the loopback defaults a flag's removal gives back: the admission
// policy admits no other value from eksa-metrics' controller.
func Values(comp Component, name string) []string {
	switch name {
	case "bind-address":
		return []string{"0.0.0.0", "127.0.0.1"}
	case "authentication-kubeconfig", "authorization-kubeconfig":
		return []string{Kubeconfig[comp]}
	case "tls-min-version":
		return []string{metricsv1alpha1.TLS12, metricsv1alpha1.TLS13}
	case "listen-metrics-urls":
		return []string{"http://0.0.0.0:2381", "http://127.0.0.1:2381"}
	case "metrics":
		return []string{string(metricsv1alpha1.EtcdMetricsBasic), string(metricsv1alpha1.EtcdMetricsExtensive)}
	}
	for _, it := range signingItems() {
		if it.Name == name {
			return []string{it.Value}
		}
	}
	return nil
}

// ZPageGates are the gates eksa-metrics merges into feature-gates, each as
// the render writes it.
func ZPageGates() []string { return []string{GateStatusz + "=true", GateFlagz + "=true"} }

// FlagNames are the names of Flags, sorted, each once.
func FlagNames() []string {
	var out []string
	for _, names := range Flags {
		out = append(out, names...)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// MergeFeatureGates merges gates into a --feature-gates value such as
// "KMSv1=true": gates already there keep their place unless overridden, and
// the result is sorted by gate name so that it is stable.
func MergeFeatureGates(existing string, gates map[string]bool) string {
	merged := map[string]string{}
	for _, kv := range strings.Split(existing, ",") {
		kv = strings.TrimSpace(kv)
		if kv == "" {
			continue
		}
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			v = "true"
		}
		merged[strings.TrimSpace(k)] = strings.TrimSpace(v)
	}
	for k, v := range gates {
		if v {
			merged[k] = "true"
		} else {
			merged[k] = "false"
		}
	}
	names := make([]string, 0, len(merged))
	for k := range merged {
		names = append(names, k)
	}
	sort.Strings(names)
	parts := make([]string, len(names))
	for i, k := range names {
		parts[i] = k + "=" + merged[k]
	}
	return strings.Join(parts, ",")
}
