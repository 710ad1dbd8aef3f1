package spec

import (
	"bytes"
	"fmt"
	"unicode/utf8"
)

// encodingProblems refuses what eksa-metrics cannot edit byte-true: it
// writes cluster.yaml back from the file's own bytes, line by line, which
// holds for UTF-8 only. A UTF-16 or UTF-32 file (a byte-order mark, or the
// NUL bytes of one without) is refused whole, naming the encoding; bytes
// that are not UTF-8 (Latin-1, Windows-1252) are refused at their line. A
// UTF-8 byte-order mark is kept as it is. (A tab that indents is the YAML
// parser's error, with its line: tabs are content in a block scalar.)
func encodingProblems(path string, raw []byte) []Problem {
	for _, bom := range []struct {
		mark []byte
		name string
	}{
		{[]byte{0x00, 0x00, 0xFE, 0xFF}, "UTF-32 (big-endian)"},
		{[]byte{0xFF, 0xFE, 0x00, 0x00}, "UTF-32 (little-endian)"},
		{[]byte{0xFE, 0xFF}, "UTF-16 (big-endian)"},
		{[]byte{0xFF, 0xFE}, "UTF-16 (little-endian)"},
	} {
		if bytes.HasPrefix(raw, bom.mark) {
			return []Problem{{File: path, Detail: fmt.Sprintf("the file is %s with a byte-order mark (what some Windows editors save); eksa-metrics reads and writes UTF-8 only, and writes cluster.yaml back byte for byte: save it as UTF-8 and run again", bom.name)}}
		}
	}
	if i := bytes.IndexByte(raw, 0); i >= 0 {
		return []Problem{{File: path, Line: bytes.Count(raw[:i], []byte("\n")) + 1, Detail: "the file holds NUL bytes: it is UTF-16 or UTF-32 without a byte-order mark, or not text; save it as UTF-8 and run again"}}
	}
	var probs []Problem
	for n, line := range bytes.Split(raw, []byte("\n")) {
		if !utf8.Valid(line) {
			col := 0
			for col < len(line) {
				r, size := utf8.DecodeRune(line[col:])
				if r == utf8.RuneError && size <= 1 {
					break
				}
				col += size
			}
			probs = append(probs, Problem{File: path, Line: n + 1, Detail: fmt.Sprintf("byte 0x%02X (column %d) is not UTF-8: the file was saved as Latin-1 or Windows-1252; save it as UTF-8", line[col], col+1)})
		}
	}
	return probs
}
