package engine

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/eksa-metrics/eksa-metrics/pkg/cluster"
	"github.com/eksa-metrics/eksa-metrics/pkg/render"
	"github.com/eksa-metrics/eksa-metrics/pkg/verify"
)

// VerifyOptions control Verify.
type VerifyOptions struct {
	Concurrency int
	Timeout     time.Duration
	// Cleanup reports a failure to delete a temporary object.
	Cleanup func(error)
}

// Verify finds every target of a render in the workload cluster (the API
// server, the nodes from the Node objects), makes the temporary identities,
// checks every target, and deletes the identities again, also when ctx is
// cancelled.
func Verify(ctx context.Context, workload *cluster.Cluster, r *render.Result, opts VerifyOptions) ([]verify.Result, error) {
	nodeList, err := workload.Core.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing the workload cluster's nodes: %w", err)
	}
	var nodes []verify.Node
	for _, n := range nodeList.Items {
		vn := verify.Node{Name: n.Name}
		_, vn.ControlPlane = n.Labels["node-role.kubernetes.io/control-plane"]
		for _, a := range n.Status.Addresses {
			if a.Type == corev1.NodeInternalIP || vn.Address == "" && a.Type != corev1.NodeHostName {
				vn.Address = a.Address
			}
		}
		if vn.Address != "" {
			nodes = append(nodes, vn)
		}
	}
	targets := verify.Targets(r.Config, strings.TrimSuffix(workload.Server, "/"), nodes)

	ids, err := verify.NewIdentities(ctx, workload.Core, r.Config.Scrapers)
	defer func() {
		// A context of its own: cleanup also runs after Ctrl-C.
		cctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := ids.Cleanup(cctx); err != nil && opts.Cleanup != nil {
			opts.Cleanup(err)
		}
	}()
	if err != nil {
		return nil, err
	}
	return verify.Run(ctx, targets, verify.Options{ScraperToken: ids.ScraperToken, UnboundToken: ids.UnboundToken, ClusterCA: workload.CA, Concurrency: opts.Concurrency, Timeout: opts.Timeout}), nil
}
