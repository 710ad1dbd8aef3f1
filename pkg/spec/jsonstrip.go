package spec

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// removeJSONMember returns a JSON document without the member at path (an
// object key inside nested objects), every other byte unchanged: a cluster
// file written as JSON keeps its layout, as a YAML one keeps its comments.
func removeJSONMember(doc []byte, path ...string) ([]byte, error) {
	s := &jsonScanner{b: doc}
	s.space()
	start, end, err := s.member(path)
	if err != nil {
		return nil, err
	}
	out := append([]byte{}, doc[:start]...)
	return append(out, doc[end:]...), nil
}

type jsonScanner struct {
	b []byte
	i int
}

var errJSON = errors.New("not valid JSON")

func (s *jsonScanner) space() {
	for s.i < len(s.b) && bytes.IndexByte([]byte(" \t\r\n"), s.b[s.i]) >= 0 {
		s.i++
	}
}

// member finds the span to cut for the member at path of the object at s.i:
// the key, its value and one comma with the blanks around it.
func (s *jsonScanner) member(path []string) (int, int, error) {
	if s.i >= len(s.b) || s.b[s.i] != '{' {
		return 0, 0, fmt.Errorf("%w: expected an object for %q", errJSON, path[0])
	}
	s.i++
	prevEnd := -1 // end of the previous member's value
	for {
		s.space()
		if s.i < len(s.b) && s.b[s.i] == '}' {
			return 0, 0, fmt.Errorf("no member %q", path[0])
		}
		keyStart := s.i
		key, err := s.str()
		if err != nil {
			return 0, 0, err
		}
		s.space()
		if s.i >= len(s.b) || s.b[s.i] != ':' {
			return 0, 0, errJSON
		}
		s.i++
		s.space()
		if key == path[0] && len(path) > 1 {
			return s.member(path[1:])
		}
		if err := s.value(); err != nil {
			return 0, 0, err
		}
		valueEnd := s.i
		s.space()
		if s.i >= len(s.b) {
			return 0, 0, errJSON
		}
		next := s.b[s.i]
		if key == path[0] {
			switch {
			case next == ',': // cut up to the next key
				s.i++
				s.space()
				return keyStart, s.i, nil
			case prevEnd >= 0: // the last member: cut from the comma before it
				return prevEnd, valueEnd, nil
			default: // the only member
				return keyStart, valueEnd, nil
			}
		}
		if next == '}' {
			return 0, 0, fmt.Errorf("no member %q", path[0])
		}
		if next != ',' {
			return 0, 0, errJSON
		}
		prevEnd = valueEnd
		s.i++
	}
}

func (s *jsonScanner) str() (string, error) {
	if s.i >= len(s.b) || s.b[s.i] != '"' {
		return "", errJSON
	}
	start := s.i
	s.i++
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case '\\':
			s.i += 2
		case '"':
			s.i++
			var out string
			if err := jsonUnquote(s.b[start:s.i], &out); err != nil {
				return "", err
			}
			return out, nil
		default:
			s.i++
		}
	}
	return "", errJSON
}

func (s *jsonScanner) value() error {
	if s.i >= len(s.b) {
		return errJSON
	}
	switch s.b[s.i] {
	case '"':
		_, err := s.str()
		return err
	case '{', '[':
		open, close := s.b[s.i], byte('}')
		if open == '[' {
			close = ']'
		}
		s.i++
		for {
			s.space()
			if s.i < len(s.b) && s.b[s.i] == close {
				s.i++
				return nil
			}
			if open == '{' {
				if _, err := s.str(); err != nil {
					return err
				}
				s.space()
				if s.i >= len(s.b) || s.b[s.i] != ':' {
					return errJSON
				}
				s.i++
				s.space()
			}
			if err := s.value(); err != nil {
				return err
			}
			s.space()
			if s.i < len(s.b) && s.b[s.i] == ',' {
				s.i++
			}
		}
	default: // numbers, true, false, null
		start := s.i
		for s.i < len(s.b) && bytes.IndexByte([]byte(",}] \t\r\n"), s.b[s.i]) < 0 {
			s.i++
		}
		if s.i == start {
			return errJSON
		}
		return nil
	}
}

func jsonUnquote(b []byte, out *string) error { return json.Unmarshal(b, out) }
