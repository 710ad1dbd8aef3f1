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
