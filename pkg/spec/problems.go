package spec

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Problem is one thing wrong with the input, located by file, line and field.
type Problem struct {
	File   string
	Line   int    // 1-based; 0 when the problem is about the whole file
	Field  string // field path inside the document, e.g. spec.components.etcd.metricsLevel
	Detail string
}

func (p Problem) String() string {
	loc := p.File
	if p.Line > 0 {
		loc = fmt.Sprintf("%s:%d", p.File, p.Line)
	}
	if p.Field == "" {
		return loc + ": " + p.Detail
	}
	return fmt.Sprintf("%s: %s: %s", loc, p.Field, p.Detail)
}

// InvalidError reports every problem found in one input. The CLI maps it to
// exit code 3.
type InvalidError struct {
	Problems []Problem
}

func (e *InvalidError) Error() string {
	lines := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		lines[i] = p.String()
	}
	return strings.Join(lines, "\n")
}

// lineIndex remembers the line of every decoded field path of one document.
type lineIndex map[string]int

// lineOf finds the line of path, or of its nearest parent that has one.
func (l lineIndex) lineOf(path string) int {
	for path != "" {
		if n, ok := l[path]; ok {
			return n
		}
		i := strings.LastIndexAny(path, ".[")
		if i < 0 {
			break
		}
		path = path[:i]
	}
	return 0
}

// problems turns field errors into located problems.
func (l lineIndex) problems(file string, errs field.ErrorList) []Problem {
	out := make([]Problem, 0, len(errs))
	for _, e := range errs {
		out = append(out, Problem{File: file, Line: l.lineOf(e.Field), Field: e.Field, Detail: e.ErrorBody()})
	}
	return out
}
