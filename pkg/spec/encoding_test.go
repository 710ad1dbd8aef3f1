package spec

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf16"
)

const encodingSpec = "apiVersion: anywhere.eks.amazonaws.com/v1alpha1\nkind: Cluster\nmetadata: {name: c}\nspec:\n  kubernetesVersion: \"1.36\"\n  datacenterRef: {kind: DockerDatacenterConfig, name: c}\n  metrics:\n    scrapers: [{kind: Group, name: g}]\n"

// A spec in UTF-16 or UTF-32 is refused naming the encoding (the YAML
// library reads UTF-16, and cluster.yaml, written back from the file's own
// bytes, came out wrong); Latin-1 bytes are refused at their line and
// column; UTF-8 with or without a byte-order mark loads.
func TestLoadRefusesWhatItCannotWriteBack(t *testing.T) {
	u16 := func(bigEndian bool) string {
		var b strings.Builder
		if bigEndian {
			b.WriteString("\xFE\xFF")
		} else {
			b.WriteString("\xFF\xFE")
		}
		for _, u := range utf16.Encode([]rune(encodingSpec)) {
			if bigEndian {
				b.WriteByte(byte(u >> 8))
				b.WriteByte(byte(u))
			} else {
				b.WriteByte(byte(u))
				b.WriteByte(byte(u >> 8))
			}
		}
		return b.String()
	}
	for name, tc := range map[string]struct{ raw, want string }{
		"UTF-16 LE":            {u16(false), "UTF-16 (little-endian) with a byte-order mark"},
		"UTF-16 BE":            {u16(true), "UTF-16 (big-endian) with a byte-order mark"},
		"UTF-16 without a BOM": {u16(false)[2:], ":1: the file holds NUL bytes"},
		"UTF-32 LE":            {"\xFF\xFE\x00\x00a\x00\x00\x00", "UTF-32 (little-endian)"},
		"Latin-1":              {strings.Replace(encodingSpec, "name: g}", "name: caf\xe9}", 1), ":8: byte 0xE9 (column 39) is not UTF-8"},
	} {
		_, err := Load("c.yaml", strings.NewReader(tc.raw))
		var inv *InvalidError
		if !errors.As(err, &inv) || !strings.Contains(err.Error(), "c.yaml"+tc.want) && !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", name, err, tc.want)
		}
	}
	for name, raw := range map[string]string{"UTF-8": encodingSpec, "UTF-8 with a BOM": "\xEF\xBB\xBF" + encodingSpec} {
		if _, err := Load("c.yaml", strings.NewReader(raw)); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// A key set twice in a document eksa-metrics does not decode whole (a
// machine config) is refused at its line, as EKS Anywhere refuses it: a
// missing "---" runs two documents together and makes one.
func TestLoadRefusesDuplicateKeysInOtherDocuments(t *testing.T) {
	doc := encodingSpec + "---\napiVersion: anywhere.eks.amazonaws.com/v1alpha1\nkind: DockerDatacenterConfig\nmetadata: {name: c}\nspec: {}\napiVersion: anywhere.eks.amazonaws.com/v1alpha1\nkind: Cluster\n"
	_, err := Load("c.yaml", strings.NewReader(doc))
	if err == nil || !strings.Contains(err.Error(), "c.yaml:14: apiVersion: duplicate key (already set on line 10) in the DockerDatacenterConfig document") {
		t.Errorf("%v", err)
	}
	if _, err := Load("c.yaml", strings.NewReader(encodingSpec+"---\napiVersion: anywhere.eks.amazonaws.com/v1alpha1\nkind: DockerDatacenterConfig\nmetadata: {name: c}\nspec: {}\n")); err != nil {
		t.Errorf("without the duplicate: %v", err)
	}
}

// An alias to another document's anchor is refused at its line.
func TestLoadRefusesAliasesAcrossDocuments(t *testing.T) {
	doc := "apiVersion: anywhere.eks.amazonaws.com/v1alpha1\nkind: DockerDatacenterConfig\nmetadata: {name: &n c}\nspec: {}\n---\n" +
		strings.Replace(encodingSpec, "metadata: {name: c}", "metadata: {name: *n}", 1)
	_, err := Load("c.yaml", strings.NewReader(doc))
	if err == nil || !strings.Contains(err.Error(), "c.yaml:8: alias *n refers to the anchor on line 3, in another document") {
		t.Errorf("%v", err)
	}
}

// A mistyped field of the metrics section names the field meant.
func TestUnknownFieldSaysWhichWasMeant(t *testing.T) {
	_, err := Load("c.yaml", strings.NewReader(encodingSpec+"    exposer: proxy\n    zpages: {statusz: true}\n"))
	for _, want := range []string{`c.yaml:9: spec.metrics.exposer: Forbidden: unknown field (did you mean "exposure"?)`, `spec.metrics.zpages: Forbidden: unknown field (did you mean "zPages"?)`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("want %q in: %v", want, err)
		}
	}
}

// A YAML merge key is refused at its line wherever it is, in the Cluster
// document (whose fields would be missed) as in the metrics section.
func TestLoadRefusesMergeKeys(t *testing.T) {
	for name, tc := range map[string]struct{ doc, want string }{
		"cluster spec": {strings.Replace(encodingSpec, "  kubernetesVersion: \"1.36\"\n", "  <<: {kubernetesVersion: \"1.36\"}\n", 1), "c.yaml:5: spec.<<: Forbidden: YAML merge keys (<<) are not supported"},
		"labels":       {strings.Replace(encodingSpec, "metadata: {name: c}", "metadata: {name: c, labels: {<<: {team: a}}}", 1), "c.yaml:3: metadata.labels[<<]: Forbidden: YAML merge keys"},
		"metrics":      {encodingSpec + "    <<: {exposure: proxy}\n", "c.yaml:9: spec.metrics.<<: Forbidden: YAML merge keys"},
	} {
		_, err := Load("c.yaml", strings.NewReader(tc.doc))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: want %q in: %v", name, tc.want, err)
		}
	}
}
