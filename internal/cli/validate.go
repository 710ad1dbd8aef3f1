package cli

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"github.com/spf13/cobra"

	"github.com/eksa-metrics/eksa-metrics/pkg/render"
	"github.com/eksa-metrics/eksa-metrics/pkg/spec"
	"github.com/eksa-metrics/eksa-metrics/pkg/validate"
)

// ValidateOptions are the flags of validate.
type ValidateOptions struct {
	f *Factory

	Filename           string
	From               string
	Kubeconfig         string
	Context            string
	WorkloadKubeconfig string
	Output             string
	Skip               []string
	Strict             bool
	CAPIAPIVersion     string

	WrapTransport func(http.RoundTripper) http.RoundTripper
}

// validateFailedError is a validation with failing checks (exit 3).
type validateFailedError struct{ failed int }

func (e *validateFailedError) Error() string {
	return fmt.Sprintf("%d check(s) failed; see the remediation lines above", e.failed)
}

// NewCmdValidate builds `eksa-metrics validate`.
func NewCmdValidate(f *Factory, runF func(*ValidateOptions) error) *cobra.Command {
	o := &ValidateOptions{f: f}
	cmd := &cobra.Command{
		Use:   "validate -f cluster.yaml [--from old.yaml] [--kubeconfig K] [-o text|json|junit]",
		Short: "Pre-upgrade checks for CI: the spec, versions, flags, RBAC, the upgrade diff and live drift",
		Long: `Run named checks, each with a result (pass, warn, fail, skipped) and, when not
passing, a remediation. Offline by default; --from compares with the spec of the
base branch (an upgrade pull request); --kubeconfig adds the live checks.
Exit 0 when nothing fails (warnings fail only with --strict), 3 when a check
fails, 1 when a check could not run.`,
		Example: `  eksa-metrics validate -f clusters/prod.yaml --from base/clusters/prod.yaml -o junit > report.xml`,
		Args:    noArgs,
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
	fl.StringVarP(&o.Filename, "filename", "f", "", "cluster spec file with a metrics section (- for stdin)")
	fl.StringVar(&o.From, "from", "", "the same spec before the change (the base branch), for the upgrade checks")
	fl.StringVar(&o.Kubeconfig, "kubeconfig", "", "management cluster kubeconfig, for the live checks")
	fl.StringVar(&o.Context, "context", "", "context in --kubeconfig")
	fl.StringVar(&o.WorkloadKubeconfig, "workload-kubeconfig", "", "kubeconfig of the workload cluster (default: read from the management cluster)")
	fl.StringVarP(&o.Output, "output", "o", "text", "text, json or junit")
	fl.StringSliceVar(&o.Skip, "skip", nil, "checks to skip, by name (repeatable)")
	fl.BoolVar(&o.Strict, "strict", false, "fail on warnings too")
	fl.StringVar(&o.CAPIAPIVersion, "capi-api-version", "", "KubeadmControlPlane API version when the spec has no eksaVersion")
	return cmd
}

// Validate checks flag combinations only.
func (o *ValidateOptions) Validate() error {
	if o.Filename == "" {
		return usageErrorf("-f/--filename is required")
	}
	switch o.Output {
	case "text", "json", "junit":
	default:
		return usageErrorf("-o %q is not one of text, json, junit", o.Output)
	}
	known := map[string]bool{}
	var names []string
	for _, c := range validate.Checks() {
		known[c.Name] = true
		names = append(names, c.Name)
	}
	for _, s := range o.Skip {
		if !known[s] {
			return usageErrorf("--skip %q is not a check; checks: %s", s, strings.Join(names, ", "))
		}
	}
	if o.From != "" && o.From == o.Filename {
		return usageErrorf("--from and -f name the same file")
	}
	return nil
}

// Run loads, runs the checks, reports and sets the exit code.
func (o *ValidateOptions) Run(ctx context.Context) error {
	if ctx == nil {
		ctx = context.Background()
	}
	opts := spec.Options{CAPIAPIVersion: o.CAPIAPIVersion}
	in := &validate.Input{Path: o.Filename}
	in.File, in.Result, in.LoadErr, in.RenderErr = o.load(o.Filename, opts)
	if o.From != "" {
		var lerr, rerr error
		_, in.Old, lerr, rerr = o.load(o.From, opts)
		in.OldPath = o.From
		if in.OldErr = lerr; in.OldErr == nil {
			in.OldErr = rerr
		}
	}
	if o.Kubeconfig != "" && in.Result != nil {
		mgmt, workload, err := connectClusters(ctx, clusterFlags{o.Kubeconfig, o.Context, o.WorkloadKubeconfig, o.WrapTransport}, in.Result.Config.ClusterName, in.Result.Config.Management)
		if err != nil {
			return err
		}
		in.Management, in.Workload = mgmt, workload
	}
	skip := map[string]bool{}
	for _, s := range o.Skip {
		skip[s] = true
	}
	results := validate.Run(ctx, in, skip)
	out := o.f.IOStreams.Out
	var err error
	switch o.Output {
	case "json":
		err = validate.WriteJSON(out, results)
	case "junit":
		err = validate.WriteJUnit(out, "eksa-metrics validate "+o.Filename, results)
	default:
		err = validate.WriteText(out, results)
	}
	if err != nil {
		return err
	}
	s := validate.Summary(results)
	failed := s[validate.Fail]
	if o.Strict {
		failed += s[validate.Warn]
	}
	switch {
	case failed > 0:
		return &validateFailedError{failed}
	case s[validate.Error] > 0:
		return fmt.Errorf("%d check(s) could not run; see the lines marked ❗", s[validate.Error])
	}
	return nil
}

func (o *ValidateOptions) load(name string, opts spec.Options) (*spec.File, *render.Result, error, error) {
	rc, display, err := o.f.openInput(name)
	if err != nil {
		return nil, nil, &spec.InvalidError{Problems: []spec.Problem{{File: name, Detail: "cannot open: " + err.Error()}}}, nil
	}
	defer rc.Close()
	f, err := spec.Load(display, rc)
	if err != nil {
		return nil, nil, err, nil
	}
	r, err := render.Render(f, opts)
	return f, r, nil, err
}
