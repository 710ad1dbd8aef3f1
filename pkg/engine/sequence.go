package engine

import (
	"context"
	"errors"
	"time"

	"github.com/eksa-metrics/eksa-metrics/pkg/cluster"
	"github.com/eksa-metrics/eksa-metrics/pkg/kubeadm"
	"github.com/eksa-metrics/eksa-metrics/pkg/render"
)

// A Pass is the engine's sequence for one Cluster, whoever drives it (apply
// on the command line, the controller for each Cluster it selects):
// connect, then NewPass (certificates and plan, read-only), then Apply
// (rollout gate, certificates, apply and prune, cert-manager's issuance),
// or Release to take everything back. The plan is a value the driver may
// print or count before it applies it.
type Pass struct {
	Clusters     *Clusters
	Result       *render.Result
	Steps        []*cluster.Step
	Certificates []*cluster.CertificateStep
}

// NewPass plans a render against the live clusters: the serving
// certificates apply writes, then one step per object and a prune step for
// each object the render no longer holds. It changes nothing.
func NewPass(ctx context.Context, cl *Clusters, r *render.Result) (*Pass, error) {
	certs, err := PlanCertificates(ctx, cl, r)
	if err != nil {
		return nil, err
	}
	steps, err := Plan(ctx, cl, r)
	if err != nil {
		return nil, err
	}
	return &Pass{Clusters: cl, Result: r, Steps: steps, Certificates: certs}, nil
}

// RollsControlPlane reports whether the plan replaces control-plane machines.
func (p *Pass) RollsControlPlane() bool { return RollsControlPlane(p.Steps) }

// Apply executes the plan behind the rollout gate (opts.Certificates is
// the pass' own).
func (p *Pass) Apply(ctx context.Context, opts ApplyOptions) error {
	opts.Certificates = p.Certificates
	return Apply(ctx, p.Clusters, p.Result, p.Steps, opts)
}

// Wait blocks until what the pass changed is ready.
func (p *Pass) Wait(ctx context.Context, opts WaitOptions) error {
	return Wait(ctx, p.Clusters, p.Result, p.Steps, opts.Timeout, opts.Interval, opts.Report)
}

// WaitOptions control Pass.Wait.
type WaitOptions struct {
	Timeout, Interval time.Duration
	Report            cluster.Reporter
}

// Release takes back what eksa-metrics created for the render's Cluster: it
// plans the empty render (every object of the Cluster's inventory pruned,
// its KubeadmControlPlane items released), applies it, and deletes the
// serving certificates. When the gate refuses the control-plane rollout
// that releasing the KubeadmControlPlane items means, those items stay and
// everything else goes; the refusal is returned after the rest is done.
// Edited management Deployments and kube-proxy's configuration are given
// back as their records say.
func Release(ctx context.Context, cl *Clusters, r *render.Result, opts ApplyOptions) error {
	steps, err := PlanRelease(ctx, cl, r)
	if err != nil {
		return err
	}
	return ReleaseSteps(ctx, cl, r, steps, opts)
}

// releaseRender is the render with nothing of eksa-metrics' for r's Cluster:
// no object, and a KubeadmControlPlane with no item and no mark.
func releaseRender(r *render.Result) *render.Result {
	empty := &render.Result{Config: r.Config, Change: kubeadm.Change{ClusterName: r.Config.ClusterName, APIVersion: r.Change.APIVersion}}
	// The KubeadmControlPlane with nothing of eksa-metrics': its apply
	// gives back every item and mark eksa-metrics set there.
	kcp := empty.Change.Object()
	delete(kcp["metadata"].(map[string]any), "annotations")
	empty.Objects = []render.Object{{Destination: render.Management, Object: kcp}}
	return empty
}

// PlanRelease plans Release: every object of the Cluster's inventory
// pruned, its KubeadmControlPlane items released, the edits given back.
func PlanRelease(ctx context.Context, cl *Clusters, r *render.Result) ([]*cluster.Step, error) {
	return Plan(ctx, cl, releaseRender(r))
}

// ReleaseSteps is Release with the steps of PlanRelease. A server dry run
// deletes no certificate (nothing is persisted).
func ReleaseSteps(ctx context.Context, cl *Clusters, r *render.Result, steps []*cluster.Step, opts ApplyOptions) error {
	empty := releaseRender(r)
	opts.Certificates = nil
	err := Apply(ctx, cl, empty, steps, opts)
	var refused *RolloutRefusedError
	if errors.As(err, &refused) {
		var rest []*cluster.Step
		for _, s := range steps {
			if !s.RollsControlPlane {
				rest = append(rest, s)
			}
		}
		opts.AllowRollout = nil
		if err := Apply(ctx, cl, empty, rest, opts); err != nil {
			return err
		}
	} else if err != nil {
		return err
	}
	if opts.DryRun {
		return nil
	}
	if err := cl.Workload.DeleteCertificates(ctx); err != nil {
		return err
	}
	if refused != nil {
		return refused
	}
	return nil
}
