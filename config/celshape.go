package config

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// part says what eksa-metrics owns of an object at one level, so that the
// admission policy can hold everything else as it was: "object minus the
// owned paths equals oldObject minus the same paths". Fields nobody listed,
// today's or a fork's, are compared whole, because the comparison walks the
// keys the objects have (dyn(x).all(k, ...) iterates the fields of a typed
// object as the API server's CEL values do, k8s.io/apiserver
// pkg/cel/common/valuesunstructured.go, unstructuredMap.Iterator) instead
// of a list of fields someone wrote down.
type part struct {
	// free fields are owned whole: any change, which other rules check.
	free []string
	// nested fields are owned below: compared with their own part.
	nested map[string]part
	// key is a CEL predicate on k: a key of this map (annotations, data)
	// that is owned whole.
	key string
}

// unchangedBut is a CEL expression: o and old are equal but in the owned
// parts of p.
func unchangedBut(o, old string, p part) string {
	return (&celWriter{}).unchangedBut(o, old, p)
}

// celWriter names the variables of nested comprehensions.
type celWriter struct{ n int }

func (w *celWriter) v(prefix string) string {
	w.n++
	return fmt.Sprintf("%s%d", prefix, w.n)
}

func (w *celWriter) unchangedBut(o, old string, p part) string {
	k := w.v("k")
	owned := p.ownedKey(k)
	parts := []string{fmt.Sprintf("dyn(%[1]s).all(%[3]s, %[4]s || (%[3]s in dyn(%[2]s) && dyn(%[1]s)[%[3]s] == dyn(%[2]s)[%[3]s])) && dyn(%[2]s).all(%[3]s, %[4]s || %[3]s in dyn(%[1]s))",
		o, old, k, owned)}
	for _, name := range slices.Sorted(maps.Keys(p.nested)) {
		child := p.nested[name]
		co, cold := o+"."+name, old+"."+name
		parts = append(parts, fmt.Sprintf("(has(%[1]s) && has(%[2]s) ? %[3]s : ((!has(%[1]s) || %[4]s) && (!has(%[2]s) || %[5]s)))",
			co, cold, w.unchangedBut(co, cold, child), w.onlyOwned(co, child), w.onlyOwned(cold, child)))
	}
	return "(" + strings.Join(parts, " && ") + ")"
}

// onlyOwned: x holds nothing but owned parts (what may appear or go where
// the other object has nothing at that path).
func (w *celWriter) onlyOwned(x string, p part) string {
	k := w.v("k")
	parts := []string{fmt.Sprintf("dyn(%s).all(%s, %s)", x, k, p.ownedKey(k))}
	for _, name := range slices.Sorted(maps.Keys(p.nested)) {
		parts = append(parts, fmt.Sprintf("(!has(%[1]s.%[2]s) || %[3]s)", x, name, w.onlyOwned(x+"."+name, p.nested[name])))
	}
	return "(" + strings.Join(parts, " && ") + ")"
}

// ownedKey is a CEL predicate on k: a key owned whole or below.
func (p part) ownedKey(k string) string {
	names := slices.Concat(p.free, slices.Collect(maps.Keys(p.nested)))
	slices.Sort(names)
	var alts []string
	if len(names) > 0 {
		alts = append(alts, k+" in "+celList(names))
	}
	if p.key != "" {
		alts = append(alts, "("+strings.ReplaceAll(p.key, "$k", k)+")")
	}
	if len(alts) == 0 {
		return "false"
	}
	return "(" + strings.Join(alts, " || ") + ")"
}

// onlyKeys: the object or map x has no key but these (an allowlist of a
// created object's fields, the API server's defaults included).
func onlyKeys(x string, keys ...string) string {
	return fmt.Sprintf("dyn(%s).all(k, k in %s)", x, celList(keys))
}

// objectMeta is what a write may change of metadata: the bookkeeping the
// API server itself does on every write, and the annotations whose key
// satisfies key ($k).
func objectMeta(key string) part {
	return part{free: []string{"managedFields", "generation", "resourceVersion"}, nested: map[string]part{"annotations": {key: key}}}
}

// at builds the part that owns the fields at the paths, each path's last
// step whole.
func at(paths ...[]string) part {
	root := part{}
	for _, p := range paths {
		root = root.with(p)
	}
	return root
}

func (p part) with(path []string) part {
	if len(path) == 1 {
		p.free = append(slices.Clone(p.free), path[0])
		return p
	}
	nested := maps.Clone(p.nested)
	if nested == nil {
		nested = map[string]part{}
	}
	nested[path[0]] = nested[path[0]].with(path[1:])
	p.nested = nested
	return p
}
