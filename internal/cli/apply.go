package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"golang.org/x/term"

	metricsv1alpha1 "github.com/eksa-metrics/eksa-metrics/pkg/apis/metrics/v1alpha1"
	"github.com/eksa-metrics/eksa-metrics/pkg/cluster"
	"github.com/eksa-metrics/eksa-metrics/pkg/engine"
	"github.com/eksa-metrics/eksa-metrics/pkg/safetext"
	"github.com/eksa-metrics/eksa-metrics/pkg/spec"
)

// ApplyOptions are the flags of apply.
type ApplyOptions struct {
	f *Factory

	Filename string
	ClusterFlags
	AllowControlPlaneRollout bool
	DryRun                   string
	Diff                     bool
	ForceConflicts           bool
	Wait                     bool
	Timeout                  time.Duration
	// Uninstall takes back everything eksa-metrics applied to the spec's
	// Cluster (the spec may have no metrics section).
	Uninstall bool
	RenderFlags
}

// NewCmdApply builds `eksa-metrics apply`.
func NewCmdApply(f *Factory, runF func(*ApplyOptions) error) *cobra.Command {
	o := &ApplyOptions{f: f}
	cmd := &cobra.Command{
		Use:   "apply -f cluster.yaml --kubeconfig mgmt.kubeconfig",
		Short: "Render, show the plan, then server-side apply to the management and workload clusters",
		Long: `Render what the metrics section needs, compare it with the live clusters, print
the plan to stderr, then server-side apply it with field manager eksa-metrics.
The KubeadmControlPlane goes to the management cluster; everything else to the
workload cluster, whose kubeconfig is read from the Secret
eksa-system/<cluster>-kubeconfig unless --workload-kubeconfig is given.
A change that rolls control-plane machines needs --allow-control-plane-rollout
(or a yes typed on a terminal). A second identical apply writes nothing.`,
		Example: `  eksa-metrics apply -f cluster.yaml --kubeconfig mgmt.kubeconfig --dry-run=client --diff
  eksa-metrics apply -f cluster.yaml --kubeconfig mgmt.kubeconfig --allow-control-plane-rollout --wait`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.Validate(); err != nil {
				return err
			}
			if runF != nil {
				return runF(o)
			}
			return o.Run(cmd.Context())
		},
	}
	fl := cmd.Flags()
	fl.VarP(singleValue{&o.Filename}, "filename", "f", "cluster spec file with a metrics section (- for stdin); one cluster")
	o.ClusterFlags.bind(fl)
	fl.BoolVar(&o.AllowControlPlaneRollout, "allow-control-plane-rollout", false, "allow a KubeadmControlPlane change, which replaces every control-plane machine")
	fl.StringVar(&o.DryRun, "dry-run", "none", "none, client (print the plan only; a bare --dry-run means client, as in kubectl) or server (send every request with dryRun=All); give the value with =")
	fl.Lookup("dry-run").NoOptDefVal = "client"
	fl.BoolVar(&o.Diff, "diff", false, "show the field-level changes in the plan")
	fl.BoolVar(&o.ForceConflicts, "force-conflicts", false, "take over fields that other field managers own")
	fl.BoolVar(&o.Wait, "wait", false, "wait for changed DaemonSets and a KubeadmControlPlane rollout")
	fl.DurationVar(&o.Timeout, "timeout", 30*time.Minute, "how long --wait waits")
	fl.BoolVar(&o.Uninstall, "uninstall", false, "take back everything eksa-metrics applied to the spec's cluster: objects, certificates, KubeadmControlPlane items, edits (the spec may have no metrics section)")
	o.RenderFlags.bind(fl)
	return cmd
}

// Validate checks flag combinations only.
func (o *ApplyOptions) Validate() error {
	if o.Filename == "" {
		return usageErrorf("-f/--filename is required")
	}
	switch o.DryRun {
	case "none", "client", "server":
	default:
		return usageErrorf("--dry-run %q is not one of none, client, server", o.DryRun)
	}
	if o.Timeout <= 0 {
		return usageErrorf("--timeout must be positive")
	}
	return nil
}

// Run renders, plans, asks, applies and waits.
func (o *ApplyOptions) Run(ctx context.Context) error {
	if ctx == nil {
		ctx = context.Background()
	}
	errOut := o.f.IOStreams.ErrOut
	if st, err := os.Stat(o.Filename); o.Filename != "-" && err == nil && st.IsDir() {
		return usageErrorf("-f %s is a directory: apply works on one cluster spec (it plans and applies that cluster's objects), so name its file, e.g. -f %s; to render a fleet, use generate -f %s -o kustomize --output-dir DIR",
			o.Filename, filepath.Join(o.Filename, "<cluster>.yaml"), o.Filename)
	}
	opts, err := o.RenderFlags.options()
	if err != nil {
		return err
	}
	if o.Uninstall {
		return o.runUninstall(ctx, opts)
	}
	r, err := loadAndRender(o.f, o.Filename, opts)
	if err != nil {
		return noMetricsSection(o.Filename, err)
	}
	cl, err := engine.Connect(ctx, o.source(o.f), r.Config.ClusterName, r.Config.Management)
	if err != nil {
		return err
	}
	pass, err := engine.NewPass(ctx, cl, r)
	if err != nil {
		return err
	}
	printPlan(errOut, r.Config.ClusterName, pass.Steps, o.Diff)
	issuer := metricsv1alpha1.CertificatesEKSAMetrics
	if r.Config.CertManager {
		issuer = metricsv1alpha1.CertificatesCertManager
	}
	printCertificates(errOut, pass.Certificates, issuer)
	if o.DryRun == "client" {
		fmt.Fprintln(errOut, "Dry run (client): nothing was sent.")
		return nil
	}
	report := func(e cluster.Event) { fmt.Fprintln(errOut, describe(e)) }
	err = pass.Apply(ctx, engine.ApplyOptions{DryRun: o.DryRun == "server", ForceConflicts: o.ForceConflicts, Report: report,
		AllowRollout: o.allowRollout(r.Config.ClusterName)})
	var refused *engine.RolloutRefusedError
	if errors.As(err, &refused) {
		return usageErrorf("%v. Rerun with --allow-control-plane-rollout when a rollout is acceptable", err)
	}
	if err != nil {
		return err
	}
	if o.DryRun == "server" {
		fmt.Fprintln(errOut, "Dry run (server): the API servers accepted every request; nothing was persisted.")
		return nil
	}
	if o.Wait {
		return pass.Wait(ctx, engine.WaitOptions{Timeout: o.Timeout, Interval: 2 * time.Second, Report: report})
	}
	return nil
}

// ClusterFlags are the flags that reach the clusters, shared by apply,
// verify and validate.
type ClusterFlags struct {
	Kubeconfig         string
	Context            string
	WorkloadKubeconfig string
	// InsecureKubeconfigSecrets trusts the workload kubeconfig read from the
	// management cluster's Secret like one of the operator's files.
	InsecureKubeconfigSecrets bool
	// WrapTransport wraps every request to both clusters (tests).
	WrapTransport func(http.RoundTripper) http.RoundTripper
}

func (c *ClusterFlags) bind(fl *pflag.FlagSet) {
	fl.StringVar(&c.Kubeconfig, "kubeconfig", "", "kubeconfig of the management cluster (default: $KUBECONFIG, else ~/.kube/config)")
	fl.StringVar(&c.Context, "context", "", "context in --kubeconfig (default: its current context)")
	fl.StringVar(&c.WorkloadKubeconfig, "workload-kubeconfig", "", "kubeconfig of the workload cluster (default: read from the management cluster)")
	fl.BoolVar(&c.InsecureKubeconfigSecrets, "insecure-kubeconfig-secrets", false, secretsFlagHelp)
}

// secretsFlagHelp is the help of --insecure-kubeconfig-secrets, on apply,
// verify, validate and controller run.
const secretsFlagHelp = "trust workload kubeconfigs read from Secrets eksa-system/<cluster>-kubeconfig like your own: allow their exec and auth-provider plugins, tokenFile and local file paths (off by default: whoever can write those Secrets could run commands here or take this machine's credentials)"

// source is where the engine finds the clusters; requests are logged from
// -v 6 on.
func (c *ClusterFlags) source(f *Factory) engine.ClusterSource {
	wrap := c.WrapTransport
	if f.Verbosity >= 6 {
		wrap = chainWrap(wrap, f.requestLogger())
	}
	return engine.ClusterSource{Kubeconfig: c.Kubeconfig, Context: c.Context, WorkloadKubeconfig: c.WorkloadKubeconfig,
		TrustKubeconfigSecrets: c.InsecureKubeconfigSecrets, WrapTransport: wrap}
}

// allowRollout is the rollout gate of the command line: the flag, or a yes
// typed on a terminal.
func (o *ApplyOptions) allowRollout(name string) func([]*cluster.Step) (bool, error) {
	return func([]*cluster.Step) (bool, error) {
		if o.AllowControlPlaneRollout {
			return true, nil
		}
		f, ok := o.f.IOStreams.In.(*os.File)
		if !ok || !term.IsTerminal(int(f.Fd())) {
			return false, nil
		}
		fmt.Fprintf(o.f.IOStreams.ErrOut, "This replaces every control-plane machine of cluster %q. Continue? [y/N] ", name)
		line, _ := bufio.NewReader(f).ReadString('\n')
		if answer := strings.TrimSpace(line); strings.EqualFold(answer, "y") || strings.EqualFold(answer, "yes") {
			return true, nil
		}
		return false, errors.New("stopped: the control-plane rollout was not confirmed; nothing was changed")
	}
}

// printPlan prints the plan. Names are escaped (safetext.Escape) and diff
// lines are printable JSON (safetext.JSON): a value that anyone who may
// write a live object put there cannot start a line or reorder the text.
func printPlan(w io.Writer, name string, steps []*cluster.Step, showDiff bool) {
	counts := map[cluster.Action]int{}
	fmt.Fprintf(w, "Plan for cluster %q:\n", name)
	marks := map[cluster.Action]string{cluster.Create: "+", cluster.Update: "~", cluster.Edit: "~", cluster.Unchanged: "=", cluster.Skip: "·", cluster.Prune: "-"}
	for _, s := range steps {
		counts[s.Action]++
		line := fmt.Sprintf("  %s %s %s (%s)", marks[s.Action], s.Action, safetext.Escape(s.Name()), s.Cluster)
		if s.Rollout != "" {
			line += ": " + s.Rollout
		}
		fmt.Fprintln(w, line)
		if showDiff && s.Action != cluster.Unchanged && s.Action != cluster.Create && s.Action != cluster.Skip {
			for _, d := range s.Diff {
				fmt.Fprintf(w, "      %s\n", d) // printable: cluster.Step.Diff
			}
		}
	}
	fmt.Fprintf(w, "%d to create, %d to change, %d to delete, %d unchanged, %d not installed.\n", counts[cluster.Create], counts[cluster.Update]+counts[cluster.Edit], counts[cluster.Prune], counts[cluster.Unchanged], counts[cluster.Skip])
}

// printCertificates lists the serving certificates' Secrets and ConfigMaps
// (never their content).
func printCertificates(w io.Writer, steps []*cluster.CertificateStep, issuer string) {
	if len(steps) == 0 {
		return
	}
	fmt.Fprintf(w, "Serving certificates (tls.certificates: %s):\n", issuer)
	marks := map[cluster.Action]string{cluster.Create: "+", cluster.Update: "~", cluster.Unchanged: "=", cluster.Prune: "-"}
	for _, s := range steps {
		action := string(s.Action)
		if s.Pending {
			action = "await"
		}
		line := fmt.Sprintf("  %s %s %s", marks[s.Action], action, safetext.Escape(s.String()))
		if s.Why != "" {
			line += ": " + safetext.Escape(s.Why)
		}
		fmt.Fprintln(w, line)
	}
}

// singleValue is a string flag that may be given once: a second -f would
// otherwise silently replace the first.
type singleValue struct{ p *string }

func (v singleValue) String() string {
	if v.p == nil {
		return ""
	}
	return *v.p
}

func (v singleValue) Set(s string) error {
	if *v.p != "" {
		return fmt.Errorf("given twice (%q and %q): give it once, the second would silently replace the first", *v.p, s)
	}
	*v.p = s
	return nil
}

func (v singleValue) Type() string { return "string" }

// describe puts an event in words for a person; the object and the message
// (a status may quote a live condition) are escaped (safetext.Escape).
func describe(e cluster.Event) string {
	e.Object, e.Message = safetext.Escape(e.Object), safetext.Escape(e.Message)
	switch e.Action {
	case "waiting":
		return fmt.Sprintf("waiting for %s: %s", e.Object, e.Message)
	case "ready":
		return fmt.Sprintf("%s is ready: %s", e.Object, e.Message)
	case "skipped":
		return fmt.Sprintf("%s not validated in the %s: %s", e.Object, e.Cluster, e.Message)
	}
	return fmt.Sprintf("%s %s in the %s", e.Object, e.Action, e.Cluster)
}

// RenderFlags are the flags of every command that renders.
type RenderFlags struct {
	CAPIAPIVersion  string
	BundlesOverride string
}

// bind binds --capi-api-version (checked where it is parsed) and
// --bundles-override.
func (r *RenderFlags) bind(fl *pflag.FlagSet) {
	fl.Var(capiVersion{&r.CAPIAPIVersion}, "capi-api-version", "KubeadmControlPlane API version when the spec has no eksaVersion: v1beta1 (EKS-A <= v0.24) or v1beta2 (default)")
	fl.StringVar(&r.BundlesOverride, "bundles-override", "", "an EKS Anywhere Bundles manifest (the file eksctl anywhere takes under this name): the kube-rbac-proxy and HAProxy images come from it where spec.images names none")
}

// options reads the bundles file, if any: a missing or invalid one is
// invalid input (exit 3), named with its line and field.
func (r *RenderFlags) options() (spec.Options, error) {
	opts := spec.Options{CAPIAPIVersion: r.CAPIAPIVersion, EKSAMetricsImage: defaultControllerImage()}
	if r.BundlesOverride == "" {
		return opts, nil
	}
	f, err := os.Open(r.BundlesOverride)
	if err != nil {
		detail := "cannot read the --bundles-override file: " + err.Error()
		if isNotExist(err) {
			detail = "no such file; check the --bundles-override path"
		}
		return opts, &spec.InvalidError{Problems: []spec.Problem{{File: r.BundlesOverride, Detail: detail}}}
	}
	defer f.Close()
	opts.Bundles, err = spec.LoadBundles(r.BundlesOverride, f)
	return opts, err
}

type capiVersion struct{ p *string }

func (v capiVersion) String() string {
	if v.p == nil {
		return ""
	}
	return *v.p
}

func (v capiVersion) Set(s string) error {
	if s != spec.CAPIv1beta1 && s != spec.CAPIv1beta2 {
		return fmt.Errorf("%q is not one of v1beta1, v1beta2", s)
	}
	*v.p = s
	return nil
}

func (v capiVersion) Type() string { return "string" }
