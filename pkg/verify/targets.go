// Package verify proves, against a live cluster, that every enabled metrics
// endpoint is reachable, serves the scraper, and refuses identities that must
// be refused.
package verify

import (
	"fmt"
	"net"
	"sort"
	"strconv"

	metricsv1alpha1 "github.com/eksa-metrics/eksa-metrics/pkg/apis/metrics/v1alpha1"
	"github.com/eksa-metrics/eksa-metrics/pkg/templates"

	"github.com/eksa-metrics/eksa-metrics/pkg/components"
	"github.com/eksa-metrics/eksa-metrics/pkg/spec"
)

// Node is what verify needs of a Node object.
type Node struct {
	Name         string
	Address      string // InternalIP (else the first address)
	ControlPlane bool
}

// Target is one endpoint to check.
type Target struct {
	Component components.ID
	Node      string // "" for the API server
	Endpoint  string // scheme://host:port
	Paths     []string
	// ZPages: the scraper reads /statusz. FlagzPaths must serve it too
	// (flagz asked for); Refused must not (what its roles do not grant).
	ZPages     bool
	FlagzPaths []string
	Refused    []string
	// Missing says why there is nothing to reach (a management component
	// whose Service has no ready endpoint); the row fails with it.
	Missing string
	// PodNetwork: the endpoint is a pod address, reachable only from the
	// cluster's pod network.
	PodNetwork bool
	// Plain is true for a plain-HTTP endpoint accepted with allowInsecure:
	// it is expected to serve anyone, and is reported as such. It never gets
	// a token.
	Plain bool
	// VerifyWithClusterCA: the certificate must chain to the cluster CA (the
	// API server) before any token is sent.
	VerifyWithClusterCA bool
	// VerifyWithKubeletCA: the certificate must chain to the kubelet-serving
	// CA for the target's address (the kubelets with
	// tls.kubeletServingCertificates) before any token is sent.
	VerifyWithKubeletCA bool
	// KubeletCAName, with VerifyWithKubeletCA, is the name the certificate
	// must be for instead of the target's address (the approver's own
	// metrics endpoint, whose certificate it issues with that CA).
	KubeletCAName string
	// ServingName: the certificate must be eksa-metrics' for this name
	// (Options.ServingCA), as Prometheus verifies it, before any token is sent.
	ServingName string
}

func (t Target) String() string {
	if t.Node == "" {
		return string(t.Component)
	}
	return fmt.Sprintf("%s@%s", t.Component, t.Node)
}

// Targets lists every endpoint the configuration enables, ordered by
// component, then node.
func Targets(c *spec.Config, apiServer string, nodes []Node) []Target {
	sort.Slice(nodes, func(i, j int) bool { return nodes[i].Name < nodes[j].Name })
	var out []Target
	for _, comp := range components.Enabled(c) {
		z := components.ServesZPages(c, comp) && c.Statusz
		if comp.Placement == components.APIServerEndpoint {
			t := Target{Component: comp.ID, Endpoint: apiServer, Paths: comp.Paths, ZPages: z, VerifyWithClusterCA: true}
			t.FlagzPaths, t.Refused = zPagePaths(c, comp)
			out = append(out, t)
			continue
		}
		for _, n := range nodes {
			if comp.Placement == components.ControlPlaneNodes && !n.ControlPlane {
				continue
			}
			scheme := "https"
			plain := !comp.TLS && c.Exposure == metricsv1alpha1.ExposureBindAddress
			if plain {
				scheme = "http"
			}
			t := Target{Component: comp.ID, Node: n.Name, Endpoint: scheme + "://" + net.JoinHostPort(n.Address, strconv.Itoa(comp.Port)), Paths: comp.Paths, ZPages: z && !plain, Plain: plain}
			if !plain {
				t.FlagzPaths, t.Refused = zPagePaths(c, comp)
			}
			if templates.ServesCertificate(c, comp) {
				t.ServingName = templates.ServingName(comp.ID)
			}
			// A kubelet-serving certificate names the node's addresses.
			t.VerifyWithKubeletCA = comp.ID == components.Kubelet && c.KubeletServingCertificates
			out = append(out, t)
		}
	}
	return out
}

// zPagePaths: /flagz (where served) and the kubelet's /configz (both
// nodes/configz there) must serve the scraper when flagz is asked for and
// must not otherwise; /statusz must not when statusz is not asked for; and
// the component's own refused paths.
func zPagePaths(c *spec.Config, comp components.Cluster) (flagz, refused []string) {
	refused = append(refused, comp.Refused...)
	var fz []string
	if components.ServesZPages(c, comp) {
		fz = append(fz, "/flagz")
		if !c.Statusz {
			refused = append(refused, "/statusz")
		}
	}
	if comp.ID == components.Kubelet {
		fz = append(fz, "/configz") // served by every kubelet version
	}
	if c.Flagz {
		return fz, refused
	}
	return nil, append(refused, fz...)
}

// ApproverTarget is a pod of the kubelet serving-certificate approver
// behind its metrics Service, or, with missing set, an approver with no
// ready endpoint: its certificate must be the one it issues with the
// kubelet-serving CA for its Service's name.
func ApproverTarget(pod, address, missing string) Target {
	t := Target{Component: templates.KubeletApproverComponent, Node: pod, Paths: []string{"/metrics"}, Missing: missing, PodNetwork: true,
		VerifyWithKubeletCA: true, KubeletCAName: templates.KubeletApproverServingName}
	if address != "" {
		t.Endpoint = "https://" + net.JoinHostPort(address, strconv.Itoa(templates.KubeletApproverMetricsPort))
	}
	return t
}

// ManagementTarget is a management controller's pod behind its metrics
// Service (an EndpointSlice address), or, with missing set, a controller
// that is installed but has no ready endpoint.
func ManagementTarget(deployment, pod, address, missing string) Target {
	t := Target{Component: components.ID(deployment), Node: pod, Paths: []string{"/metrics"}, Missing: missing, PodNetwork: true}
	if address != "" {
		t.Endpoint = "https://" + net.JoinHostPort(address, strconv.Itoa(components.MetricsPort))
	}
	return t
}
