package spec

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"

	metricsv1alpha1 "github.com/eksa-metrics/eksa-metrics/pkg/apis/metrics/v1alpha1"

	"go.yaml.in/yaml/v3"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// MaxFileSize is the largest cluster file accepted. Real EKS-A files are a
// few kilobytes; the bound stops a runaway input early.
const MaxFileSize = 4 << 20

// Form says where the metrics section was written.
type Form string

const (
	FormDocument Form = "MetricsConfig document"
	FormInline   Form = "Cluster.spec.metrics"
)

// document is one YAML document of the file and where it sits.
type document struct {
	node       *yaml.Node // the DocumentNode
	root       *yaml.Node // its content, a mapping for every document we read
	apiVersion string
	kind       string
	name       string
	firstLine  int // first and last line of the document's text, 1-based, separator excluded
	lastLine   int
	lines      lineIndex
}

// File is a loaded cluster file: the EKS-A documents it holds, the metrics
// section, and what is needed to write the file back without the section.
type File struct {
	Path string
	Raw  []byte

	Cluster        Cluster
	MachineConfigs []MachineConfig
	Metrics        metricsv1alpha1.MetricsConfigSpec
	MetricsName    string // metadata.name of the MetricsConfig (form A)
	Form           Form

	docs       []*document
	clusterDoc *document
	metricsDoc *document   // form A
	metricsKey *yaml.Node  // form B: the "metrics" key in Cluster.spec
	clusters   []*document // the Cluster documents of a file without a metrics section
	specNode   *yaml.Node  // form B: the Cluster.spec mapping
}

// Load parses a cluster file strictly. Every problem is reported in one
// *InvalidError; nothing is defaulted or validated yet.
func Load(path string, r io.Reader) (*File, error) {
	raw, err := io.ReadAll(io.LimitReader(r, MaxFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("reading %q: %w", path, err)
	}
	f := &File{Path: path, Raw: raw}
	if len(raw) > MaxFileSize {
		return nil, f.invalid(Problem{File: path, Detail: fmt.Sprintf("file is larger than %d MiB; a cluster file is a few kilobytes, check that this is the right file", MaxFileSize>>20)})
	}
	if probs := encodingProblems(path, raw); len(probs) > 0 {
		return nil, f.invalid(probs...)
	}
	if err := f.parseDocuments(); err != nil {
		return nil, err
	}
	var probs []Problem
	probs = append(probs, f.selectDocuments()...)
	if f.clusterDoc != nil {
		probs = append(probs, f.decodeCluster()...)
	}
	probs = append(probs, f.decodeMetrics()...)
	for _, d := range f.docs {
		if d != f.clusterDoc && d != f.metricsDoc && !slices.Contains(f.clusters, d) {
			probs = append(probs, duplicateKeys(path, d)...)
		}
		probs = append(probs, crossDocumentAliases(path, d)...)
	}
	for _, d := range f.docs {
		if isMachineConfig(d) {
			var mc MachineConfig
			dec := newDecoder(false, d.lines)
			dec.decode(d.root, &mc, nil)
			probs = append(probs, d.lines.problems(path, dec.errs)...)
			f.MachineConfigs = append(f.MachineConfigs, mc)
		}
	}
	if len(probs) > 0 && f.clusterDoc != nil && f.Form != "" {
		// An unknown field or a wrong type does not hide the other
		// problems of the documents: validate what did decode.
		probs = append(probs, f.validationProblems(probs)...)
	}
	if len(probs) > 0 {
		err := f.invalid(probs...)
		if len(probs) == 1 && probs[0].Detail == noMetricsSection && len(f.clusters) == 1 {
			err.(*InvalidError).NoMetricsSection = f.clusters[0].name
		}
		return nil, err
	}
	return f, nil
}

const noMetricsSection = "no metrics section: add a document of kind " + metricsv1alpha1.Kind + " (apiVersion " + metricsv1alpha1.APIVersion + ") or a spec.metrics section to the Cluster; see docs/reference.md"

// invalid reports problems in the order of their lines.
func (f *File) invalid(p ...Problem) error {
	sortProblems(p)
	return &InvalidError{Problems: p}
}

// validationProblems are the validation errors of a file that did not
// decode cleanly, but for the fields whose decoding failed (a field left at
// its zero value would be reported a second time, e.g. as required).
func (f *File) validationProblems(decoded []Problem) []Problem {
	in := f.Input()
	_, err := f.Locate(Validate(in, Default(in, Options{}), Options{}).Errors())
	var inv *InvalidError
	if !errors.As(err, &inv) {
		return nil
	}
	var out []Problem
	for _, p := range inv.Problems {
		overlaps := false
		for _, q := range decoded {
			if f.docAt(p.Line) == f.docAt(q.Line) && (within(p.Field, q.Field) || within(q.Field, p.Field)) {
				overlaps = true
				break
			}
		}
		if !overlaps {
			out = append(out, p)
		}
	}
	return out
}

// within reports whether field path p is q or a field inside it.
func within(p, q string) bool {
	return p == q || strings.HasPrefix(p, q+".") || strings.HasPrefix(p, q+"[")
}

// docAt is the document a line is in (nil for line 0).
func (f *File) docAt(line int) *document {
	for _, d := range f.docs {
		if line >= d.firstLine && line <= d.lastLine {
			return d
		}
	}
	return nil
}

var (
	separator    = regexp.MustCompile(`^(---|\.\.\.)(\s|#|$)`)
	yamlErrorPos = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)
)

// parseDocuments splits the file into YAML documents and records their lines.
func (f *File) parseDocuments() error {
	// Line ranges of the text between separators, to cut documents out later.
	type span struct{ first, last int }
	var spans []span
	lines := bytes.Split(f.Raw, []byte("\n"))
	start := 1
	for i, l := range lines {
		if separator.Match(l) {
			spans = append(spans, span{start, i})
			start = i + 2
		}
	}
	spans = append(spans, span{start, len(lines)})

	dec := yaml.NewDecoder(bytes.NewReader(f.Raw))
	for {
		var n yaml.Node
		err := dec.Decode(&n)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return f.invalid(yamlProblem(f.Path, f.Raw, err))
		}
		if len(n.Content) == 0 || isNull(n.Content[0]) {
			continue // an empty document
		}
		root := n.Content[0]
		d := &document{node: &n, root: root, lines: lineIndex{}}
		for _, s := range spans {
			if root.Line >= s.first && root.Line <= s.last {
				d.firstLine, d.lastLine = s.first, s.last
			}
		}
		if root.Kind != yaml.MappingNode {
			return f.invalid(Problem{File: f.Path, Line: root.Line, Detail: "a document must be a mapping with apiVersion and kind"})
		}
		d.apiVersion = scalarField(root, "apiVersion")
		d.kind = scalarField(root, "kind")
		if md := mappingField(root, "metadata"); md != nil {
			d.name = scalarField(md, "name")
		}
		f.docs = append(f.docs, d)
	}
	return nil
}

// duplicateKeys finds a key set twice in one mapping of a document that
// eksa-metrics does not decode whole (the machine and datacenter configs):
// EKS Anywhere's decoder refuses it, and a missing "---" that runs two
// documents together makes one.
func duplicateKeys(file string, d *document) []Problem {
	var out []Problem
	var walk func(n *yaml.Node, path string)
	walk = func(n *yaml.Node, path string) {
		switch n.Kind {
		case yaml.MappingNode:
			seen := map[string]int{}
			for i := 0; i+1 < len(n.Content); i += 2 {
				k := n.Content[i]
				child := strings.TrimPrefix(path+"."+k.Value, ".")
				if first, dup := seen[k.Value]; dup && k.Kind == yaml.ScalarNode {
					detail := fmt.Sprintf("duplicate key (already set on line %d) in the %s document: EKS Anywhere refuses it; a missing --- between two documents makes one", first, d.kind)
					out = append(out, Problem{File: file, Line: k.Line, Field: child, Detail: detail})
					continue
				}
				seen[k.Value] = k.Line
				walk(n.Content[i+1], child)
			}
		case yaml.SequenceNode:
			for i, c := range n.Content {
				walk(c, fmt.Sprintf("%s[%d]", path, i))
			}
		}
	}
	walk(d.root, "")
	return out
}

// crossDocumentAliases finds an alias to an anchor of another document: a
// YAML anchor holds within its document (YAML 1.2, 3.2.2.2), the YAML
// library resolves it across documents anyway, and EKS Anywhere's decoder,
// which reads each document alone, refuses it.
func crossDocumentAliases(file string, d *document) []Problem {
	var out []Problem
	seen := map[*yaml.Node]bool{}
	var walk func(n *yaml.Node)
	walk = func(n *yaml.Node) {
		if n == nil || seen[n] {
			return
		}
		seen[n] = true
		if n.Kind == yaml.AliasNode {
			if a := n.Alias; a != nil && (a.Line < d.firstLine || a.Line > d.lastLine) {
				out = append(out, Problem{File: file, Line: n.Line, Detail: fmt.Sprintf(
					"alias *%s refers to the anchor on line %d, in another document: an anchor holds within its own document, and EKS Anywhere refuses this; write the value out", n.Value, a.Line)})
			}
			return
		}
		for _, c := range n.Content {
			walk(c)
		}
	}
	walk(d.root)
	return out
}

func yamlProblem(file string, raw []byte, err error) Problem {
	if m := yamlErrorPos.FindStringSubmatch(err.Error()); m != nil {
		line, _ := strconv.Atoi(m[1])
		return Problem{File: file, Line: syntaxErrorLine(raw, line), Detail: "malformed YAML: " + m[2]}
	}
	return Problem{File: file, Detail: "malformed YAML: " + err.Error()}
}

// syntaxErrorLine finds the line of a YAML syntax error. The YAML library
// reports some errors on the line before the one at fault (parser errors
// count lines from 0), others on the right one. The file cut after the
// faulty line is the first cut that fails to parse, so the cuts after the
// reported line and the two next are tried.
func syntaxErrorLine(raw []byte, reported int) int {
	lines := bytes.SplitAfter(raw, []byte("\n"))
	for k := max(reported, 1); k <= reported+2 && k <= len(lines); k++ {
		if !parses(bytes.Join(lines[:k], nil)) {
			return k
		}
	}
	return reported
}

// parses reports whether every document of raw is well-formed YAML.
func parses(raw []byte) bool {
	dec := yaml.NewDecoder(bytes.NewReader(raw))
	for {
		var n yaml.Node
		err := dec.Decode(&n)
		if errors.Is(err, io.EOF) {
			return true
		}
		if err != nil {
			return false
		}
	}
}

func isMachineConfig(d *document) bool {
	return d.apiVersion == eksaAPIVersion && d.kind != "MachineConfig" && strings.HasSuffix(d.kind, "MachineConfig")
}

// valueNode returns the value node of key in a mapping, or nil.
func valueNode(m *yaml.Node, key string) (*yaml.Node, *yaml.Node) {
	if m == nil || m.Kind != yaml.MappingNode {
		return nil, nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i], m.Content[i+1]
		}
	}
	return nil, nil
}

func scalarField(m *yaml.Node, key string) string {
	if _, v := valueNode(m, key); v != nil && v.Kind == yaml.ScalarNode {
		return v.Value
	}
	return ""
}

func mappingField(m *yaml.Node, key string) *yaml.Node {
	if _, v := valueNode(m, key); v != nil && v.Kind == yaml.MappingNode {
		return v
	}
	return nil
}

// selectDocuments finds the Cluster the metrics section belongs to, and the
// section itself in either form.
func (f *File) selectDocuments() []Problem {
	var clusters, metricsDocs []*document
	type inline struct {
		d        *document
		key      *yaml.Node
		specNode *yaml.Node
	}
	var inlines []inline
	for _, d := range f.docs {
		switch {
		case d.kind == "Cluster" && d.apiVersion == eksaAPIVersion:
			clusters = append(clusters, d)
			spec := mappingField(d.root, "spec")
			if k, _ := valueNode(spec, "metrics"); k != nil {
				inlines = append(inlines, inline{d, k, spec})
			}
		case d.kind == metricsv1alpha1.Kind:
			metricsDocs = append(metricsDocs, d)
		}
	}

	var probs []Problem
	at := func(line int, fieldPath, detail string) {
		probs = append(probs, Problem{File: f.Path, Line: line, Field: fieldPath, Detail: detail})
	}
	if len(clusters) == 0 {
		at(0, "", "no EKS Anywhere Cluster document (apiVersion: "+eksaAPIVersion+", kind: Cluster) in the file; point -f at the cluster spec you give to eksctl anywhere")
		return probs
	}
	nSections := len(metricsDocs) + len(inlines)
	switch {
	case nSections == 0:
		if near := f.nearMisses(clusters); len(near) > 0 {
			return near
		}
		f.clusters = clusters
		at(0, "", noMetricsSection)
		return probs
	case nSections > 1:
		var where []string
		for _, d := range metricsDocs {
			where = append(where, fmt.Sprintf("a %s document at line %d", metricsv1alpha1.Kind, d.root.Line))
		}
		for _, in := range inlines {
			where = append(where, fmt.Sprintf("Cluster %q spec.metrics at line %d", in.d.name, in.key.Line))
		}
		line := 0
		if len(metricsDocs) > 1 {
			line = metricsDocs[1].root.Line
		} else if len(inlines) > 0 {
			line = inlines[len(inlines)-1].key.Line
		}
		at(line, "", fmt.Sprintf("the file has %d metrics sections (%s); keep exactly one", nSections, joinAnd(where)))
		return probs
	}

	if len(inlines) == 1 {
		f.Form = FormInline
		f.clusterDoc, f.metricsKey, f.specNode = inlines[0].d, inlines[0].key, inlines[0].specNode
		return probs
	}

	f.Form = FormDocument
	f.metricsDoc = metricsDocs[0]
	md := f.metricsDoc
	f.MetricsName = md.name
	want, wantLine, wantField := md.name, md.root.Line, "metadata.name"
	if ref := mappingField(mappingField(md.root, "spec"), "clusterRef"); ref != nil {
		want, wantLine, wantField = scalarField(ref, "name"), ref.Line, "spec.clusterRef.name"
	} else if len(clusters) > 1 {
		var names []string
		for _, c := range clusters {
			names = append(names, strconv.Quote(c.name))
		}
		at(md.root.Line, "spec.clusterRef", fmt.Sprintf("Required value: the file has %d Clusters (%s); set spec.clusterRef.name to the one these metrics are for", len(clusters), joinAnd(names)))
		return probs
	}
	for _, c := range clusters {
		if c.name == want {
			f.clusterDoc = c
		}
	}
	if f.clusterDoc == nil {
		var names []string
		for _, c := range clusters {
			names = append(names, strconv.Quote(c.name))
		}
		at(wantLine, wantField, fmt.Sprintf("Invalid value: %q: no Cluster of that name in the file (it has %s); the %s must name its Cluster", want, joinAnd(names), metricsv1alpha1.Kind))
	}
	return probs
}

func joinAnd(items []string) string {
	switch len(items) {
	case 0:
		return ""
	case 1:
		return items[0]
	}
	out := ""
	for i, s := range items {
		switch {
		case i == 0:
			out = s
		case i == len(items)-1:
			out += " and " + s
		default:
			out += ", " + s
		}
	}
	return out
}

func (f *File) decodeCluster() []Problem {
	d := f.clusterDoc
	dec := newDecoder(false, d.lines)
	// The inline metrics section is decoded strictly on its own, below.
	dec.decode(d.root, &f.Cluster, nil)
	return d.lines.problems(f.Path, dec.errs)
}

func (f *File) decodeMetrics() []Problem {
	switch f.Form {
	case FormInline:
		d := f.clusterDoc
		_, v := valueNode(f.specNode, "metrics")
		dec := newDecoder(true, d.lines)
		dec.decode(v, &f.Metrics, field.NewPath("spec", "metrics"))
		return d.lines.problems(f.Path, dec.errs)
	case FormDocument:
		d := f.metricsDoc
		dec := newDecoder(true, d.lines)
		var mc metricsv1alpha1.MetricsConfig
		dec.decode(d.root, &mc, nil)
		if mc.APIVersion != metricsv1alpha1.APIVersion {
			dec.fail(d.lines.lineOf("apiVersion"), field.NotSupported(field.NewPath("apiVersion"), mc.APIVersion, []string{metricsv1alpha1.APIVersion}))
		}
		if mc.Name == "" {
			dec.fail(d.root.Line, field.Required(field.NewPath("metadata", "name"), "the name of the Cluster these metrics are for"))
		}
		f.Metrics = mc.Spec
		return d.lines.problems(f.Path, dec.errs)
	}
	return nil
}

// nearMisses finds what was probably meant as the metrics section: a
// document whose kind is a misspelt MetricsConfig (or that uses the
// MetricsConfig API group with another kind), or a Cluster.spec key that is
// a misspelt "metrics".
func (f *File) nearMisses(clusters []*document) []Problem {
	var probs []Problem
	for _, d := range f.docs {
		group, _, _ := strings.Cut(d.apiVersion, "/")
		if d.kind != metricsv1alpha1.Kind && (group == metricsv1alpha1.Group || d.kind != "" && EditDistance(strings.ToLower(d.kind), strings.ToLower(metricsv1alpha1.Kind)) <= 3) {
			probs = append(probs, Problem{File: f.Path, Line: lineOfKey(d.root, "kind"), Field: "kind",
				Detail: fmt.Sprintf("no metrics section found; this document has kind %q: did you mean %q?", d.kind, metricsv1alpha1.Kind)})
		}
	}
	for _, c := range clusters {
		spec := mappingField(c.root, "spec")
		if spec == nil {
			continue
		}
		for i := 0; i+1 < len(spec.Content); i += 2 {
			k := spec.Content[i].Value
			if k != "metrics" && EditDistance(strings.ToLower(k), "metrics") <= 2 {
				probs = append(probs, Problem{File: f.Path, Line: spec.Content[i].Line, Field: "spec." + k,
					Detail: "no metrics section found; did you mean spec.metrics?"})
			}
		}
	}
	return probs
}

func lineOfKey(m *yaml.Node, key string) int {
	if k, _ := valueNode(m, key); k != nil {
		return k.Line
	}
	return m.Line
}

// EditDistance is the Levenshtein distance of two short strings (the "did
// you mean" of fields, kinds, commands and flags).
func EditDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}
