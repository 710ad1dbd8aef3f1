package output

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

var rendered = map[string][]byte{
	"PLAN.md":                      []byte("# plan\n"),
	"cluster.yaml":                 []byte("kind: Cluster\n"),
	"workload/kustomization.yaml":  []byte("resources: []\n"),
	"workload/clusterrole-x.yaml":  []byte("kind: ClusterRole\n"),
	"prometheus/scrape-configs.yx": []byte("scrape_configs: []\n"),
}

func mustWrite(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// snapshot hashes every entry below root (names, kinds, contents, link targets).
func snapshot(t testing.TB, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			target, _ := os.Readlink(p)
			out[rel] = "link:" + target
		case d.IsDir():
			out[rel] = "dir"
		default:
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			out[rel] = fmt.Sprintf("file:%x", sha256.Sum256(b))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestWriteDirForceReplacesOnlyItsOwnOutput(t *testing.T) {
	root := t.TempDir()
	out := filepath.Join(root, "out")
	if err := WriteDir(out, rendered, WriteOptions{Cluster: "c1"}); err != nil {
		t.Fatal(err)
	}
	if m, err := ReadMarker(out); err != nil || m.Cluster != "c1" || len(m.Files) != len(rendered) {
		t.Fatalf("marker: %+v, %v", m, err)
	}
	// Without --force a second run refuses; with it, the directory is replaced.
	if err := WriteDir(out, rendered, WriteOptions{Cluster: "c1"}); !errors.Is(err, ErrNotEmpty) {
		t.Fatalf("without force: %v, want ErrNotEmpty", err)
	}
	changed := map[string][]byte{"PLAN.md": []byte("# new plan\n")}
	if err := WriteDir(out, changed, WriteOptions{Force: true, Cluster: "c1"}); err != nil {
		t.Fatalf("force over its own output: %v", err)
	}
	if _, err := os.Stat(filepath.Join(out, "workload")); !os.IsNotExist(err) {
		t.Fatalf("files no longer rendered are still there (stat: %v)", err)
	}
}

// The classes of directory --force must never replace: a git repository
// (the reported data loss), one holding the input spec, one with a file
// eksa-metrics did not write next to its own, a symbolic link, a forged or
// missing marker. Each is left byte for byte as it was.
func TestWriteDirForceRefusesForeignDirectories(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T, out string) WriteOptions
		want  string
	}{
		{"git repository", func(t *testing.T, out string) WriteOptions {
			mustWrite(t, filepath.Join(out, ".git", "HEAD"), "ref: refs/heads/main\n")
			mustWrite(t, filepath.Join(out, "clusters", "prod.yaml"), "kind: Cluster\n")
			return WriteOptions{Force: true}
		}, "no .eksa-metrics marker"},
		{"holds the input", func(t *testing.T, out string) WriteOptions {
			if err := WriteDir(out, rendered, WriteOptions{}); err != nil {
				t.Fatal(err)
			}
			mustWrite(t, filepath.Join(out, "cluster.yaml"), "kind: Cluster # the user's own spec\n")
			return WriteOptions{Force: true, Inputs: []string{filepath.Join(out, "cluster.yaml")}}
		}, "holds the input"},
		{"input through a symbolic link", func(t *testing.T, out string) WriteOptions {
			mustWrite(t, filepath.Join(out, "spec.yaml"), "kind: Cluster\n")
			link := filepath.Join(filepath.Dir(out), "link")
			if err := os.Symlink(out, link); err != nil {
				t.Fatal(err)
			}
			return WriteOptions{Force: true, Inputs: []string{filepath.Join(link, "spec.yaml")}}
		}, "holds the input"},
		{"a foreign file beside its output", func(t *testing.T, out string) WriteOptions {
			if err := WriteDir(out, rendered, WriteOptions{}); err != nil {
				t.Fatal(err)
			}
			mustWrite(t, filepath.Join(out, "workload", "notes.md"), "mine\n")
			return WriteOptions{Force: true}
		}, "workload/notes.md"},
		{"a foreign directory", func(t *testing.T, out string) WriteOptions {
			if err := WriteDir(out, rendered, WriteOptions{}); err != nil {
				t.Fatal(err)
			}
			if err := os.MkdirAll(filepath.Join(out, "secrets"), 0o755); err != nil {
				t.Fatal(err)
			}
			return WriteOptions{Force: true}
		}, "secrets/"},
		{"a symbolic link inside", func(t *testing.T, out string) WriteOptions {
			if err := WriteDir(out, rendered, WriteOptions{}); err != nil {
				t.Fatal(err)
			}
			if err := os.Remove(filepath.Join(out, "PLAN.md")); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(filepath.Join(filepath.Dir(out), "outside"), filepath.Join(out, "PLAN.md")); err != nil {
				t.Fatal(err)
			}
			return WriteOptions{Force: true}
		}, "symbolic link"},
		{"the directory is a symbolic link", func(t *testing.T, out string) WriteOptions {
			real := filepath.Join(filepath.Dir(out), "real")
			if err := WriteDir(real, rendered, WriteOptions{}); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(real, out); err != nil {
				t.Fatal(err)
			}
			return WriteOptions{Force: true}
		}, "symbolic link"},
		{"a forged marker naming a path outside", func(t *testing.T, out string) WriteOptions {
			mustWrite(t, filepath.Join(out, MarkerFile), "cluster: x\nfile: ../outside/keep\n")
			return WriteOptions{Force: true}
		}, "not inside the directory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			mustWrite(t, filepath.Join(root, "outside", "keep"), "keep me\n")
			out := filepath.Join(root, "out")
			opts := tc.setup(t, out)
			before := snapshot(t, root)
			err := WriteDir(out, rendered, opts)
			var refused *RefusedError
			if !errors.As(err, &refused) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want a refusal mentioning %q", err, tc.want)
			}
			if after := snapshot(t, root); fmt.Sprint(after) != fmt.Sprint(before) {
				t.Fatalf("the refused write changed files:\nbefore %v\nafter  %v", before, after)
			}
		})
	}
}

func TestClusterDirStaysInside(t *testing.T) {
	for _, bad := range []string{"", ".", "..", "../x", "a/b", `a\b`, "/abs", ".hidden"} {
		if _, err := ClusterDir("out", bad); err == nil {
			t.Errorf("ClusterDir(%q): want an error", bad)
		}
	}
	if d, err := ClusterDir("out", "prod-1"); err != nil || d != filepath.Join("out", "prod-1") {
		t.Errorf("ClusterDir(prod-1) = %q, %v", d, err)
	}
}

func TestStaleDirsAndRemoveOwned(t *testing.T) {
	out := t.TempDir()
	for _, c := range []string{"keep", "gone"} {
		if err := WriteDir(filepath.Join(out, c), rendered, WriteOptions{Cluster: c}); err != nil {
			t.Fatal(err)
		}
	}
	mustWrite(t, filepath.Join(out, "README.md"), "fleet notes\n")
	mustWrite(t, filepath.Join(out, "other", "x.yaml"), "not ours\n")
	stale, err := StaleDirs(out, map[string]bool{"keep": true})
	if err != nil || fmt.Sprint(stale) != "[gone]" {
		t.Fatalf("StaleDirs = %v, %v", stale, err)
	}
	mustWrite(t, filepath.Join(out, "gone", "added-by-hand.yaml"), "x\n")
	if err := RemoveOwned(filepath.Join(out, "gone")); err == nil {
		t.Fatal("removed a directory holding a file eksa-metrics did not write")
	}
	_ = os.Remove(filepath.Join(out, "gone", "added-by-hand.yaml"))
	if err := RemoveOwned(filepath.Join(out, "gone")); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(out, "other", "x.yaml")); err != nil {
		t.Fatal(err)
	}
}

// FuzzWriteDir writes a fleet member's directory over arbitrary existing
// contents (files, directories, symbolic links pointing anywhere, markers),
// under arbitrary cluster names, with and without force, then prunes stale
// directories; nothing outside the output directory may change.
func FuzzWriteDir(f *testing.F) {
	f.Add("c1", "f:c1/PLAN.md\nm:c1/cluster: c1\\nfile: PLAN.md", true)
	f.Add("..", "f:a", true)
	f.Add("x", "l:x->../outside", true)
	f.Add("c1", "m:c1/file: ../outside/keep", true)
	f.Add("c1", "f:c1/.git/HEAD\nf:c1/spec.yaml", true)
	f.Add("old", "m:gone/cluster: gone\\nfile: a.yaml\nf:gone/a.yaml\nl:gone/b->../../outside", true)
	f.Fuzz(func(t *testing.T, name, layout string, force bool) {
		root := t.TempDir()
		outside := filepath.Join(root, "outside")
		mustWrite(t, filepath.Join(outside, "keep"), "keep me\n")
		out := filepath.Join(root, "out")
		if err := os.MkdirAll(out, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(layout, "\n") {
			kind, arg, ok := strings.Cut(line, ":")
			if !ok {
				continue
			}
			switch kind {
			case "f", "d", "m":
				rel, content, _ := strings.Cut(arg, "/")
				if kind == "f" || kind == "d" {
					rel, content = arg, "x"
				}
				if !filepath.IsLocal(rel) {
					continue
				}
				p := filepath.Join(out, rel)
				switch kind {
				case "d":
					_ = os.MkdirAll(p, 0o755)
				case "f":
					_ = os.MkdirAll(filepath.Dir(p), 0o755)
					_ = os.WriteFile(p, []byte(content), 0o644)
				case "m":
					_ = os.MkdirAll(p, 0o755)
					_ = os.WriteFile(filepath.Join(p, MarkerFile), []byte(strings.ReplaceAll(content, `\n`, "\n")+"\n"), 0o644)
				}
			case "l":
				link, target, ok := strings.Cut(arg, "->")
				if ok && filepath.IsLocal(link) {
					_ = os.MkdirAll(filepath.Dir(filepath.Join(out, link)), 0o755)
					_ = os.Symlink(target, filepath.Join(out, link))
				}
			}
		}
		before := snapshot(t, outside)
		rootBefore := entries(t, root)
		if dir, err := ClusterDir(out, name); err == nil {
			_ = WriteDir(dir, rendered, WriteOptions{Force: force, Cluster: name})
		}
		if stale, err := StaleDirs(out, map[string]bool{name: true}); err == nil && force {
			for _, s := range stale {
				_ = RemoveOwned(filepath.Join(out, s))
			}
		}
		if after := snapshot(t, outside); fmt.Sprint(after) != fmt.Sprint(before) {
			t.Fatalf("a file outside the output directory changed:\nbefore %v\nafter  %v", before, after)
		}
		if after := entries(t, root); fmt.Sprint(after) != fmt.Sprint(rootBefore) {
			t.Fatalf("entries beside the output directory changed: %v -> %v", rootBefore, after)
		}
	})
}

func entries(t testing.TB, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range es {
		out = append(out, e.Name())
	}
	sort.Strings(out)
	return out
}
