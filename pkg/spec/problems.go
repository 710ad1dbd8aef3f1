package spec

import (
	"fmt"
	"reflect"
	"sort"
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
	// NoMetricsSection names the Cluster of a file whose only problem is
	// that it has no metrics section (a spec before eksa-metrics is
	// adopted); "" otherwise.
	NoMetricsSection string
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
		out = append(out, Problem{File: file, Line: l.lineOf(e.Field), Field: e.Field, Detail: e.ErrorBody() + didYouMean(e)})
	}
	return out
}

// didYouMean suggests, for a value not among the supported ones, the
// supported value it is closest to (a typo: at most two edits, or the same
// letters in another case).
func didYouMean(e *field.Error) string {
	v := reflect.ValueOf(e.BadValue)
	if e.Type != field.ErrorTypeNotSupported || v.Kind() != reflect.String || v.String() == "" {
		return ""
	}
	bad := v.String()
	_, list, ok := strings.Cut(e.Detail, "supported values: ")
	if !ok {
		return ""
	}
	best, bestD := "", 3
	for _, v := range strings.Split(list, ", ") {
		v = strings.Trim(v, `"`)
		d := EditDistance(strings.ToLower(bad), strings.ToLower(v))
		if d < bestD {
			best, bestD = v, d
		}
	}
	if best == "" {
		return ""
	}
	return fmt.Sprintf("; did you mean %q?", best)
}

// Warning is something valid but worth an operator's attention, located.
type Warning struct {
	Problem
}

// Input is the file's documents as typed objects.
func (f *File) Input() *Input {
	return &Input{Cluster: f.Cluster, MachineConfigs: f.MachineConfigs, Metrics: f.Metrics, MetricsName: f.MetricsName, Inline: f.Form == FormInline}
}

// Locate turns issues into located problems: the warnings, and an
// *InvalidError with every error (nil when there is none).
func (f *File) Locate(issues Issues) ([]Warning, error) {
	var warns []Warning
	var probs []Problem
	for _, is := range issues {
		lines := f.clusterDoc.lines
		if is.Doc == DocMetrics && f.metricsDoc != nil {
			lines = f.metricsDoc.lines
		}
		p := Problem{File: f.Path, Line: lines.lineOf(is.Field), Field: is.Field, Detail: is.Detail}
		if is.Warning {
			warns = append(warns, Warning{p})
		} else {
			probs = append(probs, p)
		}
	}
	if len(probs) > 0 {
		sortProblems(probs)
		return warns, &InvalidError{Problems: probs}
	}
	return warns, nil
}

// sortProblems orders problems by line, those about the whole file first;
// problems of one line keep their order.
func sortProblems(p []Problem) {
	sort.SliceStable(p, func(i, j int) bool { return p[i].Line < p[j].Line })
}

// At is a problem at a field of the Cluster document, located by its line.
func (f *File) At(field, detail string) Problem {
	p := Problem{File: f.Path, Field: field, Detail: detail}
	if f.clusterDoc != nil {
		p.Line = f.clusterDoc.lines.lineOf(field)
	}
	return p
}
