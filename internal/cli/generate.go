package cli

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/eksa-metrics/eksa-metrics/pkg/output"
	"github.com/eksa-metrics/eksa-metrics/pkg/render"
	"github.com/eksa-metrics/eksa-metrics/pkg/spec"
)

// GenerateOptions are the flags of generate.
type GenerateOptions struct {
	f *Factory

	Filenames []string
	Output    string
	OutputDir string
	Force     bool
	Prune     bool
	RenderFlags
}

// NewCmdGenerate builds `eksa-metrics generate`. runF replaces the work in tests.
func NewCmdGenerate(f *Factory, runF func(*GenerateOptions) error) *cobra.Command {
	o := &GenerateOptions{f: f}
	cmd := &cobra.Command{
		Use:   "generate -f cluster.yaml [-o yaml|json|kustomize --output-dir DIR]",
		Short: "Render everything the metrics section needs, offline",
		Long: `Render, offline, the objects that make every component of the cluster
scrapeable securely: the KubeadmControlPlane change, proxies, RBAC and scrape
configuration. Data goes to stdout (or --output-dir); warnings to stderr.`,
		Example: `  eksa-metrics generate -f cluster.yaml | kubectl apply --server-side --field-manager=eksa-metrics -f -
  eksa-metrics generate -f cluster.yaml -o kustomize --output-dir out/`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.Validate(); err != nil {
				return err
			}
			if runF != nil {
				return runF(o)
			}
			return o.Run()
		},
	}
	fl := cmd.Flags()
	fl.StringArrayVarP(&o.Filenames, "filename", "f", nil, "cluster spec file with a metrics section (- for stdin); repeat it, or name a directory, for a fleet (needs -o kustomize --output-dir)")
	fl.StringVarP(&o.Output, "output", "o", "yaml", "output format: yaml, json or kustomize")
	fl.StringVar(&o.OutputDir, "output-dir", "", "directory for -o kustomize")
	fl.BoolVar(&o.Force, "force", false, "replace a non-empty --output-dir that eksa-metrics wrote before (never one holding other files)")
	fl.BoolVar(&o.Prune, "prune", false, "in a fleet, remove the directories eksa-metrics wrote for clusters no input defines any more")
	o.RenderFlags.bind(fl)
	return cmd
}

// Validate checks flag combinations only.
func (o *GenerateOptions) Validate() error {
	if len(o.Filenames) == 0 {
		return usageErrorf("-f/--filename is required (the cluster spec, or - for stdin)")
	}
	switch o.Output {
	case "yaml", "json":
		if o.OutputDir != "" {
			return usageErrorf("--output-dir goes with -o kustomize, not -o %s", o.Output)
		}
		for _, fl := range []struct {
			name, does string
			set        bool
		}{{"--force", "replaces an --output-dir that -o kustomize wrote before", o.Force}, {"--prune", "removes the cluster directories of a fleet's --output-dir", o.Prune}} {
			if fl.set {
				return usageErrorf("%s %s, but -o %s writes to stdout, where there is nothing to replace or remove: drop %s, or add -o kustomize --output-dir DIR", fl.name, fl.does, o.Output, fl.name)
			}
		}
	case "kustomize":
		if o.OutputDir == "" {
			return usageErrorf("-o kustomize needs --output-dir DIR")
		}
		if o.Prune && !o.Force {
			return usageErrorf("--prune removes directories: it needs --force")
		}
	default:
		return usageErrorf("-o %q is not one of yaml, json, kustomize", o.Output)
	}
	return nil
}

// Run loads, renders and writes: one spec to stdout or a directory, or a
// fleet (several files, or directories) to one directory per cluster.
func (o *GenerateOptions) Run() error {
	if err := refuseOutputInInputs(o.Filenames, o.OutputDir); err != nil {
		return err
	}
	if o.OutputDir != "" {
		if err := output.NoSymlinks(o.OutputDir); err != nil {
			return usageErrorf("%v", err)
		}
	}
	files, err := expandInputs(o.Filenames)
	if err != nil {
		return err
	}
	if len(files) != 1 || files[0] != o.Filenames[0] {
		if len(files) == 0 {
			return &spec.InvalidError{Problems: []spec.Problem{{File: strings.Join(o.Filenames, ", "), Detail: "no cluster spec (a YAML file with kind: Cluster) found"}}}
		}
		if o.Output != "kustomize" {
			return usageErrorf("several specs (%d from %s) are written as one directory per cluster: add -o kustomize --output-dir DIR", len(files), quoteList(o.Filenames))
		}
		return o.generateFleet(context.Background(), files)
	}
	opts, err := o.RenderFlags.options()
	if err != nil {
		return err
	}
	r, err := loadAndRender(o.f, files[0], opts)
	if err != nil {
		return err
	}
	out := o.f.IOStreams.Out
	switch o.Output {
	case "json":
		o.warnApplyOnly(r)
		return output.WriteJSON(out, r)
	case "kustomize":
		files, err := output.Files(r)
		if err != nil {
			return err
		}
		if err := output.WriteDir(o.OutputDir, files, output.WriteOptions{Force: o.Force, Cluster: r.Config.ClusterName, Inputs: o.Filenames}); err != nil {
			return err
		}
		fmt.Fprintf(o.f.IOStreams.ErrOut, "Wrote %d files to %s; read %s/PLAN.md before applying.\n", len(files), o.OutputDir, o.OutputDir)
		return nil
	}
	o.warnApplyOnly(r)
	return output.WriteYAML(out, r)
}

// refuseOutputInInputs refuses (a usage error) what makes a fleet read its
// own output as specs: a directory eksa-metrics wrote holds a cluster.yaml
// with kind: Cluster and no metrics section, so under a -f directory every
// later run would fail on it. An --output-dir inside a -f directory is
// refused before anything is written, and a -f directory that already holds
// one (a marker file) is refused by generate and validate alike.
func refuseOutputInInputs(inputs []string, outputDir string) error {
	for _, in := range inputs {
		if st, err := os.Stat(in); in == "-" || err != nil || !st.IsDir() {
			continue
		}
		if outputDir != "" && within(outputDir, in) {
			rp := realPath(in)
			return usageErrorf("--output-dir %s is inside the input directory -f %s: the next run would read the cluster.yaml files written there as cluster specs, and fail; choose an --output-dir outside %s (for example %s)",
				outputDir, in, in, filepath.Join(filepath.Dir(rp), filepath.Base(rp)+"-rendered"))
		}
		var found string
		_ = filepath.WalkDir(in, func(p string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() && d.Name() == output.MarkerFile {
				found = filepath.Dir(p)
				return fs.SkipAll
			}
			return nil // a read error is reported when the inputs are read
		})
		if found != "" {
			return usageErrorf("the input directory -f %s holds %s, which eksa-metrics generate wrote (it has a %s marker): its cluster.yaml is rendered output, not a cluster spec; move %s out of %s (generate's --output-dir belongs outside every -f directory), or name the spec files or directories with -f",
				in, found, output.MarkerFile, found, in)
		}
	}
	return nil
}

// within says whether p is dir or below it, through symbolic links too (p
// need not exist yet).
func within(p, dir string) bool {
	rel, err := filepath.Rel(realPath(dir), realPath(p))
	return err == nil && (rel == "." || filepath.IsLocal(rel))
}

// realPath is p made absolute with the symbolic links of its longest
// existing prefix resolved.
func realPath(p string) string {
	abs, err := filepath.Abs(p)
	if err != nil {
		return filepath.Clean(p)
	}
	rest := ""
	for cur := abs; ; {
		if r, err := filepath.EvalSymlinks(cur); err == nil {
			return filepath.Join(r, rest)
		}
		parent := filepath.Dir(cur)
		if parent == cur {
			return abs
		}
		rest = filepath.Join(filepath.Base(cur), rest)
		cur = parent
	}
}

// warnApplyOnly says what a stream on stdout cannot carry: the edits that
// only eksa-metrics apply makes (a Deployment's atomic container args, a
// field inside kube-proxy's config.conf).
func (o *GenerateOptions) warnApplyOnly(r *render.Result) {
	if n := len(r.ApplyOnly()); n > 0 {
		fmt.Fprintf(o.f.IOStreams.ErrOut, "Warning: %d change%s cannot be expressed as objects and %s left out of this output (%s); eksa-metrics apply makes them, or see PLAN.md of -o kustomize\n",
			n, plural(n), map[bool]string{true: "is", false: "are"}[n == 1], strings.Join(r.ApplyOnly(), "; "))
	}
}

// loadFile opens and loads one cluster file (- is standard input).
func loadFile(f *Factory, filename string) (*spec.File, error) {
	raw, name, err := readInput(f, filename)
	if err != nil {
		return nil, err
	}
	return spec.Load(name, bytes.NewReader(raw))
}

// readInput reads a -f file (- for stdin), up to one byte past
// spec.MaxFileSize (spec.Load refuses a larger one), and its name.
func readInput(f *Factory, filename string) ([]byte, string, error) {
	rc, name, err := f.openInput(filename)
	if err != nil {
		if isNotExist(err) {
			return nil, "", &spec.InvalidError{Problems: []spec.Problem{{File: filename, Detail: "no such file; check the -f path"}}}
		}
		return nil, "", fmt.Errorf("opening %q: %w", filename, err)
	}
	defer rc.Close()
	raw, err := io.ReadAll(io.LimitReader(rc, spec.MaxFileSize+1))
	if err != nil {
		return nil, "", fmt.Errorf("reading %q: %w", filename, err)
	}
	return raw, name, nil
}

// renderFile loads and renders one cluster file.
func renderFile(f *Factory, filename string, opts spec.Options) (*render.Result, error) {
	file, err := loadFile(f, filename)
	if err != nil {
		return nil, err
	}
	return render.RenderFile(file, opts)
}

// loadAndRender is renderFile for the commands that read one cluster file:
// it also prints the warnings.
func loadAndRender(f *Factory, filename string, opts spec.Options) (*render.Result, error) {
	r, err := renderFile(f, filename, opts)
	if err != nil {
		return nil, err
	}
	for _, w := range r.Warnings {
		fmt.Fprintf(f.IOStreams.ErrOut, "Warning: %s\n", w.Problem)
	}
	logDecisions(f, r)
	return r, nil
}

// logDecisions says, at -v 1, what rendering decided.
func logDecisions(f *Factory, r *render.Result) {
	c, log := r.Config, f.Logger()
	log.Info("rendered", "cluster", c.ClusterName, "objects", len(r.Objects), "applyOnlyEdits", len(r.ApplyOnly()))
	log.Info("decided", "capi", c.CAPIVersion, "because", c.CAPIReason)
	log.Info("decided", "kubernetes", c.KubeVersion.String(), "provider", c.Provider, "exposure", c.Exposure, "stack", c.Stack, "management", c.Management)
	if !r.Change.Applicable() {
		log.Info("decided", "controlPlane", "no KubeadmControlPlane change: nothing rolls out")
	}
	log.Info("decided", "kubeRBACProxyImage", c.Images.KubeRBACProxy, "from", c.ImageSources[0], "haproxyImage", c.Images.HAProxy, "from", c.ImageSources[1])
	for _, e := range r.DeploymentEdits {
		log.Info("management", "deployment", e.Component.ID(), "release", e.Component.Version, "method", e.Component.Method, "changesShipped", e.ChangesShipped())
	}
	for _, it := range r.Change.Items {
		log.Info("kubeadm item", "component", it.Component, "flag", it.Name, "value", it.Value, "merged", it.Merged, "why", it.Why)
	}
}
