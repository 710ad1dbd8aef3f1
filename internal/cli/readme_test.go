package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/eksa-metrics/eksa-metrics/internal/testutil"
)

// Every eksa-metrics command in the README's shell blocks is one the CLI
// takes: those that need no cluster run as shown (in a scratch directory
// for out/) and end as the README says; those that reach a cluster parse,
// flags and all. A README that drifts from the CLI fails here.
func TestREADMECommands(t *testing.T) {
	root := testutil.RepoRoot()
	dir := t.TempDir()
	var ran, parsed int
	for _, cmdline := range shellCommands(t, filepath.Join(root, "README.md")) {
		wantExit := 0
		if strings.Contains(cmdline, `echo "exit $?"`) {
			wantExit = 3 // the bad-input step: invalid input
		}
		for _, seg := range strings.FieldsFunc(cmdline, func(r rune) bool { return r == ';' || r == '&' }) {
			fields := strings.Fields(seg)
			if len(fields) == 2 && fields[0] == "cat" {
				if _, err := os.Stat(scratch(root, dir, fields[1])); err != nil {
					t.Errorf("README: %q: %v", seg, err)
				}
				continue
			}
			if len(fields) == 0 || fields[0] != "bin/eksa-metrics" {
				continue
			}
			args := fields[1:]
			for i, a := range args {
				args[i] = scratch(root, dir, a)
			}
			if !strings.Contains(seg, "--kubeconfig") {
				code, _, stderr := run(t, "", args...)
				if code != wantExit {
					t.Errorf("README: %q exits %d, want %d:\n%s", seg, code, wantExit, stderr)
				}
				ran++
				continue
			}
			f := &Factory{IOStreams: IOStreams{Out: &bytes.Buffer{}, ErrOut: &bytes.Buffer{}}}
			c, rest, err := NewRootCmd(f).Find(args)
			if err == nil {
				err = c.ParseFlags(rest)
			}
			if err != nil {
				t.Errorf("README: %q does not parse: %v", seg, err)
			}
			parsed++
		}
	}
	if ran < 3 || parsed < 3 {
		t.Errorf("ran %d and parsed %d README commands: the shell blocks were not found", ran, parsed)
	}
}

// scratch puts out/ in the test's directory and repository paths under the
// checkout.
func scratch(root, dir, arg string) string {
	switch {
	case strings.HasPrefix(arg, "out/"):
		return filepath.Join(dir, arg)
	case strings.HasPrefix(arg, "examples/"), strings.HasPrefix(arg, "internal/"):
		return filepath.Join(root, arg)
	}
	return arg
}

// The README's repository layout names every Go package of the module
// outside test/ and hack/ (a directory with a non-test .go file), one line
// each, and nothing that is not one: a package added or removed without
// its line fails here.
func TestREADMELayoutListsEveryPackage(t *testing.T) {
	root := testutil.RepoRoot()
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	text := string(readme)
	start := strings.Index(text, "## Repository layout")
	if start < 0 {
		t.Fatal("README.md: no \"## Repository layout\" section")
	}
	block := text[start:]
	open := strings.Index(block, "```text\n")
	if open < 0 {
		t.Fatal("README.md: the layout section has no ```text block")
	}
	block = block[open+len("```text\n"):]
	end := strings.Index(block, "```")
	if end < 0 {
		t.Fatal("README.md: the layout's ```text block does not end")
	}
	block = block[:end]
	listed := map[string]bool{}
	for _, line := range strings.Split(block, "\n") {
		if f := strings.Fields(line); len(f) > 0 {
			dir := strings.TrimSuffix(f[0], "/")
			if listed[dir] {
				t.Errorf("README.md layout: %s listed twice", dir)
			}
			listed[dir] = true
		}
	}
	found := map[string]bool{}
	for _, top := range []string{"cmd", "config", "internal", "pkg"} {
		err := filepath.WalkDir(filepath.Join(root, top), func(path string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return err
			}
			rel, _ := filepath.Rel(root, filepath.Dir(path))
			// The API group's version directory is one package with its parent's line.
			if strings.HasPrefix(rel, filepath.Join("pkg", "apis")+string(filepath.Separator)) {
				rel = filepath.Join("pkg", "apis")
			}
			found[filepath.ToSlash(rel)] = true
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	for dir := range found {
		if !listed[dir] {
			t.Errorf("README.md layout: package %s/ has no line", dir)
		}
	}
	for dir := range listed {
		if strings.HasPrefix(dir, "test") || strings.HasPrefix(dir, "hack") {
			continue
		}
		if !found[dir] {
			t.Errorf("README.md layout: %s/ is listed but is no package", dir)
		}
	}
	if len(found) < 20 {
		t.Fatalf("found %d packages; the walk is broken", len(found))
	}
}
