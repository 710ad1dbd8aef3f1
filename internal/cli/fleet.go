package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/eksa-metrics/eksa-metrics/pkg/engine"
	"github.com/eksa-metrics/eksa-metrics/pkg/output"
	"github.com/eksa-metrics/eksa-metrics/pkg/render"
	"github.com/eksa-metrics/eksa-metrics/pkg/spec"
)

// clusterDoc finds files that hold an EKS-A Cluster, when a directory is given.
var clusterDoc = regexp.MustCompile(`(?m)^kind:\s*["']?Cluster["']?\s*$`)

// expandInputs turns -f arguments into files: a directory contributes every
// *.yaml / *.yml below it that holds a Cluster document (a fleet repository
// also has kustomizations and Flux objects, which are not cluster specs).
func expandInputs(names []string) ([]string, error) {
	seen := map[string]bool{}
	var out []string
	add := func(p string) {
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	for _, n := range names {
		st, err := os.Stat(n)
		if n == "-" || err == nil && !st.IsDir() || err != nil && !errors.Is(err, fs.ErrNotExist) {
			add(n)
			continue
		}
		if err != nil {
			add(n) // reported as a missing file
			continue
		}
		var found []string
		err = filepath.WalkDir(n, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() || !(strings.HasSuffix(p, ".yaml") || strings.HasSuffix(p, ".yml")) {
				return nil
			}
			b, err := readSpecCandidate(p)
			if err != nil {
				return err
			}
			if clusterDoc.Match(b) {
				found = append(found, p)
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("reading directory %q: %w", n, err)
		}
		sort.Strings(found)
		for _, p := range found {
			add(p)
		}
	}
	return out, nil
}

// readSpecCandidate reads a *.yaml file of a -f directory, to see whether
// it holds a Cluster: a regular file (a symlink is followed to one), at most
// one byte past spec.MaxFileSize (spec.Load reports a larger one, naming
// it). A device, a pipe or a socket under that name is an error: reading it
// could be endless (a link to /dev/zero) or block.
func readSpecCandidate(p string) ([]byte, error) {
	st, err := os.Stat(p)
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file (%s): a cluster spec is one", p, st.Mode().Type())
	}
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, spec.MaxFileSize+1))
}

// fleetError sums up a fleet run with failures.
type fleetError struct {
	failed, total int
	invalid       bool // every failure was invalid input
}

func (e *fleetError) Error() string {
	return fmt.Sprintf("%d of %d cluster specs failed (each is listed above); the others were written", e.failed, e.total)
}

// generateFleet renders several specs in parallel, bounded by GOMAXPROCS, and
// writes each cluster's kustomize layout to <output-dir>/<cluster>/
// atomically. A bad spec is reported and does not stop the others. The
// outcome does not depend on scheduling: when two files define one cluster,
// the first in input order is written and the other reported; problems are
// printed in input order.
func (o *GenerateOptions) generateFleet(ctx context.Context, files []string) error {
	type outcome struct {
		result *render.Result
		err    error
	}
	opts, err := o.RenderFlags.options()
	if err != nil {
		return err
	}
	outcomes := make([]outcome, len(files))
	engine.Parallel(ctx, len(files), 0, func(i int) {
		r, err := renderFile(o.f, files[i], opts)
		outcomes[i] = outcome{r, err}
	})

	errOut := o.f.IOStreams.ErrOut
	failed, invalidOnly := 0, true
	report := func(file string, err error) {
		failed++
		var inv *spec.InvalidError
		if !errors.As(err, &inv) {
			invalidOnly = false
			fmt.Fprintf(errOut, "Error: %s: %v\n", file, err)
			return
		}
		for _, p := range inv.Problems {
			fmt.Fprintf(errOut, "Error: %s\n", p)
		}
	}
	owner := map[string]string{} // cluster name -> the first file that defines it
	var writes []int
	notAdopted := 0
	for i, oc := range outcomes {
		// A spec with no metrics section yet is not adopted: nothing is
		// rendered for it, as validate calls it (docs/ci.md), and the
		// fleet's render goes on.
		var inv *spec.InvalidError
		if errors.As(oc.err, &inv) && inv.NoMetricsSection != "" {
			notAdopted++
			fmt.Fprintf(errOut, "Not adopted: %s: cluster %q has no metrics section yet: nothing rendered for it (add one to adopt it; docs/ci.md)\n", files[i], inv.NoMetricsSection)
			continue
		}
		if oc.err != nil {
			report(files[i], oc.err)
			continue
		}
		for _, w := range oc.result.Warnings {
			fmt.Fprintf(errOut, "Warning: %s\n", w.Problem)
		}
		name := oc.result.Config.ClusterName
		if prev, dup := owner[name]; dup {
			report(files[i], &spec.InvalidError{Problems: []spec.Problem{{File: files[i], Field: "metadata.name", Detail: fmt.Sprintf("cluster %q is also defined in %s, which comes first and was written; each cluster needs one spec", name, prev)}}})
			continue
		}
		owner[name] = files[i]
		writes = append(writes, i)
	}

	writeErrs := make([]error, len(files))
	engine.Parallel(ctx, len(writes), 0, func(j int) {
		i := writes[j]
		r := outcomes[i].result
		dir, err := output.ClusterDir(o.OutputDir, r.Config.ClusterName)
		if err == nil {
			var out map[string][]byte
			if out, err = output.Files(r); err == nil {
				err = output.WriteDir(dir, out, output.WriteOptions{Force: o.Force, Cluster: r.Config.ClusterName, Inputs: files})
			}
		}
		writeErrs[i] = err
	})
	written := 0
	for _, i := range writes {
		if writeErrs[i] != nil {
			report(files[i], writeErrs[i])
			continue
		}
		written++
	}
	if notAdopted > 0 {
		fmt.Fprintf(errOut, "Wrote %d cluster directories under %s; %d specs not adopted yet, nothing rendered for them.\n", written, o.OutputDir, notAdopted)
	} else {
		fmt.Fprintf(errOut, "Wrote %d cluster directories under %s.\n", written, o.OutputDir)
	}
	if err := o.staleClusters(owner); err != nil {
		report(o.OutputDir, err)
	}
	if failed > 0 {
		return &fleetError{failed: failed, total: len(files), invalid: invalidOnly}
	}
	if notAdopted == len(files) {
		return &spec.InvalidError{Problems: []spec.Problem{{File: strings.Join(o.Filenames, ", "),
			Detail: "no spec has a metrics section, so nothing was rendered: add one to the clusters to adopt (docs/reference.md)"}}}
	}
	return nil
}

// staleClusters handles directories eksa-metrics wrote for clusters whose
// spec is no longer in the input: GitOps would keep applying them. They are
// named on stderr, and removed with --prune (only when they hold nothing but
// eksa-metrics' own files).
func (o *GenerateOptions) staleClusters(current map[string]string) error {
	keep := map[string]bool{}
	for name := range current {
		keep[name] = true
	}
	stale, err := output.StaleDirs(o.OutputDir, keep)
	if err != nil || len(stale) == 0 {
		return err
	}
	errOut := o.f.IOStreams.ErrOut
	if !o.Prune {
		for _, name := range stale {
			fmt.Fprintf(errOut, "Warning: %s was written by eksa-metrics for cluster %q, which no input defines any more; it is kept, so GitOps keeps applying it. Delete it, or rerun with --prune.\n", filepath.Join(o.OutputDir, name), name)
		}
		return nil
	}
	var errs []error
	for _, name := range stale {
		dir := filepath.Join(o.OutputDir, name)
		if err := output.RemoveOwned(dir); err != nil {
			errs = append(errs, err)
			continue
		}
		fmt.Fprintf(errOut, "Removed %s: no input defines cluster %q any more (--prune).\n", dir, name)
	}
	return errors.Join(errs...)
}
