package spec

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"

	metricsv1alpha1 "github.com/eksa-metrics/eksa-metrics/pkg/apis/metrics/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"go.yaml.in/yaml/v3"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// maxAliases bounds how many YAML aliases one document may expand while it
// is decoded, so that an alias bomb fails fast instead of eating memory.
const maxAliases = 1000

// decoder maps YAML nodes onto the Go types of this package. It reports every
// problem (not only the first) with the field path, and remembers the line of
// each field so that later validation errors can name it too.
type decoder struct {
	strict bool // unknown fields are errors (the metrics section); else ignored (EKS-A documents)
	// foreign: a document eksa-metrics only reads from (a Bundles manifest):
	// a duplicate key is an error only where eksa-metrics reads the field.
	foreign bool
	errs    field.ErrorList
	lines   map[string]int
	aliases int
}

func newDecoder(strict bool, lines map[string]int) *decoder {
	return &decoder{strict: strict, lines: lines}
}

func (d *decoder) fail(line int, err *field.Error) {
	d.errs = append(d.errs, err)
	if line > 0 {
		d.lines[err.Field] = line
	}
}

// resolve follows an alias, counting expansions.
func (d *decoder) resolve(n *yaml.Node, path *field.Path) (*yaml.Node, bool) {
	for n != nil && n.Kind == yaml.AliasNode {
		d.aliases++
		if d.aliases > maxAliases {
			if d.aliases == maxAliases+1 {
				d.fail(n.Line, field.Forbidden(path, fmt.Sprintf("more than %d YAML alias expansions; write the values out instead of using anchors", maxAliases)))
			}
			return nil, false
		}
		n = n.Alias
	}
	return n, n != nil
}

// isMergeKey: a YAML 1.1 merge key (<<), which EKS-A's parser expands and
// eksa-metrics, which reads every field where it is written and gives
// cluster.yaml back byte for byte, does not.
func isMergeKey(k *yaml.Node) bool {
	return k.Kind == yaml.ScalarNode && (k.Tag == "!!merge" || k.Value == "<<" && k.Style == 0)
}

func mergeKeyError(path *field.Path) *field.Error {
	return field.Forbidden(path, "YAML merge keys (<<) are not supported: eksa-metrics reads each field where it is written (and writes cluster.yaml back byte for byte), so merged fields would be missed; write them out in place")
}

func isNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.Tag == "!!null"
}

// decode fills v (a pointer) from n.
func (d *decoder) decode(n *yaml.Node, v any, path *field.Path) {
	d.value(n, reflect.ValueOf(v).Elem(), path)
}

func (d *decoder) value(n *yaml.Node, rv reflect.Value, path *field.Path) {
	n, ok := d.resolve(n, path)
	if !ok {
		return
	}
	if _, seen := d.lines[path.String()]; !seen {
		d.lines[path.String()] = n.Line
	}
	if isNull(n) {
		return // leave the zero value: the default applies
	}
	switch rv.Kind() {
	case reflect.Pointer:
		nv := reflect.New(rv.Type().Elem())
		d.value(n, nv.Elem(), path)
		rv.Set(nv)
	case reflect.Struct:
		d.structValue(n, rv, path)
	case reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			d.fail(n.Line, field.TypeInvalid(path, shortValue(n), "must be a list"))
			return
		}
		s := reflect.MakeSlice(rv.Type(), len(n.Content), len(n.Content))
		for i, item := range n.Content {
			d.value(item, s.Index(i), path.Index(i))
		}
		rv.Set(s)
	case reflect.Map:
		d.mapValue(n, rv, path)
	case reflect.Interface:
		var x any
		if err := n.Decode(&x); err != nil {
			d.fail(n.Line, field.Invalid(path, shortValue(n), err.Error()))
			return
		}
		rv.Set(reflect.ValueOf(&x).Elem())
		d.indexLines(n, path)
	case reflect.String:
		if n.Kind != yaml.ScalarNode {
			d.fail(n.Line, field.TypeInvalid(path, shortValue(n), "must be a string"))
			return
		}
		if d.strict && n.Tag != "!!str" {
			d.fail(n.Line, field.TypeInvalid(path, n.Value, fmt.Sprintf("must be a string, not %s; quote it", tagName(n.Tag))))
			return
		}
		rv.SetString(n.Value)
	case reflect.Bool:
		b, err := strconv.ParseBool(n.Value)
		if n.Kind != yaml.ScalarNode || n.Tag != "!!bool" || err != nil {
			d.fail(n.Line, field.TypeInvalid(path, shortValue(n), "must be true or false"))
			return
		}
		rv.SetBool(b)
	case reflect.Int:
		i, err := strconv.Atoi(n.Value)
		if n.Kind != yaml.ScalarNode || n.Tag != "!!int" || err != nil {
			d.fail(n.Line, field.TypeInvalid(path, shortValue(n), "must be a whole number"))
			return
		}
		rv.SetInt(int64(i))
	default:
		panic(fmt.Sprintf("spec: no decoder for %s", rv.Type()))
	}
}

// indexLines remembers the line of every field below a value decoded
// as a whole (an embedded object such as a kubeletConfiguration), so that a
// problem of one of its fields points at that field's line, not its parent's.
func (d *decoder) indexLines(n *yaml.Node, path *field.Path) {
	switch n.Kind {
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if k.Kind != yaml.ScalarNode {
				continue
			}
			child := path.Child(k.Value)
			if _, seen := d.lines[child.String()]; !seen {
				d.lines[child.String()] = k.Line
			}
			d.indexLines(v, child)
		}
	case yaml.SequenceNode:
		for i, item := range n.Content {
			child := path.Index(i)
			if _, seen := d.lines[child.String()]; !seen {
				d.lines[child.String()] = item.Line
			}
			d.indexLines(item, child)
		}
	}
}

func (d *decoder) structValue(n *yaml.Node, rv reflect.Value, path *field.Path) {
	if n.Kind != yaml.MappingNode {
		d.fail(n.Line, field.TypeInvalid(path, shortValue(n), "must be a mapping of fields"))
		return
	}
	switch rv.Type() {
	case objectMetaType:
		// A file carries a name and perhaps labels; the rest of an API
		// object's metadata is the API server's.
		var md ObjectMeta
		d.structValue(n, reflect.ValueOf(&md).Elem(), path)
		om := rv.Addr().Interface().(*metav1.ObjectMeta)
		om.Name, om.Namespace, om.Labels, om.Annotations = md.Name, md.Namespace, md.Labels, md.Annotations
		return
	case statusType:
		d.fail(n.Line, field.Forbidden(path, "the status is written by the controller, not in a file"))
		return
	}
	fields := jsonFields(rv.Type())
	seen := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind != yaml.ScalarNode {
			d.fail(k.Line, field.Invalid(path, shortValue(k), "field names must be plain strings"))
			continue
		}
		child := path.Child(k.Value)
		if isMergeKey(k) {
			d.fail(k.Line, mergeKeyError(child))
			continue
		}
		if _, known := fields[k.Value]; d.foreign && !known {
			continue
		}
		if first, dup := seen[k.Value]; dup {
			d.fail(k.Line, field.Duplicate(child, fmt.Sprintf("already set on line %d", first)))
			continue
		}
		seen[k.Value] = k.Line
		idx, known := fields[k.Value]
		if !known {
			if d.strict {
				d.fail(k.Line, field.Forbidden(child, "unknown field"+didYouMeanField(k.Value, slices.Sorted(maps.Keys(fields)))+"; known fields: "+strings.Join(slices.Sorted(maps.Keys(fields)), ", ")))
			}
			continue
		}
		d.lines[child.String()] = k.Line
		d.value(v, rv.FieldByIndex(idx), child)
	}
}

var (
	objectMetaType = reflect.TypeOf(metav1.ObjectMeta{})
	statusType     = reflect.TypeOf(metricsv1alpha1.MetricsConfigStatus{})
)

func (d *decoder) mapValue(n *yaml.Node, rv reflect.Value, path *field.Path) {
	if n.Kind != yaml.MappingNode {
		d.fail(n.Line, field.TypeInvalid(path, shortValue(n), "must be a mapping"))
		return
	}
	m := reflect.MakeMapWithSize(rv.Type(), len(n.Content)/2)
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		child := path.Key(k.Value)
		if isMergeKey(k) {
			d.fail(k.Line, mergeKeyError(child))
			continue
		}
		if m.MapIndex(reflect.ValueOf(k.Value)).IsValid() {
			d.fail(k.Line, field.Duplicate(child, "key set twice"))
			continue
		}
		// A key is also found as a field: a problem may name an object's
		// field by either form (kubeletConfiguration.serverTLSBootstrap).
		if f := path.Child(k.Value).String(); d.lines[f] == 0 {
			d.lines[f] = k.Line
		}
		ev := reflect.New(rv.Type().Elem()).Elem()
		d.value(v, ev, child)
		m.SetMapIndex(reflect.ValueOf(k.Value), ev)
	}
	rv.Set(m)
}

// jsonFields maps a struct's JSON field names to field indexes, the fields
// of embedded ",inline" structs (metav1.TypeMeta) included.
func jsonFields(t reflect.Type) map[string][]int {
	out := make(map[string][]int, t.NumField())
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case name == "" && f.Anonymous && strings.Contains(opts, "inline"):
			for n, idx := range jsonFields(f.Type) {
				out[n] = append([]int{i}, idx...)
			}
		case name != "" && name != "-":
			out[name] = []int{i}
		}
	}
	return out
}

func tagName(tag string) string {
	switch tag {
	case "!!int":
		return "a number"
	case "!!float":
		return "a decimal number"
	case "!!bool":
		return "true/false"
	case "!!null":
		return "empty"
	}
	return tag
}

// shortValue is what an error shows of a node: a scalar's text, or its shape.
func shortValue(n *yaml.Node) string {
	switch n.Kind {
	case yaml.ScalarNode:
		if len(n.Value) > 64 {
			return n.Value[:64] + "..."
		}
		return n.Value
	case yaml.MappingNode:
		return "<mapping>"
	case yaml.SequenceNode:
		return "<list>"
	}
	return "<alias>"
}

// didYouMeanField names the known field closest to a mistyped one (an edit
// distance of at most 2, case aside), or nothing.
func didYouMeanField(name string, known []string) string {
	best, dist := "", 3
	for _, k := range known {
		if d := EditDistance(strings.ToLower(name), strings.ToLower(k)); d < dist {
			best, dist = k, d
		}
	}
	if best == "" {
		return ""
	}
	return fmt.Sprintf(" (did you mean %q?)", best)
}
