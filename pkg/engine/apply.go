package engine

import (
	"cmp"
	"context"
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/eksa-metrics/eksa-metrics/pkg/cluster"
	"github.com/eksa-metrics/eksa-metrics/pkg/render"
	"github.com/eksa-metrics/eksa-metrics/pkg/templates"
)

// Plan compares a render with the live clusters: one step per object (create,
// update, unchanged, edit, skip), and a prune step for every object
// eksa-metrics created for this cluster that the render no longer holds.
func Plan(ctx context.Context, cl *Clusters, r *render.Result) ([]*cluster.Step, error) {
	return applier(cl, r).Plan(ctx)
}

// PlanCertificates says which certificates apply writes into the workload
// cluster, where the proxies run (tls.certificates: eksa-metrics).
func PlanCertificates(ctx context.Context, cl *Clusters, r *render.Result) ([]*cluster.CertificateStep, error) {
	return cl.Workload.PlanCertificates(ctx, r.Config, time.Now())
}

func applier(cl *Clusters, r *render.Result) *cluster.Applier {
	return &cluster.Applier{Management: cl.Management, Workload: cl.Workload, Result: r}
}

// RollsControlPlane reports whether a plan changes the KubeadmControlPlane,
// which replaces every control-plane machine.
func RollsControlPlane(steps []*cluster.Step) bool {
	for _, s := range steps {
		if s.RollsControlPlane {
			return true
		}
	}
	return false
}

// ApplyOptions control Apply.
type ApplyOptions struct {
	// DryRun sends every request with dryRun=All.
	DryRun bool
	// ForceConflicts takes over fields other field managers own.
	ForceConflicts bool
	// AllowRollout is the control-plane rollout gate: a plan that replaces
	// control-plane machines goes ahead only when it returns true. nil
	// refuses. A server dry run replaces nothing and needs no gate.
	AllowRollout func(steps []*cluster.Step) (bool, error)
	// Report receives an event per object written.
	Report cluster.Reporter
	// Certificates (from PlanCertificates) are written before the objects,
	// so that the proxy pods find their Secrets. Those cert-manager has yet
	// to issue (tls.certificates: cert-manager) are waited for after the
	// objects, which hold its Certificates, for IssueTimeout (default
	// DefaultIssueTimeout); then the CA bundles are published.
	Certificates []*cluster.CertificateStep
	IssueTimeout time.Duration
}

// DefaultIssueTimeout is how long apply waits for cert-manager to issue the
// certificates (seconds, when it runs).
const DefaultIssueTimeout = 2 * time.Minute

// RolloutRefusedError is a plan that replaces control-plane machines, which
// the gate did not allow; nothing was changed.
type RolloutRefusedError struct{ Cluster string }

func (e *RolloutRefusedError) Error() string {
	return fmt.Sprintf("the plan changes KubeadmControlPlane eksa-system/%s, which replaces every control-plane machine; nothing was changed", e.Cluster)
}

// Apply executes a plan (from Plan) behind the rollout gate.
func Apply(ctx context.Context, cl *Clusters, r *render.Result, steps []*cluster.Step, opts ApplyOptions) error {
	if RollsControlPlane(steps) && !opts.DryRun {
		ok := false
		if opts.AllowRollout != nil {
			var err error
			if ok, err = opts.AllowRollout(steps); err != nil {
				return err
			}
		}
		if !ok {
			return &RolloutRefusedError{Cluster: r.Config.ClusterName}
		}
	}
	// Before anything is written: a scraper token Secret whose
	// ServiceAccount is missing is refused.
	a := applier(cl, r)
	if err := a.CheckTokenSecrets(ctx, steps); err != nil {
		return err
	}
	if err := cl.Workload.ExecuteCertificates(ctx, opts.Certificates, opts.DryRun, opts.Report); err != nil {
		return err
	}
	err := a.Execute(ctx, steps, cluster.ExecuteOptions{DryRun: opts.DryRun, ForceConflicts: opts.ForceConflicts, Report: opts.Report})
	if err == nil {
		err = cl.Workload.FinishCertificates(ctx, opts.Certificates, opts.DryRun, opts.Report)
	}
	if err != nil || opts.DryRun || !cluster.Pending(opts.Certificates) {
		return err
	}
	return awaitIssued(ctx, cl, r, cmp.Or(opts.IssueTimeout, DefaultIssueTimeout), opts.Report)
}

// awaitIssued waits until cert-manager has issued every certificate, then
// writes what remains (the CA bundles, HAProxy's restart).
func awaitIssued(ctx context.Context, cl *Clusters, r *render.Result, timeout time.Duration, report cluster.Reporter) error {
	var steps []*cluster.CertificateStep
	err := wait.PollUntilContextTimeout(ctx, time.Second, timeout, true, func(ctx context.Context) (bool, error) {
		var err error
		steps, err = PlanCertificates(ctx, cl, r)
		return err == nil && !cluster.Pending(steps), err
	})
	if wait.Interrupted(err) {
		var waiting []string
		for _, s := range steps {
			if s.Pending && s.Kind == "Secret" {
				waiting = append(waiting, s.Namespace+"/"+s.Name)
			}
		}
		return fmt.Errorf("cert-manager has not issued the Certificates %s in the %s within %s: kubectl describe certificate -n <namespace> <name> there says why (is cert-manager running, and are the Issuers %s and %s in that namespace Ready?); run apply again once they are Ready",
			strings.Join(waiting, ", "), cl.Workload, timeout, templates.SelfSignedIssuer, templates.CAIssuer)
	}
	if err != nil {
		return err
	}
	return cl.Workload.ExecuteCertificates(ctx, steps, false, report)
}

// Wait blocks until what the plan changed is ready (DaemonSets first, then
// the control-plane rollout), reporting status changes. A reconciler calls
// cluster.Ready on the steps' Awaited objects instead.
func Wait(ctx context.Context, cl *Clusters, r *render.Result, steps []*cluster.Step, timeout, interval time.Duration, report cluster.Reporter) error {
	return applier(cl, r).Wait(ctx, steps, timeout, interval, report)
}
