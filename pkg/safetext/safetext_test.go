package safetext_test

import (
	"encoding/json"
	"strconv"
	"testing"

	"github.com/eksa-metrics/eksa-metrics/pkg/safetext"
)

func TestEscape(t *testing.T) {
	for in, want := range map[string]string{
		"ubuntu":                                 "ubuntu",
		"quay.io/brancz/kube-rbac-proxy:v0.19.1": "quay.io/brancz/kube-rbac-proxy:v0.19.1",
		"système: ok, \uFFFD":                    "système: ok, \uFFFD",
		"ubuntu\n# forged":                       `ubuntu\n# forged`,
		"a\r\tb":                                 `a\r\tb`,
		"\x1b[2Jclear":                           `\x1b[2Jclear`,
		"abc\u202edcba":                          `abc\u202edcba`,
		"zero\u200bwidth\u2028line":              `zero\u200bwidth\u2028line`,
		"nbsp\u00a0":                             `nbsp\u00a0`,
		"back\\slash\n":                          `back\\slash\n`,
		"bad\xffutf8":                            `bad\xffutf8`,
		"\U000E0041 tag":                         `\U000e0041 tag`,
	} {
		if got := safetext.Escape(in); got != want {
			t.Errorf("Escape(%q) = %q, want %q", in, got, want)
		}
	}
}

// JSON keeps what the text decodes to and makes it printable.
func TestJSON(t *testing.T) {
	for _, v := range []string{"plain", "a\nb\\c", "abc\u202edcba", "tag\U000E0041", "sep\u2028"} {
		b, _ := json.Marshal(v)
		got := safetext.JSON(b)
		var back string
		if err := json.Unmarshal([]byte(got), &back); err != nil || back != v {
			t.Errorf("JSON(%s) = %s, which decodes to %q (%v)", b, got, back, err)
		}
		for _, r := range got {
			if !strconv.IsPrint(r) {
				t.Errorf("JSON(%s) = %q keeps %U", b, got, r)
			}
		}
	}
	if got := safetext.JSON([]byte(`"a\u202eb"`)); got != `"a\u202eb"` {
		t.Errorf("an escape JSON already has is kept: %s", got)
	}
}
