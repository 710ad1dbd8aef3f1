package kubeadm

import (
	"fmt"
	"sort"

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
	Why    string
}

// Change is the KubeadmControlPlane change for one cluster.
type Change struct {
	ClusterName string
	APIVersion  string // spec.CAPIv1beta1 or spec.CAPIv1beta2
	Items       []Item
}

// Empty reports whether nothing on the control plane changes.
func (c Change) Empty() bool { return len(c.Items) == 0 }

// Args returns the items of one component.
func (c Change) Args(comp Component) Args {
	var out Args
	for _, it := range c.Items {
		if it.Component == comp {
			out = out.Set(it.Name, it.Value)
		}
	}
	return out
}

// Plan computes the change for a configuration: every item needed and
// nothing else, so that proxy mode on 1.36 changes nothing.
func Plan(c *spec.Config) Change {
	ch := Change{ClusterName: c.ClusterName, APIVersion: c.CAPIVersion}
	defaults := EKSADefaults(c)
	add := func(comp Component, name, value, why string) {
		ch.Items = append(ch.Items, Item{Component: comp, Arg: Arg{name, value}, Why: why})
	}

	if c.Exposure == spec.ExposureBindAddress {
		for _, x := range []struct {
			on         bool
			comp       Component
			kubeconfig string
		}{
			{c.ControllerManager, ControllerManager, ControllerManagerKubeconfig},
			{c.Scheduler, Scheduler, SchedulerKubeconfig},
		} {
			if !x.on {
				continue
			}
			add(x.comp, "bind-address", "0.0.0.0", "listen on every node address so Prometheus can reach the secure port")
			add(x.comp, "authentication-kubeconfig", x.kubeconfig, "keep delegated authentication (TokenReview) on while the port leaves loopback")
			add(x.comp, "authorization-kubeconfig", x.kubeconfig, "keep delegated authorization (SubjectAccessReview) on while the port leaves loopback")
			add(x.comp, "tls-min-version", c.TLSMinVersion, "spec.tls.minVersion")
		}
		if c.Etcd && c.AllowInsecure {
			add(Etcd, "listen-metrics-urls", "http://0.0.0.0:2381", "serve /metrics on every node address (plain HTTP; allowInsecure)")
		}
	} else if c.TLSMinVersion != spec.TLS12 {
		// HAProxy passes TLS through: the component's own floor is what scrapers see.
		for _, x := range []struct {
			on   bool
			comp Component
		}{{c.ControllerManager, ControllerManager}, {c.Scheduler, Scheduler}} {
			if x.on {
				add(x.comp, "tls-min-version", c.TLSMinVersion, "spec.tls.minVersion (TLS passes through the proxy to the component)")
			}
		}
	}

	if c.Etcd && c.EtcdMetricsLevel == spec.EtcdMetricsExtensive {
		add(Etcd, "metrics", string(spec.EtcdMetricsExtensive), "spec.components.etcd.metricsLevel")
	}

	if c.ZPages() && c.KubeVersion.ZPageGatesNeeded() {
		gates := map[string]bool{}
		if c.Statusz {
			gates[GateStatusz] = true
		}
		if c.Flagz {
			gates[GateFlagz] = true
		}
		for _, x := range []struct {
			on   bool
			comp Component
		}{{c.APIServer, APIServer}, {c.ControllerManager, ControllerManager}, {c.Scheduler, Scheduler}} {
			if !x.on {
				continue
			}
			existing, merged := defaults[x.comp].Get(FeatureGates)
			ch.Items = append(ch.Items, Item{
				Component: x.comp,
				Arg:       Arg{FeatureGates, MergeFeatureGates(existing, gates)},
				Merged:    merged,
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
	for i, x := range Components {
		if x == c {
			return i
		}
	}
	return len(Components)
}
