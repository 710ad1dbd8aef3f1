package controller

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	metricsv1alpha1 "github.com/eksa-metrics/eksa-metrics/pkg/apis/metrics/v1alpha1"
	"github.com/eksa-metrics/eksa-metrics/pkg/render"
	"github.com/eksa-metrics/eksa-metrics/pkg/safetext"
	"github.com/eksa-metrics/eksa-metrics/pkg/spec"
)

// The decide phase's inputs: what a Cluster renders to, who may have it,
// and what the checks after an apply say.

// admitted checks, before anything is read or written for a Cluster, that
// the policy lets the MetricsConfig have it done (admit) and that what
// eksa-system keeps under the Cluster's name is its own (owned). A refusal
// returns its condition reason with the error; a failed read returns no
// reason.
func (r *Reconciler) admitted(ctx context.Context, mc *metricsv1alpha1.MetricsConfig, obj *unstructured.Unstructured) (reason string, err error) {
	if err := r.Policy.admit(mc, obj); err != nil {
		return metricsv1alpha1.ReasonNotAllowed, err
	}
	var notOwned *NotOwnedError
	if err := r.owned(ctx, obj); errors.As(err, &notOwned) {
		return metricsv1alpha1.ReasonNotOwned, err
	} else if err != nil {
		return "", err
	}
	return "", nil
}

// render renders the MetricsConfig for one Cluster, with the controller's
// images (policy) and, where asked, the Cluster's EKS-A Bundles.
func (r *Reconciler) render(ctx context.Context, mc *metricsv1alpha1.MetricsConfig, obj *unstructured.Unstructured) (*render.Result, error) {
	in, err := r.input(ctx, mc, obj)
	if err != nil {
		return nil, err
	}
	r.Policy.images(in)
	var opts spec.Options
	if r.Policy.ImagesFromBundles {
		if opts.Bundles, err = r.bundles(ctx, obj); err != nil {
			return nil, err
		}
	}
	return render.Render(in, opts)
}

// input builds the engine's input from the live objects: the EKS-A Cluster,
// its control plane's machine config (for the OS family), and the
// MetricsConfig's spec.
func (r *Reconciler) input(ctx context.Context, mc *metricsv1alpha1.MetricsConfig, obj *unstructured.Unstructured) (*spec.Input, error) {
	var c spec.Cluster
	if err := convert(obj.Object, &c); err != nil {
		return nil, fmt.Errorf("reading Cluster %s: %w", obj.GetName(), err)
	}
	in := &spec.Input{Cluster: c, Metrics: *mc.Spec.DeepCopy(), MetricsName: mc.Name, Resource: true}
	var err error
	if ref := c.Spec.ControlPlaneConfiguration.MachineGroupRef; ref.Kind != "" && ref.Name != "" {
		mcObj := &unstructured.Unstructured{}
		mcObj.SetGroupVersionKind(ClusterGVK.GroupVersion().WithKind(ref.Kind))
		err = r.Client.Get(ctx, types.NamespacedName{Namespace: obj.GetNamespace(), Name: ref.Name}, mcObj)
		switch {
		case err == nil:
			var m spec.MachineConfig
			if err := convert(mcObj.Object, &m); err != nil {
				return nil, fmt.Errorf("reading %s %s: %w", ref.Kind, ref.Name, err)
			}
			in.MachineConfigs = append(in.MachineConfigs, m)
		case !apierrors.IsNotFound(err) && !meta.IsNoMatchError(err):
			return nil, fmt.Errorf("reading %s %s: %w", ref.Kind, ref.Name, err)
		}
	}
	if !c.SelfManaged() && ptr.Deref(mc.Spec.TLS.KubeletServingCertificates, false) {
		if in.Machines, err = r.machines(ctx, obj.GetName()); err != nil {
			return nil, err
		}
	}
	return in, nil
}

// machines are the Cluster API Machines of the Cluster called name, read
// from the API server (not a cache of every Machine of the fleet), which
// its kubelet approver approves names from.
func (r *Reconciler) machines(ctx context.Context, name string) ([]spec.Machine, error) {
	if r.machine.Empty() {
		return nil, fmt.Errorf("the management cluster serves no Cluster API Machine kind (cluster.x-k8s.io), which vouches for the nodes' names in tls.kubeletServingCertificates")
	}
	var list unstructured.UnstructuredList
	list.SetGroupVersionKind(r.machine.GroupVersion().WithKind(r.machine.Kind + "List"))
	if err := r.Client.List(ctx, &list, client.InNamespace(EKSASystemNamespace), client.MatchingLabels{spec.MachineClusterLabel: name}); err != nil {
		return nil, fmt.Errorf("listing the Machines of Cluster %s in %s: %w", name, EKSASystemNamespace, err)
	}
	return spec.MachinesOf(list.Items), nil
}

func convert(from map[string]any, to any) error {
	return runtime.DefaultUnstructuredConverter.FromUnstructured(from, to)
}

// maxMessage bounds a condition message or last error: the API server
// refuses a condition message over 32768 bytes, and with it the whole status
// of the MetricsConfig.
const maxMessage = 4096

// truncate is a status message: escaped (a workload API server's text
// may hold terminal escape sequences, and the status is read on terminals)
// and cut to maxMessage bytes.
func truncate(s string) string { return truncateTo(safetext.Escape(s), maxMessage) }

// withheld stands, in a status or an event, for the body of a reply that
// was not the Kubernetes API's.
const withheld = "(the reply's body, not shown)"

// errText is an error's text for a status or an event, without the body
// of a reply that was not a Kubernetes API Status (client-go quotes up to
// 2 KiB of it): a workload kubeconfig's server may be any service the
// controller can reach, and its replies are not for a MetricsConfig's
// readers.
func errText(err error) string {
	s := err.Error()
	for e := err; e != nil; {
		if st, ok := e.(apierrors.APIStatus); ok {
			if d := st.Status().Details; d != nil {
				for _, c := range d.Causes {
					if c.Type == metav1.CauseTypeUnexpectedServerResponse && c.Message != "" {
						s = strings.ReplaceAll(s, strconv.Quote(c.Message), withheld)
						s = strings.ReplaceAll(s, c.Message, withheld)
					}
				}
			}
		}
		switch x := e.(type) {
		case interface{ Unwrap() error }:
			e = x.Unwrap()
		case interface{ Unwrap() []error }:
			for _, inner := range x.Unwrap() {
				s = strings.ReplaceAll(s, inner.Error(), errText(inner))
			}
			e = nil
		default:
			e = nil
		}
	}
	return s
}

// truncateTo cuts s to at most limit bytes, at a character boundary.
func truncateTo(s string, limit int) string {
	if len(s) <= limit {
		return s
	}
	cut := limit - len(" … (truncated)")
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + " … (truncated)"
}

// upgrading says why EKS Anywhere is busy with a Cluster (an upgrade or
// another change it has not finished: its Ready condition is False, or it
// has not reconciled the Cluster's latest generation), "" when it is not or
// the Cluster has no status yet. The controller waits: its status changes
// are watched.
func upgrading(obj *unstructured.Unstructured) string {
	conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == "Ready" && m["status"] == "False" {
			return fmt.Sprintf("EKS Anywhere reports the Cluster not Ready (%v: %v): waiting until its upgrade or reconcile finishes", m["reason"], m["message"])
		}
	}
	if rg, ok, _ := unstructured.NestedInt64(obj.Object, "status", "reconciledGeneration"); ok && rg < obj.GetGeneration() {
		return fmt.Sprintf("EKS Anywhere has reconciled generation %d of the Cluster, not yet %d: waiting until it has", rg, obj.GetGeneration())
	}
	return ""
}

// runs are the notes of the events that say what an apply runs and grants:
// every image (with its object and container) and every subject granted a
// role, escaped, in as many notes as it takes (events.k8s.io refuses a
// note over 1024 bytes, and the event with it).
func runs(res *render.Result) []string {
	var images, grants []string
	for _, u := range res.Images() {
		images = append(images, fmt.Sprintf("%s (%s, container %s)", safetext.Escape(u.Image), safetext.Escape(u.Object), safetext.Escape(u.Container)))
	}
	for _, g := range res.Grants() {
		who := make([]string, len(g.Subjects))
		for i, s := range g.Subjects {
			who[i] = safetext.Escape(s)
		}
		grants = append(grants, fmt.Sprintf("%s to %s", safetext.Escape(g.Role), strings.Join(who, ", ")))
	}
	name := safetext.Escape(res.Config.ClusterName)
	return slices.Concat(notes(fmt.Sprintf("Cluster %s runs", name), images), notes(fmt.Sprintf("Cluster %s grants", name), grants))
}

// maxNote is the most an event's note may hold (events.k8s.io/v1: the API
// server refuses the event otherwise).
const maxNote = 1024

// notes lists items after a head in notes of at most maxNote bytes: one
// "head: a; b" when they fit, else "head (1 of 2): a", "head (2 of 2): b".
// An item too long for a note alone is cut at a character boundary.
func notes(head string, items []string) []string {
	if len(items) == 0 {
		return []string{head + " nothing"}
	}
	if one := head + ": " + strings.Join(items, "; "); len(one) <= maxNote {
		return []string{one}
	}
	room := maxNote - len(head) - len(" (999 of 999): ")
	var parts [][]string
	size := 0
	for _, it := range items {
		it = truncateTo(it, room)
		if len(parts) == 0 || size+len("; ")+len(it) > room {
			parts = append(parts, nil)
			size = -len("; ")
		}
		parts[len(parts)-1] = append(parts[len(parts)-1], it)
		size += len("; ") + len(it)
	}
	out := make([]string, len(parts))
	for i, p := range parts {
		out[i] = fmt.Sprintf("%s (%d of %d): %s", head, i+1, len(parts), strings.Join(p, "; "))
	}
	return out
}
