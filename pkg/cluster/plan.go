package cluster

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/eksa-metrics/eksa-metrics/pkg/safetext"
	"github.com/eksa-metrics/eksa-metrics/pkg/templates"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
)

// Action is what a step does to the cluster.
type Action string

const (
	Create    Action = "create"
	Update    Action = "update"
	Unchanged Action = "unchanged"
	// Edit is a read-modify-write of what server-side apply cannot express
	// (a field inside the kube-proxy ConfigMap's config.conf, a Deployment's
	// atomic container args).
	Edit Action = "edit"
	// Skip marks an object that is not installed, so there is nothing to edit.
	Skip Action = "skip"
)

// noKindError: the cluster does not serve the object's kind.
type noKindError struct{ msg string }

func (e *noKindError) Error() string { return e.msg }

// Step is one object's part of the plan.
type Step struct {
	Cluster *Cluster
	Object  map[string]any
	Action  Action
	// Diff lists the fields that change, one "path: live -> desired" each.
	Diff []string
	// Rollout says what the change restarts, if anything.
	Rollout string
	// RollsControlPlane is true for a KubeadmControlPlane change.
	RollsControlPlane bool

	mapping *meta.RESTMapping
	// edit performs an Edit step.
	edit func(ctx context.Context, dryRun bool) error
}

// Name is "Kind namespace/name".
func (s *Step) Name() string {
	u := unstructured.Unstructured{Object: s.Object}
	return templates.ObjectName(u.GetKind(), u.GetNamespace(), u.GetName())
}

func (c *Cluster) resource(obj map[string]any) (dynamic.ResourceInterface, *meta.RESTMapping, error) {
	u := unstructured.Unstructured{Object: obj}
	gvk := u.GroupVersionKind()
	m, err := c.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		if meta.IsNoMatchError(err) && gvk.Group == "cert-manager.io" {
			return nil, nil, fmt.Errorf("the %s has no %s (%s): tls.certificates is cert-manager, so cert-manager must run in that cluster; install it, or set tls.certificates: eksa-metrics (apply then issues the certificates itself)", c, gvk.Kind, gvk.GroupVersion())
		}
		if meta.IsNoMatchError(err) && gvk.Kind == "PrometheusRule" {
			return nil, nil, fmt.Errorf("the %s has no %s (%s), which carries eksa-metrics' alerting rules next to the ServiceMonitors: install prometheus-operator's CRDs (the ServiceMonitor's come with it), or set scrapeConfig.serviceMonitors: false and load the rule file (docs/alerts.md)", c, gvk.Kind, gvk.GroupVersion())
		}
		if meta.IsNoMatchError(err) {
			return nil, nil, &noKindError{fmt.Sprintf("the %s has no %s (%s): install its CRD first, or turn off what needs it in the metrics section", c, gvk.Kind, gvk.GroupVersion())}
		}
		return nil, nil, err
	}
	ri := c.Dynamic.Resource(m.Resource)
	if m.Scope.Name() == meta.RESTScopeNameNamespace {
		return ri.Namespace(u.GetNamespace()), m, nil
	}
	return ri, m, nil
}

// PlanObject compares a rendered object with the live one. The object is
// unchanged when every field it sets already has that value and
// eksa-metrics already owns it through server-side apply; then applying it
// again would write nothing, so nothing is sent.
//
// Every object applied carries AppliedAnnotation, a digest of what was
// applied: a field eksa-metrics set before and no longer renders is in the
// live object still, which the comparison alone would not see (it checks
// that the live object holds what is rendered), so a different digest makes
// the step an update, and server-side apply removes the field.
//
// A bare object (kind and name only) holds nothing: applying it gives back
// every field eksa-metrics applied to the live object (a released
// KubeadmControlPlane).
func (c *Cluster) PlanObject(ctx context.Context, obj map[string]any) (*Step, error) {
	bare := isBare(obj)
	digest := ""
	if !bare {
		obj, digest = withAppliedDigest(obj)
	}
	s := &Step{Cluster: c, Object: obj}
	ri, m, err := c.resource(obj)
	if err != nil && obj["kind"] == "KubeadmControlPlane" && obj["spec"] == nil && errors.As(err, new(*noKindError)) {
		// No KubeadmControlPlane API: nothing of eksa-metrics to set or give back.
		s.Action, s.Rollout = Skip, "not served: eksa-metrics needs no item in it"
		return s, nil
	}
	if err != nil {
		return nil, fmt.Errorf("planning %s: %w", s.Name(), err)
	}
	s.mapping = m
	u := unstructured.Unstructured{Object: obj}
	if c.heldStep(s) {
		return s, nil
	}
	live, err := ri.Get(ctx, u.GetName(), metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err) && u.GetKind() == "KubeadmControlPlane" && obj["spec"] == nil:
		// Nothing of eksa-metrics to set or give back there.
		s.Action, s.Rollout = Skip, "not found: eksa-metrics needs no item in it"
		return s, nil
	case apierrors.IsNotFound(err) && u.GetKind() == "KubeadmControlPlane":
		// The object is a partial one: it changes EKS-A's KubeadmControlPlane, never creates it.
		return nil, fmt.Errorf("the %s has no KubeadmControlPlane %s/%s to change: EKS Anywhere creates it with the cluster. Check that --kubeconfig is the management cluster of %q and that the cluster exists (kubectl get kubeadmcontrolplanes -n %s)",
			c, u.GetNamespace(), u.GetName(), u.GetName(), u.GetNamespace())
	case apierrors.IsNotFound(err):
		s.Action = Create
	case err != nil:
		return nil, fmt.Errorf("reading %s from the %s: %w", s.Name(), c, err)
	case !bare && u.GetKind() != "KubeadmControlPlane" && !createdBy(live, u.GetLabels()[templates.ClusterLabel]):
		return nil, &ForeignObjectError{Object: s.Name(), Cluster: c.String(), Owner: u.GetLabels()[templates.ClusterLabel]}
	default:
		s.Diff = slices.DeleteFunc(diff("", normalize(live.Object), normalize(obj)), func(d string) bool {
			return strings.HasPrefix(d, "metadata.annotations."+templates.AppliedAnnotation+":")
		})
		prior, stamped := live.GetAnnotations()[templates.AppliedAnnotation]
		switch {
		case bare && !ownsByApply(live):
			s.Action = Unchanged
		case bare:
			s.Action = Update
			s.Diff = []string{"eksa-metrics gives back every field it applied"}
		case len(s.Diff) == 0 && ownsByApply(live) && prior == digest:
			s.Action = Unchanged
		case len(s.Diff) == 0 && ownsByApply(live) && stamped:
			s.Action = Update
			s.Diff = []string{"fields eksa-metrics applied before and no longer renders: server-side apply removes them"}
		case len(s.Diff) == 0 && ownsByApply(live):
			s.Action = Update
			s.Diff = []string{"(values already match; eksa-metrics records the digest of what it applies)"}
		default:
			s.Action = Update
			if len(s.Diff) == 0 {
				s.Diff = []string{"(values already match; eksa-metrics takes ownership of them)"}
			}
		}
	}
	switch u.GetKind() {
	case "KubeadmControlPlane":
		if s.Action != Unchanged {
			rolls, err := c.changesSpec(ctx, ri, obj, live)
			if err != nil {
				return nil, err
			}
			s.RollsControlPlane = rolls
		}
		if s.RollsControlPlane {
			s.Rollout = "Cluster API replaces every control-plane machine once"
		}
	case "DaemonSet":
		if s.Action != Unchanged {
			s.Rollout = "starts or restarts its pods"
		}
	}
	return s, nil
}

// isBare: obj names an object and sets nothing.
func isBare(obj map[string]any) bool {
	md, _ := obj["metadata"].(map[string]any)
	for k := range obj {
		if k != "apiVersion" && k != "kind" && k != "metadata" {
			return false
		}
	}
	for k := range md {
		if k != "name" && k != "namespace" {
			return false
		}
	}
	return true
}

// withAppliedDigest is a copy of obj with AppliedAnnotation set to the
// digest of obj, and the digest.
func withAppliedDigest(obj map[string]any) (map[string]any, string) {
	out, _ := normalize(obj).(map[string]any) // a deep copy, whatever Go types the render holds
	u := unstructured.Unstructured{Object: out}
	ann := u.GetAnnotations()
	delete(ann, templates.AppliedAnnotation)
	if len(ann) == 0 {
		unstructured.RemoveNestedField(out, "metadata", "annotations")
	} else {
		u.SetAnnotations(ann)
	}
	data, _ := json.Marshal(out)
	sum := sha256.Sum256(data)
	digest := hex.EncodeToString(sum[:8])
	if ann == nil {
		ann = map[string]string{}
	}
	ann[templates.AppliedAnnotation] = digest
	u.SetAnnotations(ann)
	return out, digest
}

// changesSpec asks the API server (a server dry run of the apply) whether
// applying obj changes the live object's spec: a KubeadmControlPlane whose
// spec changes replaces every control-plane machine, one whose metadata
// alone changes (the digest, the form of an unchanged item) replaces none.
func (c *Cluster) changesSpec(ctx context.Context, ri dynamic.ResourceInterface, obj map[string]any, live *unstructured.Unstructured) (bool, error) {
	if live == nil {
		return true, nil
	}
	data, err := json.Marshal(obj)
	if err != nil {
		return false, err
	}
	force := true // a conflict is reported by the apply itself; here only the outcome matters
	out, err := ri.Patch(ctx, live.GetName(), types.ApplyPatchType, data, metav1.PatchOptions{FieldManager: FieldManager, Force: &force, DryRun: []string{metav1.DryRunAll}})
	if err != nil {
		return false, fmt.Errorf("planning %s/%s (a server dry run of the apply, to know whether the control plane rolls): %w", live.GetNamespace(), live.GetName(), err)
	}
	return !reflect.DeepEqual(normalize(out.Object["spec"]), normalize(live.Object["spec"])), nil
}

// createdBy: eksa-metrics created the live object for that cluster (the
// cluster label of the rendered object; "" when it has none): its labels,
// and its field manager's server-side apply. Labels alone can be copied; a
// field manager alone is what a take-over would leave.
func createdBy(live metav1.Object, clusterName string) bool {
	l := live.GetLabels()
	return l[templates.ManagedByLabel] == templates.Prefix && l[templates.ClusterLabel] == clusterName && ownsByApply(live)
}

// ForeignObjectError: an object eksa-metrics renders exists, and
// eksa-metrics did not create it. It is never taken over (a forced apply
// would make it eksa-metrics', and a later prune would delete it), so the
// plan fails before anything is written.
type ForeignObjectError struct{ Object, Cluster, Owner string }

func (e *ForeignObjectError) Error() string {
	return fmt.Sprintf("%s exists in the %s and eksa-metrics did not create it (it lacks the labels %s=%s and %s=%s, or field manager %s never applied it): eksa-metrics never takes over an object it did not create, with or without --force-conflicts, and nothing was written. If it belongs to someone else, give eksa-metrics' object another name where the metrics section sets it (scrapeConfig.release names a Package); if it is a leftover of a manual setup that nothing uses any more, remove it yourself and apply again",
		e.Object, e.Cluster, templates.ManagedByLabel, templates.Prefix, templates.ClusterLabel, e.Owner, FieldManager)
}

// ownsByApply reports whether eksa-metrics holds an Apply entry in the
// object's managed fields.
func ownsByApply(live metav1.Object) bool {
	for _, mf := range live.GetManagedFields() {
		if mf.Manager == FieldManager && mf.Operation == metav1.ManagedFieldsOperationApply {
			return true
		}
	}
	return false
}

// normalize gives numbers and nested values one representation (JSON's).
func normalize(v any) any {
	b, err := json.Marshal(v)
	if err != nil {
		return v
	}
	var out any
	_ = json.Unmarshal(b, &out)
	return out
}

// diff lists where desired is not contained in live. Maps: every desired key
// must match. Lists of named maps (containers, ports, extraArgs, ...): every
// desired item must match the live item of the same name; other managers'
// items may exist too. Other lists must match item by item.
func diff(path string, live, desired any) []string {
	switch d := desired.(type) {
	case map[string]any:
		l, ok := live.(map[string]any)
		if !ok {
			return []string{change(path, live, desired)}
		}
		keys := make([]string, 0, len(d))
		for k := range d {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		var out []string
		for _, k := range keys {
			if path == "" && k == "status" {
				continue
			}
			out = append(out, diff(join(path, k), l[k], d[k])...)
		}
		return out
	case []any:
		l, ok := live.([]any)
		if !ok {
			return []string{change(path, live, desired)}
		}
		// A binding's subjects are an atomic list: an extra subject someone
		// added is a change that applying removes (a widened binding), not
		// another manager's item as in a container list.
		if atomicList[path] && len(l) != len(d) {
			return []string{change(path, live, desired)}
		}
		if named(d) {
			var out []string
			for _, item := range d {
				name := item.(map[string]any)["name"]
				var match any
				for _, li := range l {
					if lm, ok := li.(map[string]any); ok && reflect.DeepEqual(lm["name"], name) && len(diff("", lm, item)) == 0 {
						match = li
						break
					}
				}
				if match == nil {
					var sameName any
					for _, li := range l {
						if lm, ok := li.(map[string]any); ok && reflect.DeepEqual(lm["name"], name) {
							sameName = li
						}
					}
					out = append(out, diff(fmt.Sprintf("%s[name=%v]", path, name), sameName, item)...)
				}
			}
			return out
		}
		if len(l) != len(d) {
			return []string{change(path, live, desired)}
		}
		var out []string
		for i := range d {
			out = append(out, diff(fmt.Sprintf("%s[%d]", path, i), l[i], d[i])...)
		}
		return out
	default:
		if !reflect.DeepEqual(live, desired) {
			return []string{change(path, live, desired)}
		}
		return nil
	}
}

// atomicList are the paths of the named lists that server-side apply
// replaces whole (+listType=atomic in their API).
var atomicList = map[string]bool{"subjects": true}

func named(items []any) bool {
	if len(items) == 0 {
		return false
	}
	for _, it := range items {
		m, ok := it.(map[string]any)
		if !ok || m["name"] == nil {
			return false
		}
	}
	return true
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func change(path string, live, desired any) string {
	if live == nil {
		return fmt.Sprintf("%s: (none) -> %s", path, short(desired))
	}
	return fmt.Sprintf("%s: %s -> %s", path, short(live), short(desired))
}

// short is a value as printable JSON (safetext.JSON: the live value may
// hold anything), cut at 120 bytes and at a rune boundary.
func short(v any) string {
	b, _ := json.Marshal(v)
	s := safetext.JSON(b)
	if len(s) > 120 {
		cut := 117
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "..."
	}
	return strings.ReplaceAll(s, "\n", " ")
}
