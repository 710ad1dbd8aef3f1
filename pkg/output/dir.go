package output

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// MarkerFile is written into every directory eksa-metrics writes. It names
// the cluster and lists every file written, so that --force replaces a
// directory only while it holds exactly what eksa-metrics put there.
const MarkerFile = ".eksa-metrics"

const markerHeader = `# Written by eksa-metrics. "eksa-metrics generate --force" replaces this
# directory only while it holds exactly the files listed here; it refuses to
# touch anything else. Do not edit.
`

// ErrNotEmpty is returned when the output directory has files and force is off.
var ErrNotEmpty = errors.New("output directory is not empty")

// RefusedError is a directory eksa-metrics will not replace, even with
// force: it holds files eksa-metrics did not write, or the input itself.
type RefusedError struct {
	Dir    string
	Reason string
}

func (e *RefusedError) Error() string {
	return fmt.Sprintf("refusing to replace %q: %s", e.Dir, e.Reason)
}

// WriteOptions control WriteDir.
type WriteOptions struct {
	// Force replaces a non-empty directory, but only one that eksa-metrics
	// wrote (its marker lists every file in it).
	Force bool
	// Cluster is recorded in the marker.
	Cluster string
	// Inputs are files that must never be inside the directory (the specs
	// being rendered): a directory holding one is refused.
	Inputs []string
}

// WriteDir writes files into dir atomically: everything is written to a new
// sibling directory first and renamed into place, so on any error the
// existing directory is untouched. A non-empty dir is replaced only with
// Force, and only when every entry in it is listed in its marker (what
// eksa-metrics wrote there before). Symbolic links are never followed: the
// directory itself must not be one, and one inside it counts as foreign.
func WriteDir(dir string, files map[string][]byte, opts WriteOptions) error {
	dir = filepath.Clean(dir)
	for name := range files {
		if !filepath.IsLocal(filepath.FromSlash(name)) || name == MarkerFile {
			return fmt.Errorf("output file name %q is not a plain relative path (a bug)", name)
		}
	}
	if err := refuseInputs(dir, opts.Inputs); err != nil {
		return err
	}
	st, err := os.Lstat(dir)
	exists := err == nil
	switch {
	case err != nil && !errors.Is(err, os.ErrNotExist):
		return fmt.Errorf("reading output directory %q: %w", dir, err)
	case exists && st.Mode()&fs.ModeSymlink != 0:
		return &RefusedError{Dir: dir, Reason: "it is a symbolic link; give --output-dir as the real directory"}
	case exists && !st.IsDir():
		return &RefusedError{Dir: dir, Reason: "it is a file, not a directory"}
	}
	if exists {
		entries, err := os.ReadDir(dir)
		if err != nil {
			return fmt.Errorf("reading output directory %q: %w", dir, err)
		}
		if len(entries) > 0 {
			if !opts.Force {
				hint := "pass --force to replace it"
				if _, err := ReadMarker(dir); err != nil {
					hint = "eksa-metrics did not write it, so it will not replace it even with --force"
				}
				return fmt.Errorf("%w: %q has %d entries; %s, or choose another --output-dir", ErrNotEmpty, dir, len(entries), hint)
			}
			if err := CheckOwned(dir); err != nil {
				return err
			}
		}
	}

	parent := filepath.Dir(dir)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return fmt.Errorf("creating %q: %w", parent, err)
	}
	tmp, err := os.MkdirTemp(parent, "."+filepath.Base(dir)+".tmp-")
	if err != nil {
		return fmt.Errorf("creating a temporary directory next to %q: %w", dir, err)
	}
	defer os.RemoveAll(tmp) // a no-op once renamed
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		p := filepath.Join(tmp, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return fmt.Errorf("writing %q: %w", name, err)
		}
		if err := os.WriteFile(p, files[name], 0o644); err != nil {
			return fmt.Errorf("writing %q: %w", name, err)
		}
	}
	if err := os.WriteFile(filepath.Join(tmp, MarkerFile), marker(opts.Cluster, names), 0o644); err != nil {
		return fmt.Errorf("writing %q: %w", MarkerFile, err)
	}
	if err := os.Chmod(tmp, 0o755); err != nil {
		return err
	}
	if !exists {
		return os.Rename(tmp, dir)
	}
	old := tmp + ".old"
	if err := os.Rename(dir, old); err != nil {
		return fmt.Errorf("replacing %q: %w", dir, err)
	}
	if err := os.Rename(tmp, dir); err != nil {
		_ = os.Rename(old, dir) // put the old directory back
		return fmt.Errorf("replacing %q: %w", dir, err)
	}
	return os.RemoveAll(old)
}

func marker(cluster string, names []string) []byte {
	var b bytes.Buffer
	b.WriteString(markerHeader)
	fmt.Fprintf(&b, "cluster: %s\n", cluster)
	for _, n := range names {
		fmt.Fprintf(&b, "file: %s\n", n)
	}
	return b.Bytes()
}

// Marker is what a marker file says.
type Marker struct {
	Cluster string
	Files   []string // slash-separated, relative
}

// ReadMarker reads dir's marker; it fails when there is none, it is not a
// regular file, or it does not parse.
func ReadMarker(dir string) (*Marker, error) {
	p := filepath.Join(dir, MarkerFile)
	st, err := os.Lstat(p)
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", p)
	}
	raw, err := os.ReadFile(p)
	if err != nil {
		return nil, err
	}
	m := &Marker{}
	sc := bufio.NewScanner(bytes.NewReader(raw))
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "" || strings.HasPrefix(line, "#"):
		case strings.HasPrefix(line, "cluster: "):
			m.Cluster = strings.TrimPrefix(line, "cluster: ")
		case strings.HasPrefix(line, "file: "):
			name := strings.TrimPrefix(line, "file: ")
			if !filepath.IsLocal(filepath.FromSlash(name)) {
				return nil, fmt.Errorf("%s lists %q, which is not inside the directory", p, name)
			}
			m.Files = append(m.Files, name)
		default:
			return nil, fmt.Errorf("%s: unexpected line %q", p, line)
		}
	}
	return m, sc.Err()
}

// CheckOwned returns a *RefusedError unless every entry of dir is one that
// its marker lists (or a directory on the way to one): a regular file, never
// a symbolic link. Then replacing dir loses nothing eksa-metrics did not write.
func CheckOwned(dir string) error {
	m, err := ReadMarker(dir)
	if err != nil {
		return &RefusedError{Dir: dir, Reason: fmt.Sprintf("it has no %s marker (%v), so eksa-metrics did not write it; choose an empty or new --output-dir", MarkerFile, err)}
	}
	listed := map[string]bool{MarkerFile: true}
	parents := map[string]bool{}
	for _, f := range m.Files {
		listed[f] = true
		for d := filepath.ToSlash(filepath.Dir(filepath.FromSlash(f))); d != "."; d = filepath.ToSlash(filepath.Dir(filepath.FromSlash(d))) {
			parents[d] = true
		}
	}
	var foreign []string
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == dir {
			return nil
		}
		rel, _ := filepath.Rel(dir, p)
		rel = filepath.ToSlash(rel)
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			foreign = append(foreign, rel+" (a symbolic link)")
		case d.IsDir() && parents[rel]:
			return nil
		case d.IsDir():
			foreign = append(foreign, rel+"/")
			return fs.SkipDir
		case !d.Type().IsRegular() || !listed[rel]:
			foreign = append(foreign, rel)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("reading output directory %q: %w", dir, err)
	}
	if len(foreign) > 0 {
		shown := foreign
		if len(shown) > 5 {
			shown = append(shown[:5:5], fmt.Sprintf("and %d more", len(foreign)-5))
		}
		return &RefusedError{Dir: dir, Reason: fmt.Sprintf("it holds entries eksa-metrics did not write (%s); --force only replaces eksa-metrics' own output. Move them, or choose another --output-dir", strings.Join(shown, ", "))}
	}
	return nil
}

// refuseInputs refuses a directory that holds one of the input files.
func refuseInputs(dir string, inputs []string) error {
	absDir, err := realPath(dir)
	if err != nil {
		return err
	}
	for _, in := range inputs {
		if in == "-" {
			continue
		}
		absIn, err := realPath(in)
		if err != nil {
			continue // a missing input is reported by the loader
		}
		if rel, err := filepath.Rel(absDir, absIn); err == nil && filepath.IsLocal(rel) {
			return &RefusedError{Dir: dir, Reason: fmt.Sprintf("it holds the input %q; write the output elsewhere", in)}
		}
	}
	return nil
}

// realPath is the absolute path with symbolic links resolved as far as the
// path exists.
func realPath(p string) (string, error) {
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", err
	}
	var rest []string
	for cur := abs; ; cur = filepath.Dir(cur) {
		if r, err := filepath.EvalSymlinks(cur); err == nil {
			return filepath.Join(append([]string{r}, rest...)...), nil
		}
		if cur == filepath.Dir(cur) {
			return abs, nil
		}
		rest = append([]string{filepath.Base(cur)}, rest...)
	}
}

// NoSymlinks refuses an output directory that is a symbolic link, or that
// is reached through one in the part of its path below the current
// directory (what a repository checkout can hold): eksa-metrics writes and,
// with --prune, deletes there, and a link would move that elsewhere. The
// parents of an absolute path are the user's choice (on macOS /tmp is a
// link) and are followed.
func NoSymlinks(dir string) error {
	clean := filepath.Clean(dir)
	check := []string{clean}
	if !filepath.IsAbs(clean) {
		check = nil
		for p := clean; p != "." && p != string(filepath.Separator); p = filepath.Dir(p) {
			check = append(check, p)
			if !filepath.IsLocal(p) {
				break // "..": a parent of the current directory, the user's choice
			}
		}
	}
	for _, p := range check {
		st, err := os.Lstat(p)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return fmt.Errorf("reading output directory %q: %w", p, err)
		}
		if st.Mode()&fs.ModeSymlink != 0 {
			target, _ := os.Readlink(p)
			return fmt.Errorf("--output-dir %q: %s is a symbolic link (to %s): eksa-metrics writes, and with --prune deletes, only in a real directory; give the directory itself", dir, p, target)
		}
	}
	return nil
}

// StaleDirs lists the subdirectories of dir that eksa-metrics wrote (they
// have a marker) for clusters not in keep, sorted. Hidden entries (the
// temporary directories of an interrupted run) are left out.
func StaleDirs(dir string, keep map[string]bool) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading output directory %q: %w", dir, err)
	}
	var out []string
	for _, e := range entries {
		if !e.IsDir() || strings.HasPrefix(e.Name(), ".") || keep[e.Name()] {
			continue
		}
		if _, err := ReadMarker(filepath.Join(dir, e.Name())); err == nil {
			out = append(out, e.Name())
		}
	}
	return out, nil
}

// RemoveOwned deletes a directory eksa-metrics wrote, after checking that it
// holds nothing else (CheckOwned); otherwise it deletes nothing.
func RemoveOwned(dir string) error {
	st, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	if !st.IsDir() {
		return &RefusedError{Dir: dir, Reason: "it is not a directory"}
	}
	if err := CheckOwned(dir); err != nil {
		return err
	}
	return os.RemoveAll(dir)
}

// ClusterDir is <outDir>/<cluster> for a fleet, refusing a name that would
// leave outDir (cluster names are validated as Kubernetes names before; this
// is the last line of defence).
func ClusterDir(outDir, name string) (string, error) {
	if name == "" || name == "." || !filepath.IsLocal(name) || strings.ContainsAny(name, `/\`) || strings.HasPrefix(name, ".") {
		return "", fmt.Errorf("cluster name %q cannot name a directory inside %s", name, outDir)
	}
	return filepath.Join(outDir, name), nil
}
