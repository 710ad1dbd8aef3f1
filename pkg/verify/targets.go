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
	ZPages    bool
	// Plain is true for a plain-HTTP endpoint accepted with allowInsecure:
	// it is expected to serve anyone, and is reported as such. It never gets
	// a token.
	Plain bool
	// VerifyWithClusterCA: the certificate must chain to the cluster CA (the
	// API server) before any token is sent.
	VerifyWithClusterCA bool
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
		z := comp.ZPages && c.Statusz
		if comp.Placement == components.APIServerEndpoint {
			out = append(out, Target{Component: comp.ID, Endpoint: apiServer, Paths: comp.Paths, ZPages: z, VerifyWithClusterCA: true})
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
			out = append(out, Target{Component: comp.ID, Node: n.Name, Endpoint: scheme + "://" + net.JoinHostPort(n.Address, strconv.Itoa(comp.Port)), Paths: comp.Paths, ZPages: z && !plain, Plain: plain})
		}
	}
	return out
}
