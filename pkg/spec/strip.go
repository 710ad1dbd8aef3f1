package spec

import (
	"bytes"
	"encoding/json"
	"fmt"

	"go.yaml.in/yaml/v3"
)

// ClusterYAML returns the file as EKS Anywhere must see it: the metrics
// section removed, every other byte (comments included) unchanged.
func (f *File) ClusterYAML() ([]byte, error) {
	lines := bytes.SplitAfter(f.Raw, []byte("\n"))
	drop := map[int]bool{} // 1-based line numbers
	eol := "\n"
	if len(lines) > 0 && bytes.HasSuffix(lines[0], []byte("\r\n")) {
		eol = "\r\n"
	}
	insert, err := f.kubeletInsertions(eol) // before these lines
	if err != nil {
		return nil, err
	}
	switch f.Form {
	case FormDocument:
		d := f.metricsDoc
		for l := d.firstLine; l <= d.lastLine; l++ {
			drop[l] = true
		}
		// Remove one separator with it: the one before, or else the one after.
		if d.firstLine > 1 {
			drop[d.firstLine-1] = true
		} else if d.lastLine+1 <= len(lines) {
			drop[d.lastLine+1] = true
		}
		// A file that ends in this document keeps its final newline.
		if d.lastLine >= len(lines)-1 && d.firstLine > 1 && len(lines) > 0 {
			prev := d.firstLine - 2 // 0-based index of the line before the separator
			if prev >= 0 && !bytes.HasSuffix(lines[prev], []byte("\n")) {
				lines[prev] = append(lines[prev], '\n')
			}
		}
	case FormInline:
		if doc := f.docText(f.clusterDoc); isJSON(doc) {
			out, err := removeJSONMember(doc, "spec", "metrics")
			if err != nil {
				return nil, fmt.Errorf("%s: spec.metrics: cannot remove the metrics section from the JSON document: %w", f.Path, err)
			}
			return bytes.Replace(f.Raw, doc, out, 1), nil // kubeletInsertions refuses JSON
		}
		if f.specNode.Style&yaml.FlowStyle != 0 {
			return nil, fmt.Errorf("%s:%d: spec.metrics: cannot remove the metrics section from a flow-style spec {...}; write Cluster.spec in block style", f.Path, f.metricsKey.Line)
		}
		indent := f.metricsKey.Column - 1
		last := f.metricsKey.Line
		for l := f.metricsKey.Line + 1; l <= len(lines); l++ {
			text := bytes.TrimRight(lines[l-1], "\r\n")
			trimmed := bytes.TrimLeft(text, " ")
			if len(trimmed) == 0 {
				continue // blank lines are decided by what follows them
			}
			if len(text)-len(trimmed) <= indent || separator.Match(text) {
				break
			}
			last = l
		}
		for l := f.metricsKey.Line; l <= last; l++ {
			drop[l] = true
		}
	}
	var out bytes.Buffer
	for i, l := range lines {
		out.Write(insert[i+1])
		if !drop[i+1] {
			out.Write(l)
		}
	}
	return out.Bytes(), nil
}

// docText is the text of a document, its separators excluded.
func (f *File) docText(d *document) []byte {
	lines := bytes.SplitAfter(f.Raw, []byte("\n"))
	if d.firstLine < 1 || d.lastLine > len(lines) || d.firstLine > d.lastLine {
		return nil
	}
	return bytes.Join(lines[d.firstLine-1:d.lastLine], nil)
}

// isJSON reports whether a document is written as a JSON object.
func isJSON(doc []byte) bool {
	t := bytes.TrimSpace(doc)
	return len(t) > 0 && t[0] == '{' && json.Valid(t)
}
