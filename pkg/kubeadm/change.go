package kubeadm

import (
	"fmt"
	"sort"

	"github.com/eksa-metrics/eksa-metrics/pkg/components"

	metricsv1alpha1 "github.com/eksa-metrics/eksa-metrics/pkg/apis/metrics/v1alpha1"

	"github.com/eksa-metrics/eksa-metrics/pkg/spec"
)

// Namespace of the KubeadmControlPlane that EKS-A creates for every cluster.
const Namespace = "eksa-system"

// Kubeconfigs of the components as their containers see them. kubeadm sets
// the same paths; pinning them keeps delegated authentication and
// authorization on whenever bind-address leaves loopback. EKS-A mounts them
// there on Bottlerocket too.
const (
	ControllerManagerKubeconfig = "/etc/kubernetes/controller-manager.conf"
	SchedulerKubeconfig         = "/etc/kubernetes/scheduler.conf"
)

// Kubeconfig of each component whose port bindAddress opens.
var Kubeconfig = map[Component]string{ControllerManager: ControllerManagerKubeconfig, Scheduler: SchedulerKubeconfig}

// enabled are the kubeadm blocks of the enabled catalog rows that satisfy keep.
func enabled(c *spec.Config, keep func(components.Cluster) bool) []Component {
	var out []Component
	for _, row := range components.Where(c, keep) {
		if row.Kubeadm != "" {
			out = append(out, Component(row.Kubeadm))
		}
	}
	return out
}

// securePort: TLS with delegated authentication on a loopback-only port
// (what proxy mode passes through, and bindAddress opens).
func securePort(row components.Cluster) bool { return row.Proxy == components.HAProxyPassThrough }

// ZPageComponents are the enabled components kubeadm configures that serve
// /statusz and /flagz (behind gates on 1.33 to 1.35).
func ZPageComponents(c *spec.Config) []Component {
	return enabled(c, func(row components.Cluster) bool { return row.ZPages })
}

// Z-page feature gates (1.33 to 1.35; on by default from 1.36).
const (
	GateStatusz = "ComponentStatusz"
	GateFlagz   = "ComponentFlagz"
)

// Item is one extraArgs item eksa-metrics sets, with the reason (for PLAN.md
// and validate).
type Item struct {
	Component Component
	Arg
	// Merged is true when the value merges a value EKS-A renders itself
	// (feature-gates such as KMSv1=true); EKS-A owns such an item too.
	Merged bool
	// User is true when EKS-A's item is the Cluster's own
	// controlPlaneConfiguration.apiServerExtraArgs: the merged value goes
	// there, and EKS-A then renders the one item.
	User bool
	Why  string
}

// Change is the KubeadmControlPlane change for one cluster.
type Change struct {
	ClusterName string
	APIVersion  string // spec.CAPIv1beta1 or spec.CAPIv1beta2
	Items       []Item
}

// Empty reports whether nothing on the control plane changes.
func (c Change) Empty() bool { return len(c.Items) == 0 }

// Args returns the items of one component, merged ones included.
func (c Change) Args(comp Component) Args { return c.args(comp, true) }

// args returns a component's items, without the merged ones unless asked.
func (c Change) args(comp Component, withMerged bool) Args {
	var out Args
	for _, it := range c.Items {
		if it.Component == comp && (withMerged || !it.Merged) {
			out = out.Set(it.Name, it.Value)
		}
	}
	return out
}

// ChangeFor computes the change for a configuration: every item needed and
// nothing else, so that proxy mode on 1.36 changes nothing.
func ChangeFor(c *spec.Config) Change {
	ch := Change{ClusterName: c.ClusterName, APIVersion: c.CAPIVersion}
	defaults := EKSADefaults(c)
	add := func(comp Component, name, value, why string) {
		ch.Items = append(ch.Items, Item{Component: comp, Arg: Arg{name, value}, Why: why})
	}

	if c.Exposure == metricsv1alpha1.ExposureBindAddress {
		for _, comp := range enabled(c, securePort) {
			add(comp, "bind-address", "0.0.0.0", "listen on every node address so Prometheus can reach the secure port")
			add(comp, "authentication-kubeconfig", Kubeconfig[comp], "keep delegated authentication (TokenReview) on while the port leaves loopback")
			add(comp, "authorization-kubeconfig", Kubeconfig[comp], "keep delegated authorization (SubjectAccessReview) on while the port leaves loopback")
			add(comp, "tls-min-version", c.TLSMinVersion, "spec.tls.minVersion")
		}
		if c.Etcd && c.AllowInsecure {
			add(Etcd, "listen-metrics-urls", "http://0.0.0.0:2381", "serve /metrics on every node address (plain HTTP; allowInsecure)")
		}
	} else if c.TLSMinVersion != metricsv1alpha1.TLS12 {
		// HAProxy passes TLS through: the component's own floor is what scrapers see.
		for _, comp := range enabled(c, securePort) {
			add(comp, "tls-min-version", c.TLSMinVersion, "spec.tls.minVersion (TLS passes through the proxy to the component)")
		}
	}

	if c.KubeletServingCertificates {
		for _, it := range signingItems() {
			add(ControllerManager, it.Name, it.Value, it.why)
		}
	}

	if c.Etcd && c.EtcdMetricsLevel == metricsv1alpha1.EtcdMetricsExtensive {
		add(Etcd, "metrics", string(metricsv1alpha1.EtcdMetricsExtensive), "spec.components.etcd.metricsLevel")
	}

	if c.ZPages() && c.KubeVersion.ZPageGatesNeeded() {
		gates := map[string]bool{}
		if c.Statusz {
			gates[GateStatusz] = true
		}
		if c.Flagz {
			gates[GateFlagz] = true
		}
		for _, comp := range ZPageComponents(c) {
			existing, merged := defaults[comp].Get(FeatureGates)
			value := MergeFeatureGates(existing, gates)
			if merged && value == MergeFeatureGates(existing, nil) {
				continue // EKS-A's item (the user's gates) already enables them
			}
			ch.Items = append(ch.Items, Item{
				Component: comp,
				Arg:       Arg{FeatureGates, value},
				Merged:    merged,
				User:      merged && UserArg(c, comp, FeatureGates),
				Why:       fmt.Sprintf("z-pages are alpha on Kubernetes %s and need their feature gates", c.KubeVersion),
			})
		}
	}
	sort.SliceStable(ch.Items, func(i, j int) bool {
		a, b := ch.Items[i], ch.Items[j]
		if a.Component != b.Component {
			return componentIndex(a.Component) < componentIndex(b.Component)
		}
		return a.Name < b.Name
	})
	return ch
}

func componentIndex(c Component) int {
	for i, x := range Components() {
		if x == c {
			return i
		}
	}
	return len(Components())
}
