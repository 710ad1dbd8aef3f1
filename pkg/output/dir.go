package output

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
)

// ErrNotEmpty is returned when the output directory has files and force is off.
var ErrNotEmpty = errors.New("output directory is not empty")

// WriteDir writes files into dir atomically: everything is written to a new
// sibling directory first and renamed into place, so on any error the
// existing directory is untouched. A non-empty dir is replaced only with force.
func WriteDir(dir string, files map[string][]byte, force bool) error {
	dir = filepath.Clean(dir)
	entries, err := os.ReadDir(dir)
	exists := err == nil
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("reading output directory %q: %w", dir, err)
	}
	if exists && len(entries) > 0 && !force {
		return fmt.Errorf("%w: %q has %d entries; pass --force to replace it, or choose another --output-dir", ErrNotEmpty, dir, len(entries))
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
