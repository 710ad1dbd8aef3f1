// Package safetext escapes strings that come from input files or from a
// cluster before they reach a person: PLAN.md, apply's plan on stderr. Such a
// string cannot start a line of its own, move the cursor or reorder the text
// around it.
package safetext

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// Escape returns s with every rune that is not printable (strconv.IsPrint:
// control characters, category Cc; format characters, category Cf, such as
// U+202E RIGHT-TO-LEFT OVERRIDE and U+200B ZERO WIDTH SPACE; line and
// paragraph separators; spaces other than U+0020; private-use and unassigned
// code points) written as a Go escape (\n, \x1b, \u202e), each byte of
// invalid UTF-8 as \xNN, and a backslash as \\, so that no escape is
// ambiguous. A string of printable characters, the usual case, is returned
// as it is.
func Escape(s string) string {
	if printable(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\\':
			b.WriteString(`\\`)
		case strconv.IsPrint(r):
			b.WriteString(s[i : i+size])
		default:
			q := strconv.QuoteRune(r) // '\n', '\x1b', '\u202e'
			b.WriteString(q[1 : len(q)-1])
		}
		i += size
	}
	return b.String()
}

func printable(s string) bool {
	for i, r := range s {
		if r == '\\' || !strconv.IsPrint(r) || r == utf8.RuneError && !strings.HasPrefix(s[i:], string(utf8.RuneError)) {
			return false
		}
	}
	return true
}

// JSON makes encoded JSON printable in the same way without changing what it
// decodes to: encoding/json leaves U+202E and other format characters as
// they are, so each rune that is not printable becomes a \uXXXX escape (a
// surrogate pair above U+FFFF). Backslashes are JSON's own and stay.
func JSON(b []byte) string {
	s := string(b)
	if !strings.ContainsFunc(s, func(r rune) bool { return !strconv.IsPrint(r) }) {
		return s
	}
	var out strings.Builder
	for _, r := range s {
		switch {
		case strconv.IsPrint(r):
			out.WriteRune(r)
		case r > 0xffff:
			r1, r2 := utf16.EncodeRune(r)
			fmt.Fprintf(&out, `\u%04x\u%04x`, r1, r2)
		default:
			fmt.Fprintf(&out, `\u%04x`, r)
		}
	}
	return out.String()
}
