package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/eksa-metrics/eksa-metrics/internal/testutil"
)

// Every eksa-metrics command in the shell blocks of docs/*.md is one the CLI
// takes: a command that needs neither a cluster nor a file the repository
// lacks runs as shown (out/ in a scratch directory) and exits 0; the others
// parse, command, flags and arguments. Docs that drift from the CLI fail
// here, as the README does in TestREADMECommands.
func TestDocsCommands(t *testing.T) {
	root := testutil.RepoRoot()
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil || len(docs) == 0 {
		t.Fatalf("no docs: %v", err)
	}
	dir := t.TempDir()
	var ran, parsed int
	for _, doc := range docs {
		name := filepath.Base(doc)
		for _, cmdline := range shellCommands(t, doc) {
			for _, seg := range strings.FieldsFunc(cmdline, func(r rune) bool { return r == ';' || r == '&' || r == '|' }) {
				seg, _, _ = strings.Cut(seg, ">") // a redirect: the command before it
				fields := strings.Fields(seg)
				if len(fields) == 0 || (fields[0] != "eksa-metrics" && fields[0] != "bin/eksa-metrics") {
					continue
				}
				args := fields[1:]
				runnable := !strings.Contains(seg, "--kubeconfig")
				for i, a := range args {
					args[i] = scratch(root, dir, a)
					if i > 0 && (args[i-1] == "-f" || args[i-1] == "--from") {
						if _, err := os.Stat(args[i]); err != nil {
							runnable = false // a file of the reader's, not the repository's
						}
					}
				}
				if runnable {
					if code, out, stderr := run(t, "", args...); code != 0 || out == "" && !strings.Contains(seg, "--output-dir") {
						t.Errorf("%s: %q exits %d with %d bytes of output:\n%s", name, seg, code, len(out), stderr)
					}
					ran++
					continue
				}
				f := &Factory{IOStreams: IOStreams{Out: &bytes.Buffer{}, ErrOut: &bytes.Buffer{}}}
				c, rest, err := NewRootCmd(f).Find(args)
				if err == nil {
					err = c.ParseFlags(rest)
				}
				if err == nil {
					err = c.ValidateArgs(c.Flags().Args())
				}
				if err != nil {
					t.Errorf("%s: %q does not parse: %v", name, seg, err)
				}
				parsed++
			}
		}
	}
	if ran < 3 || parsed < 5 {
		t.Errorf("ran %d and parsed %d commands of docs/*.md: the shell blocks were not found", ran, parsed)
	}
	t.Logf("docs/*.md: %d commands ran, %d parsed", ran, parsed)
}

// shellCommands are the command lines of a Markdown file's ```sh blocks,
// continuation lines joined and comments cut.
func shellCommands(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	inBlock, cont := false, ""
	for _, line := range strings.Split(string(b), "\n") {
		trimmed := strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(trimmed, "```sh"):
			inBlock = true
			continue
		case strings.HasPrefix(trimmed, "```"):
			inBlock = false
			continue
		case !inBlock:
			continue
		}
		if i := strings.Index(trimmed, " #"); i >= 0 {
			trimmed = strings.TrimSpace(trimmed[:i])
		}
		if strings.HasPrefix(trimmed, "#") {
			continue
		}
		if strings.HasSuffix(trimmed, "\\") {
			cont += strings.TrimSuffix(trimmed, "\\") + " "
			continue
		}
		out = append(out, cont+trimmed)
		cont = ""
	}
	return out
}

// No document repeats a heading at the same level: a section pasted twice
// (docs/controller.md once held its sections from "Who may do what" to
// "Tested" twice) reads as two truths that drift apart, and a repeated
// heading is also a repeated anchor. Headings inside code blocks are not
// headings.
func TestDocsRepeatNoHeading(t *testing.T) {
	root := testutil.RepoRoot()
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil || len(docs) == 0 {
		t.Fatalf("no docs: %v", err)
	}
	docs = append(docs, filepath.Join(root, "README.md"))
	var headings int
	for _, doc := range docs {
		text, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		seen := map[string]int{}
		fenced := false
		for i, line := range strings.Split(string(text), "\n") {
			if strings.HasPrefix(strings.TrimSpace(line), "```") {
				fenced = !fenced
				continue
			}
			level := len(line) - len(strings.TrimLeft(line, "#"))
			if fenced || level == 0 || level > 6 || !strings.HasPrefix(line[level:], " ") {
				continue
			}
			headings++
			if first, ok := seen[line]; ok {
				t.Errorf("%s:%d: %q repeats the heading of line %d", filepath.Base(doc), i+1, line, first)
				continue
			}
			seen[line] = i + 1
		}
	}
	if headings < 50 {
		t.Fatalf("found %d headings; the scan is broken", headings)
	}
}
