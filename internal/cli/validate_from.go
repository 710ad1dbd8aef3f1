package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/eksa-metrics/eksa-metrics/pkg/engine"
	"github.com/eksa-metrics/eksa-metrics/pkg/spec"
	"github.com/eksa-metrics/eksa-metrics/pkg/validate"
)

// fromTree pairs the specs of -f DIR with their versions in --from DIR, the
// same tree on the base branch: by their path under the two directories
// first, then, for a spec that moved, by cluster name.
type fromTree struct {
	// byPath is the base spec of each -f spec found at the same relative path.
	byPath map[string]string
	// unpaired are the base specs no -f spec has by path.
	unpaired []string
}

// fromTree reads --from as the base tree of the one -f directory.
func (o *ValidateOptions) fromTree(files []string) (*fromTree, error) {
	how := "give -f DIR --from BASE_DIR, the same tree on the base branch (e.g. git worktree add ../base origin/main; --from ../base/clusters), or one -f FILE with its --from FILE"
	root := o.Filenames[0]
	if st, err := os.Stat(root); err != nil || !st.IsDir() {
		return nil, usageErrorf("--from compares one spec, or one directory of specs, with its old version: %s", how)
	}
	if st, err := os.Stat(o.From); err != nil || !st.IsDir() {
		return nil, usageErrorf("-f %s is a directory, so --from %s must be one too: %s", root, o.From, how)
	}
	baseFiles, err := expandInputs([]string{o.From})
	if err != nil {
		return nil, err
	}
	inBase := map[string]bool{}
	for _, b := range baseFiles {
		inBase[b] = true
	}
	t := &fromTree{byPath: map[string]string{}}
	claimed := map[string]bool{}
	for _, f := range files {
		rel, err := filepath.Rel(root, f)
		if err != nil {
			continue
		}
		if b := filepath.Join(o.From, rel); inBase[b] {
			t.byPath[f], claimed[b] = b, true
		}
	}
	for _, b := range baseFiles {
		if !claimed[b] {
			t.unpaired = append(t.unpaired, b)
		}
	}
	return t, nil
}

// pairByName gives each -f spec without a base at its path the base spec
// of the same cluster (a spec that moved), marks the others new (a cluster
// added in the change), and reports each base spec left over: a cluster
// whose spec the change removes.
func (o *ValidateOptions) pairByName(ctx context.Context, t *fromTree, inputs []*validate.Input, opts spec.Options) []validate.FileReport {
	names, adopted := make([]string, len(t.unpaired)), make([]bool, len(t.unpaired))
	engine.Parallel(ctx, len(t.unpaired), 0, func(i int) {
		names[i], adopted[i] = o.clusterName(t.unpaired[i])
	})
	byName := map[string]string{}
	for i, n := range names {
		if _, dup := byName[n]; n != "" && !dup {
			byName[n] = t.unpaired[i]
		}
	}
	used := map[string]bool{}
	for _, in := range inputs {
		if in.OldPath != "" {
			continue
		}
		name := inputCluster(in)
		if b, ok := byName[name]; ok && name != "" && !used[b] {
			used[b] = true
			o.addFrom(in, b, opts)
			continue
		}
		markNew(in)
	}
	var out []validate.FileReport
	for i, b := range t.unpaired {
		if used[b] || names[i] != "" && !adopted[i] {
			continue // paired, or never adopted: nothing to take back
		}
		cluster := names[i]
		if cluster == "" {
			cluster = "(its spec does not load)"
		}
		results := []validate.Result{{Name: "upgrade-diff", Status: validate.Warn,
			Message:     fmt.Sprintf("cluster %s has a spec in --from %s and none in -f %s: removing the spec takes back nothing of eksa-metrics from the cluster", cluster, o.From, o.Filenames[0]),
			Remediation: "to take eksa-metrics off the cluster, keep its spec without the metrics section until eksa-metrics apply --uninstall has run; if the cluster itself is deleted, nothing is left to take back"}}
		if o.Strict {
			results = validate.Strict(results)
		}
		out = append(out, validate.FileReport{File: b, Results: results})
	}
	return out
}

// clusterName is the name of the cluster a spec is for ("" when it does
// not load), and whether it has a metrics section. It only loads the spec:
// the one base spec that pairs is rendered by addFrom.
func (o *ValidateOptions) clusterName(path string) (string, bool) {
	f, err := loadFile(o.f, path)
	if err == nil {
		return f.Cluster.Metadata.Name, true
	}
	var ie *spec.InvalidError
	if errors.As(err, &ie) && ie.NoMetricsSection != "" {
		return ie.NoMetricsSection, false
	}
	return "", true
}

// inputCluster is the cluster a loaded input is for.
func inputCluster(in *validate.Input) string {
	if in.Result != nil {
		return in.Result.Config.ClusterName
	}
	var ie *spec.InvalidError
	if errors.As(in.LoadErr, &ie) && ie.NoMetricsSection != "" {
		return ie.NoMetricsSection
	}
	return ""
}
