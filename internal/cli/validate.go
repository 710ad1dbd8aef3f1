package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/eksa-metrics/eksa-metrics/pkg/engine"
	"github.com/eksa-metrics/eksa-metrics/pkg/render"
	"github.com/eksa-metrics/eksa-metrics/pkg/spec"
	"github.com/eksa-metrics/eksa-metrics/pkg/validate"
)

// ValidateOptions are the flags of validate.
type ValidateOptions struct {
	f *Factory

	Filenames []string
	From      string
	ClusterFlags
	Output string
	Skip   []string
	Strict bool
	RenderFlags
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
		Use:   "validate -f cluster.yaml|DIR [--from old.yaml|BASE_DIR] [--kubeconfig K] [-o text|json|junit]",
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
	fl.StringArrayVarP(&o.Filenames, "filename", "f", nil, "cluster spec file with a metrics section (- for stdin); repeat it, or name a directory, for a fleet")
	fl.Var(singleValue{&o.From}, "from", "the same spec before the change (the base branch), for the upgrade checks; with -f DIR, the same directory on the base branch")
	o.ClusterFlags.bind(fl)
	fl.StringVarP(&o.Output, "output", "o", "text", "text, json or junit")
	fl.StringSliceVar(&o.Skip, "skip", nil, "checks to skip, by name (repeatable)")
	fl.BoolVar(&o.Strict, "strict", false, "fail on warnings too")
	o.RenderFlags.bind(fl)
	return cmd
}

// Validate checks flag combinations only.
func (o *ValidateOptions) Validate() error {
	if len(o.Filenames) == 0 {
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
		if s == "spec-loads" {
			// Skipped, an invalid spec would pass with nothing checked.
			return usageErrorf("--skip spec-loads: every other check needs the spec loaded, so it cannot be skipped; fix the problems it lists")
		}
	}
	if o.From != "" && len(o.Filenames) != 1 {
		return usageErrorf("--from compares one spec with its old version: give one -f")
	}
	if o.From != "" && o.From == o.Filenames[0] {
		return usageErrorf("--from and -f name the same file")
	}
	return nil
}

// Run loads, runs the checks, reports and sets the exit code.
func (o *ValidateOptions) Run(ctx context.Context) error {
	if ctx == nil {
		ctx = context.Background()
	}
	if err := refuseOutputInInputs(o.Filenames, ""); err != nil {
		return err
	}
	files, err := expandInputs(o.Filenames)
	if err != nil {
		return err
	}
	if len(files) != 1 || files[0] != o.Filenames[0] {
		if len(files) == 0 {
			where := strings.Join(o.Filenames, ", ")
			detail := "no cluster spec (a YAML file with kind: Cluster) found; nothing was validated"
			if o.Output != "text" {
				// CI publishes the report: one failed case, not an empty file.
				if err := o.writeFleet([]validate.FileReport{{File: where, Results: []validate.Result{{Name: "spec-loads", Status: validate.Fail, Message: detail}}}}); err != nil {
					return err
				}
			}
			return &spec.InvalidError{Problems: []spec.Problem{{File: where, Detail: detail}}}
		}
		return o.runFleet(ctx, files)
	}
	opts, err := o.RenderFlags.options()
	if err != nil {
		return err
	}
	in := o.input(files[0], o.From, opts)
	if o.Kubeconfig != "" && in.Result != nil {
		// An unreachable cluster does not hide the offline results: the online
		// checks are reported as not run.
		cl, err := engine.Connect(ctx, o.source(o.f), in.Result.Config.ClusterName, in.Result.Config.Management)
		if err != nil {
			in.OnlineErr = err
		} else {
			in.Management, in.Workload = cl.Management, cl.Workload
		}
	}
	results := validate.Run(ctx, in, o.skipSet())
	if o.Strict {
		results = validate.Strict(results)
	}
	out := o.f.IOStreams.Out
	switch o.Output {
	case "json":
		err = validate.WriteJSON(out, files[0], results)
	case "junit":
		err = validate.WriteJUnit(out, "eksa-metrics validate "+files[0], results)
	default:
		err = validate.WriteText(out, results)
	}
	if err != nil {
		return err
	}
	return o.outcome(results)
}

// input loads the spec at path and, when from is set, its version on the
// base branch for the upgrade checks: a base without a metrics section is
// the spec before eksa-metrics is adopted (nothing was rendered before), a
// spec without one whose base has one is the section removed (apply
// --uninstall takes everything back).
func (o *ValidateOptions) input(path, from string, opts spec.Options) *validate.Input {
	in := &validate.Input{Path: path}
	in.File, in.Result, in.LoadErr, in.RenderErr = o.load(path, opts)
	if from != "" {
		o.addFrom(in, from, opts)
	}
	return in
}

// addFrom gives a loaded input its base-branch version (see input).
func (o *ValidateOptions) addFrom(in *validate.Input, from string, opts spec.Options) {
	in.OldPath = from
	if in.OldErr = fromFileProblem(from); in.OldErr == nil {
		var lerr, rerr error
		_, in.Old, lerr, rerr = o.load(from, opts)
		if in.OldErr = lerr; in.OldErr == nil {
			in.OldErr = rerr
		}
		var ie *spec.InvalidError
		if errors.As(lerr, &ie) && ie.NoMetricsSection != "" && in.Result != nil {
			nothingBefore(in, ie.NoMetricsSection, "nothing of eksa-metrics was applied before")
		}
	}
	var ie *spec.InvalidError
	if errors.As(in.LoadErr, &ie) && ie.NoMetricsSection != "" && in.Old != nil && in.OldNothing == "" {
		if r, err := renderNothing(o.f, in.Path, opts); err == nil {
			in.Result, in.LoadErr = r, nil
			in.Nothing = "no metrics section: eksa-metrics apply --uninstall takes back everything of eksa-metrics"
		}
	}
}

// markNew makes a loaded input the spec of a cluster new in the change (a
// cluster -f DIR has and --from DIR has not): nothing of eksa-metrics was
// applied before.
func markNew(in *validate.Input) {
	if in.Result != nil {
		in.OldPath = "(none)"
		nothingBefore(in, in.Result.Config.ClusterName, "the cluster's spec is new in --from's tree: nothing of eksa-metrics was applied before")
	}
}

// nothingBefore makes the base of in, a spec that renders, "nothing of
// eksa-metrics applied" to cluster, saying why.
func nothingBefore(in *validate.Input, cluster, why string) {
	in.Old, in.OldErr = render.Nothing(in.Result), nil
	in.Old.Config = &spec.Config{ClusterName: cluster}
	in.OldNothing = why
}

// writeFleet writes a fleet's reports in the -o format.
func (o *ValidateOptions) writeFleet(reports []validate.FileReport) error {
	switch o.Output {
	case "json":
		return validate.WriteFleetJSON(o.f.IOStreams.Out, reports)
	case "junit":
		return validate.WriteFleetJUnit(o.f.IOStreams.Out, reports)
	default:
		return validate.WriteFleetText(o.f.IOStreams.Out, reports)
	}
}

func (o *ValidateOptions) skipSet() map[string]bool {
	skip := map[string]bool{}
	for _, s := range o.Skip {
		skip[s] = true
	}
	return skip
}

// outcome turns results into the exit status.
func (o *ValidateOptions) outcome(results []validate.Result) error {
	s := validate.Summary(results)
	switch {
	case s.Fail > 0:
		return &validateFailedError{s.Fail}
	case s.Error > 0:
		return fmt.Errorf("%d check(s) could not run; see the lines marked ❗", s.Error)
	}
	return nil
}

// runFleet validates several specs offline, in parallel (bounded by
// GOMAXPROCS); the report lists the files in input order.
func (o *ValidateOptions) runFleet(ctx context.Context, files []string) error {
	if o.Kubeconfig != "" {
		return usageErrorf("--kubeconfig checks one cluster: give one -f")
	}
	opts, err := o.RenderFlags.options()
	if err != nil {
		return err
	}
	var base *fromTree
	if o.From != "" {
		if base, err = o.fromTree(files); err != nil {
			return err
		}
	}
	inputs := make([]*validate.Input, len(files))
	engine.Parallel(ctx, len(files), 0, func(i int) {
		from := ""
		if base != nil {
			from = base.byPath[files[i]]
		}
		inputs[i] = o.input(files[i], from, opts)
	})
	var removed []validate.FileReport
	if base != nil {
		removed = o.pairByName(ctx, base, inputs, opts)
	}
	// Each cluster needs one spec, as generate holds it: the first in
	// input order stands, the next fails to load.
	owner := map[string]string{}
	for _, in := range inputs {
		if in.Result == nil {
			continue
		}
		name := in.Result.Config.ClusterName
		if prev, dup := owner[name]; dup {
			in.Result, in.LoadErr = nil, &spec.InvalidError{Problems: []spec.Problem{{File: in.Path, Field: "metadata.name", Detail: fmt.Sprintf(
				"cluster %q is also defined in %s, which comes first; each cluster needs one spec (generate writes the first and refuses this one)", name, prev)}}}
			continue
		}
		owner[name] = in.Path
	}
	reports := make([]validate.FileReport, len(files))
	engine.Parallel(ctx, len(files), 0, func(i int) {
		in := inputs[i]
		// A fleet adopts eksa-metrics cluster by cluster: a spec whose only
		// problem is that it has no metrics section yet is reported as not
		// adopted (skipped), not as a failure; one -f FILE still fails.
		var ie *spec.InvalidError
		if errors.As(in.LoadErr, &ie) && ie.NoMetricsSection != "" {
			reports[i] = validate.NotAdoptedReport(files[i], ie.NoMetricsSection)
			return
		}
		results := validate.Run(ctx, in, o.skipSet())
		if o.Strict {
			results = validate.Strict(results)
		}
		reports[i] = validate.FileReport{File: files[i], Results: results}
	})
	reports = append(reports, removed...)
	var all []validate.Result
	adopted := 0
	for _, r := range reports {
		all = append(all, r.Results...)
		if !r.NotAdopted() {
			adopted++
		}
	}
	if err := o.writeFleet(reports); err != nil {
		return err
	}
	if adopted == 0 {
		return &spec.InvalidError{Problems: []spec.Problem{{File: strings.Join(o.Filenames, ", "),
			Detail: "no spec has a metrics section, so nothing was validated: add one to the clusters to adopt (docs/reference.md)"}}}
	}
	return o.outcome(all)
}

// fromFileProblem says why --from cannot be read as one spec file (invalid
// input, which fails the upgrade-diff check: exit 3), naming the flag.
func fromFileProblem(name string) error {
	if name == "-" {
		return nil
	}
	st, err := os.Stat(name)
	detail := ""
	switch {
	case isNotExist(err):
		detail = "no such file; check the --from path (the -f spec's version on the base branch, e.g. from git show BASE:FILE)"
	case err != nil:
		detail = "cannot read the --from file: " + err.Error()
	case st.IsDir():
		detail = "is a directory; --from takes one file, the -f spec's version on the base branch"
	default:
		return nil
	}
	return &spec.InvalidError{Problems: []spec.Problem{{File: name, Detail: detail}}}
}

func (o *ValidateOptions) load(name string, opts spec.Options) (*spec.File, *render.Result, error, error) {
	f, err := loadFile(o.f, name)
	if err != nil {
		return nil, nil, err, nil
	}
	r, err := render.RenderFile(f, opts)
	return f, r, nil, err
}
