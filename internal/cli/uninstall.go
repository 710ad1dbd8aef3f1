package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	metricsv1alpha1 "github.com/eksa-metrics/eksa-metrics/pkg/apis/metrics/v1alpha1"
	"github.com/eksa-metrics/eksa-metrics/pkg/cluster"
	"github.com/eksa-metrics/eksa-metrics/pkg/engine"
	"github.com/eksa-metrics/eksa-metrics/pkg/render"
	"github.com/eksa-metrics/eksa-metrics/pkg/spec"
)

// renderNothing is the render of nothing of eksa-metrics' for the Cluster of
// a spec (render.Nothing): what the clusters hold once eksa-metrics is
// uninstalled. A spec whose only problem is that it has no metrics section
// (the spec after the section is removed) is read with a placeholder
// section, which only gives the render its Cluster's facts (name,
// management or workload, provider, releases); nothing of it is applied.
func renderNothing(f *Factory, filename string, opts spec.Options) (*render.Result, error) {
	raw, name, err := readInput(f, filename)
	if err != nil {
		return nil, err
	}
	file, err := spec.Load(name, bytes.NewReader(raw))
	var ie *spec.InvalidError
	if errors.As(err, &ie) && ie.NoMetricsSection != "" {
		placeholder := fmt.Sprintf("\n---\napiVersion: %s\nkind: %s\nmetadata:\n  name: %s\nspec:\n  scrapers: [{kind: ServiceAccount, name: placeholder, namespace: kube-system}]\n",
			metricsv1alpha1.APIVersion, metricsv1alpha1.Kind, ie.NoMetricsSection)
		file, err = spec.Load(name, bytes.NewReader(append(append([]byte{}, raw...), placeholder...)))
	}
	if err != nil {
		return nil, err
	}
	r, err := render.RenderFile(file, opts)
	if err != nil {
		return nil, err
	}
	return render.Nothing(r), nil
}

// noMetricsSection is the error of apply on a spec without a metrics
// section: it names the way to uninstall rather than doing it unasked.
func noMetricsSection(filename string, err error) error {
	var ie *spec.InvalidError
	if !errors.As(err, &ie) || ie.NoMetricsSection == "" {
		return err
	}
	return usageErrorf("%s has no metrics section, so there is nothing to apply to cluster %q. To take back everything eksa-metrics applied to it (its objects, the serving certificates, its KubeadmControlPlane items, its edits of kube-proxy and the management Deployments), run: eksa-metrics apply -f %s --uninstall (with --dry-run=client first to see the plan)",
		filename, ie.NoMetricsSection, filename)
}

// runUninstall plans and performs the release of everything eksa-metrics
// applied to the spec's Cluster, as the controller does when a
// MetricsConfig goes: the plan first; a control-plane rollout (giving the
// KubeadmControlPlane items back) only with the rollout gate, and nothing
// is written when the gate refuses.
func (o *ApplyOptions) runUninstall(ctx context.Context, opts spec.Options) error {
	errOut := o.f.IOStreams.ErrOut
	r, err := renderNothing(o.f, o.Filename, opts)
	if err != nil {
		return err
	}
	cl, err := engine.Connect(ctx, o.source(o.f), r.Config.ClusterName, r.Config.Management)
	if err != nil {
		return err
	}
	steps, err := engine.PlanRelease(ctx, cl, r)
	if err != nil {
		return err
	}
	printPlan(errOut, r.Config.ClusterName, steps, o.Diff)
	fmt.Fprintln(errOut, "Serving certificates: every Secret and CA bundle eksa-metrics wrote, and every Secret cert-manager issued from its Certificates, is deleted after the objects.")
	if o.DryRun == "client" {
		fmt.Fprintln(errOut, "Dry run (client): nothing was sent.")
		return nil
	}
	if engine.RollsControlPlane(steps) && o.DryRun != "server" {
		ok, err := o.allowRollout(r.Config.ClusterName)(steps)
		if err != nil {
			return err
		}
		if !ok {
			return usageErrorf("%v. Rerun with --allow-control-plane-rollout when a rollout is acceptable", &engine.RolloutRefusedError{Cluster: r.Config.ClusterName})
		}
	}
	report := func(e cluster.Event) { fmt.Fprintln(errOut, describe(e)) }
	err = engine.ReleaseSteps(ctx, cl, r, steps, engine.ApplyOptions{DryRun: o.DryRun == "server", ForceConflicts: o.ForceConflicts, Report: report,
		AllowRollout: func([]*cluster.Step) (bool, error) { return true, nil }})
	if err != nil {
		return err
	}
	if o.DryRun == "server" {
		fmt.Fprintln(errOut, "Dry run (server): the API servers accepted every request; nothing was persisted (the certificates were not checked).")
		return nil
	}
	fmt.Fprintf(errOut, "Nothing of eksa-metrics is left for cluster %q.\n", r.Config.ClusterName)
	return nil
}
