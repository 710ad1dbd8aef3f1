package cli

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strings"
	"sync"

	"github.com/eksa-metrics/eksa-metrics/pkg/output"
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
			b, err := os.ReadFile(p)
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

// fleetError sums up a fleet run with failures.
type fleetError struct {
	failed, total int
	invalid       bool // every failure was invalid input
}

func (e *fleetError) Error() string {
	return fmt.Sprintf("%d of %d cluster specs failed (each is listed above); the others were written", e.failed, e.total)
}

// generateFleet renders several specs in parallel, bounded by GOMAXPROCS, and
// writes each cluster's kustomize layout to <output-dir>/<cluster>/ atomically.
// A bad spec is reported and does not stop the others.
func (o *GenerateOptions) generateFleet(ctx context.Context, files []string) error {
	workers := runtime.GOMAXPROCS(0)
	jobs := make(chan string)
	var mu sync.Mutex
	owner := map[string]string{} // cluster name -> file, to refuse two files for one cluster
	failed, invalidOnly, written := 0, true, 0
	report := func(file string, err error) {
		mu.Lock()
		defer mu.Unlock()
		failed++
		var inv *spec.InvalidError
		if !errors.As(err, &inv) {
			invalidOnly = false
			fmt.Fprintf(o.f.IOStreams.ErrOut, "Error: %s: %v\n", file, err)
			return
		}
		for _, p := range inv.Problems {
			fmt.Fprintf(o.f.IOStreams.ErrOut, "Error: %s\n", p)
		}
	}
	var wg sync.WaitGroup
	for i := 0; i < workers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for file := range jobs {
				r, err := renderFile(o.f, file, spec.Options{CAPIAPIVersion: o.CAPIAPIVersion})
				if err != nil {
					report(file, err)
					continue
				}
				name := r.Config.ClusterName
				mu.Lock()
				prev, dup := owner[name]
				if !dup {
					owner[name] = file
				}
				mu.Unlock()
				if dup {
					report(file, &spec.InvalidError{Problems: []spec.Problem{{File: file, Field: "metadata.name", Detail: fmt.Sprintf("cluster %q is also defined in %s; each cluster needs one spec", name, prev)}}})
					continue
				}
				files, err := output.Files(r)
				if err == nil {
					err = output.WriteDir(filepath.Join(o.OutputDir, name), files, o.Force)
				}
				if err != nil {
					report(file, err)
					continue
				}
				mu.Lock()
				written++
				mu.Unlock()
			}
		}()
	}
	for _, f := range files {
		select {
		case jobs <- f:
		case <-ctx.Done():
		}
	}
	close(jobs)
	wg.Wait()
	fmt.Fprintf(o.f.IOStreams.ErrOut, "Wrote %d cluster directories under %s.\n", written, o.OutputDir)
	if failed > 0 {
		return &fleetError{failed: failed, total: len(files), invalid: invalidOnly}
	}
	return nil
}
