package render

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	"github.com/eksa-metrics/eksa-metrics/pkg/kubeadm"
	"github.com/eksa-metrics/eksa-metrics/pkg/kubeproxy"
	"github.com/eksa-metrics/eksa-metrics/pkg/templates"
)

// ChangeAction is what apply does to one object going from one spec to
// another.
type ChangeAction string

const (
	// ActionCreate: eksa-metrics creates the object.
	ActionCreate ChangeAction = "create"
	// ActionUpdate: eksa-metrics applies the object again, changed.
	ActionUpdate ChangeAction = "update"
	// ActionDelete: eksa-metrics created it and the new spec no longer
	// renders it, so apply prunes it.
	ActionDelete ChangeAction = "delete"
	// ActionEdit: an object eksa-metrics does not own is edited (or an
	// earlier edit of it given back).
	ActionEdit ChangeAction = "edit"
)

// Change is one entry of a transition: what apply will do to one object
// when the clusters are as a fresh apply of the old spec left them.
type Change struct {
	Destination Destination  `json:"cluster"`
	Kind        string       `json:"kind"`
	Namespace   string       `json:"namespace,omitempty"`
	Name        string       `json:"name"`
	Action      ChangeAction `json:"action"`
	Reason      string       `json:"reason"`
	// Owned: eksa-metrics owns the object whole (else it changes a part
	// of another's object).
	Owned bool `json:"owned"`
	// RollsControlPlane: Cluster API replaces every control-plane machine.
	RollsControlPlane bool `json:"rollsControlPlane,omitempty"`
	// Restarts names what restarts (pods of the object, kube-proxy).
	Restarts string `json:"restarts,omitempty"`
	// IfInstalled: a management Deployment, edited only where installed.
	IfInstalled bool `json:"ifInstalled,omitempty"`
	// By names who makes a change that apply does not make (the Cluster's
	// kubeletConfiguration in cluster.yaml, which EKS Anywhere rolls out).
	By string `json:"by,omitempty"`
	// ReplacesMachines: the change (ours, or EKS Anywhere's because of our
	// cluster.yaml edit) replaces every machine of the cluster.
	ReplacesMachines bool `json:"replacesMachines,omitempty"`
}

// String is the change for a person: "update KubeadmControlPlane
// eksa-system/prod (management cluster): ...".
func (c Change) String() string {
	s := fmt.Sprintf("%s %s (%s): %s", c.Action, templates.ObjectName(c.Kind, c.Namespace, c.Name), destinationNote(c.Destination), c.Reason)
	if c.By != "" {
		s = fmt.Sprintf("%s %s (%s, by %s, not apply): %s", c.Action, templates.ObjectName(c.Kind, c.Namespace, c.Name), destinationNote(c.Destination), c.By, c.Reason)
	}
	if c.RollsControlPlane {
		s += "; every control-plane machine is replaced"
	}
	if c.Restarts != "" {
		s += "; " + c.Restarts
	}
	return s
}

// Nothing is the render of a cluster that has no metrics section: nothing
// of eksa-metrics' (a spec before eksa-metrics is adopted).
func Nothing(r *Result) *Result {
	return &Result{Config: r.Config, Change: kubeadm.Change{ClusterName: r.Config.ClusterName, APIVersion: r.Change.APIVersion}}
}

// Transition is what apply does going from the render old to cur, in the
// order apply does it: the objects (created, changed, then pruned), then
// the edits of objects eksa-metrics does not own. The live clusters are
// taken to be as a fresh apply of old left them; apply starts from the
// live state, so what it does matches only where no one changed them
// since (validate --kubeconfig's drift check says where they differ).
func Transition(old, cur *Result) []Change {
	var out []Change
	oldObjs, curObjs := objectIndex(old), objectIndex(cur)
	for _, o := range cur.Objects { // in the order apply writes them
		if o.Kind() == "KubeadmControlPlane" {
			continue
		}
		prev, had := oldObjs[indexKey(o)]
		ch := Change{Destination: o.Destination, Kind: o.Kind(), Namespace: o.Namespace(), Name: o.Name(), Owned: true}
		switch {
		case !had:
			ch.Action, ch.Reason = ActionCreate, "the new spec renders it"
			if restarts(o) {
				ch.Restarts = "its pods start"
			}
		case !reflect.DeepEqual(prev.Object, o.Object):
			ch.Action, ch.Reason = ActionUpdate, "rendered differently: "+strings.Join(changedFields(prev.Object, o.Object), ", ")
			if restarts(o) && !reflect.DeepEqual(podTemplate(prev), podTemplate(o)) {
				ch.Restarts = "its pods restart"
			}
		default:
			continue
		}
		out = append(out, ch)
	}
	if ch, ok := kcpChange(old, cur); ok {
		out = append(out, ch)
	}
	for _, o := range old.Objects {
		if _, ok := curObjs[indexKey(o)]; ok || !o.Owned() {
			continue
		}
		out = append(out, Change{Destination: o.Destination, Kind: o.Kind(), Namespace: o.Namespace(), Name: o.Name(), Owned: true,
			Action: ActionDelete, Reason: "eksa-metrics created it and the new spec no longer renders it"})
	}
	out = append(out, certificateChanges(old, cur)...)
	out = append(out, deploymentChanges(old, cur)...)
	if ch, ok := kubeProxyChange(old, cur); ok {
		out = append(out, ch)
	}
	if ch, ok := kubeletChange(old, cur); ok {
		out = append(out, ch)
	}
	return out
}

// kubeletChange: tls.kubeletServingCertificates turned on or off changes
// the Cluster's kubeletConfiguration in cluster.yaml, which EKS Anywhere
// (not apply) rolls out by replacing every machine.
func kubeletChange(old, cur *Result) (Change, bool) {
	b, a := old.Config.KubeletServingCertificates, cur.Config.KubeletServingCertificates
	ch := Change{Destination: Management, Kind: "Cluster", Name: cur.Config.ClusterName, Action: ActionEdit,
		By: "eksctl anywhere upgrade cluster -f cluster.yaml", Restarts: "EKS Anywhere replaces every machine", ReplacesMachines: true}
	switch {
	case a == b:
		return ch, false
	case a:
		ch.Reason = "cluster.yaml: serverTLSBootstrap: true in every node group's kubeletConfiguration; apply first, so that the approver " + templates.KubeletApprover + " runs before the new kubelets ask for their certificates"
	default:
		ch.Reason = "cluster.yaml: serverTLSBootstrap no longer added to the kubeletConfiguration; upgrade the cluster with it before this apply removes the approver " + templates.KubeletApprover + ", which the kubelets that still have the setting need for their certificates"
	}
	return ch, true
}

func objectIndex(r *Result) map[string]Object {
	m := map[string]Object{}
	for _, o := range r.Objects {
		m[indexKey(o)] = o
	}
	return m
}

func indexKey(o Object) string { return string(o.Destination) + " " + o.String() }

func restarts(o Object) bool { return o.Kind() == "DaemonSet" || o.Kind() == "Deployment" }

func podTemplate(o Object) any {
	spec, _ := o.Object["spec"].(map[string]any)
	return spec["template"]
}

// changedFields names the top-level fields (and spec's) that differ.
func changedFields(a, b map[string]any) []string {
	var out []string
	for _, k := range keysOf(a, b) {
		if reflect.DeepEqual(a[k], b[k]) {
			continue
		}
		as, aok := a[k].(map[string]any)
		bs, bok := b[k].(map[string]any)
		if aok && bok && (k == "spec" || k == "metadata") {
			for _, f := range changedFields(as, bs) {
				out = append(out, k+"."+f)
			}
			continue
		}
		out = append(out, k)
	}
	return out
}

// keysOf are the keys of the maps, sorted, each once.
func keysOf[V any](ms ...map[string]V) []string {
	var out []string
	for _, m := range ms {
		out = append(out, slices.Collect(maps.Keys(m))...)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// kcpItems are the extraArgs items eksa-metrics applies, as
// "component --name=value", whatever the contract's form.
func kcpItems(r *Result) []string {
	var out []string
	for _, it := range r.Change.Items {
		if !it.Merged {
			out = append(out, fmt.Sprintf("%s --%s=%s", it.Component, it.Name, it.Value))
		}
	}
	slices.Sort(out)
	return out
}

// kcpChange: the KubeadmControlPlane is EKS Anywhere's object, rendered
// on every cluster as a partial one: never created or deleted, only its
// items set or given back. The control plane rolls only when the items
// eksa-metrics applies change; their form (a v1beta1 map or a v1beta2
// list) and the object's marks are applied without a rollout.
func kcpChange(old, cur *Result) (Change, bool) {
	find := func(r *Result) map[string]any {
		for _, o := range r.Objects {
			if o.Kind() == "KubeadmControlPlane" {
				return o.Object
			}
		}
		return nil
	}
	oldObj, curObj := find(old), find(cur)
	if reflect.DeepEqual(oldObj, curObj) {
		return Change{}, false
	}
	ch := Change{Destination: Management, Kind: "KubeadmControlPlane", Namespace: kubeadm.Namespace, Name: cur.Config.ClusterName, Action: ActionEdit}
	before, after := kcpItems(old), kcpItems(cur)
	var parts []string
	for _, it := range after {
		if !slices.Contains(before, it) {
			parts = append(parts, "sets "+it)
		}
	}
	for _, it := range before {
		if !slices.Contains(after, it) {
			parts = append(parts, "gives back "+it)
		}
	}
	switch {
	case len(parts) > 0:
		ch.Reason = "eksa-metrics' extraArgs items change (EKS Anywhere owns the object and its other items): " + strings.Join(parts, ", ")
		ch.RollsControlPlane = true
	case oldObj == nil:
		ch.Reason = "eksa-metrics marks it for GitOps tools (not to be pruned or deleted) and records what it applied; no extraArgs item changes, so no machine is replaced"
	default:
		ch.Reason = fmt.Sprintf("the same extraArgs items, applied in the %s form (%s before): no machine is replaced", cur.Change.APIVersion, old.Change.APIVersion)
	}
	return ch, true
}

// deploymentChanges: the management Deployments whose edit changes. Each
// apply gives back the recorded edit and makes the new one, so the
// Deployment changes exactly when the two edits differ.
func deploymentChanges(old, cur *Result) []Change {
	edits := func(r *Result) map[string]*templates.DeploymentEdit {
		m := map[string]*templates.DeploymentEdit{}
		for i, e := range r.DeploymentEdits {
			if e.ChangesShipped() {
				m[e.Component.ID()] = &r.DeploymentEdits[i]
			}
		}
		return m
	}
	before, after := edits(old), edits(cur)
	var out []Change
	for _, id := range keysOf(before, after) {
		b, a := before[id], after[id]
		var reason string
		switch {
		case b == nil:
			reason = "eksa-metrics edits it: " + editSummary(a)
		case a == nil:
			reason = "eksa-metrics gives back its edit (" + editSummary(b) + "): the new spec no longer edits it"
		case reflect.DeepEqual(b.SetArgs, a.SetArgs) && reflect.DeepEqual(b.Sidecar, a.Sidecar) && reflect.DeepEqual(b.Mounts, a.Mounts) && reflect.DeepEqual(b.Volumes, a.Volumes) && b.Container == a.Container:
			continue
		default:
			reason = "eksa-metrics' edit changes: " + editSummary(a)
		}
		ns, name, _ := strings.Cut(id, "/")
		out = append(out, Change{Destination: Management, Kind: "Deployment", Namespace: ns, Name: name, Action: ActionEdit,
			Reason: reason, Restarts: "its pods restart", IfInstalled: true})
	}
	return out
}

func editSummary(e *templates.DeploymentEdit) string {
	var parts []string
	if len(e.SetArgs) > 0 {
		parts = append(parts, "container "+e.Container+" args "+strings.Join(e.SetArgs, " "))
	}
	if e.Sidecar != nil {
		parts = append(parts, "sidecar "+e.Sidecar.Name)
	}
	for _, m := range e.Mounts {
		parts = append(parts, "its serving certificate mounted at "+m.MountPath+" in container "+e.Container)
	}
	return strings.Join(parts, ", ")
}

// kubeProxyChange: kube-proxy's metricsBindAddress, set in bindAddress
// mode with allowInsecure, and given back otherwise.
func kubeProxyChange(old, cur *Result) (Change, bool) {
	b, a := old.KubeProxyEdit, cur.KubeProxyEdit
	ch := Change{Destination: Workload, Kind: "ConfigMap", Namespace: kubeproxy.Namespace, Name: kubeproxy.Name, Action: ActionEdit,
		Restarts: "DaemonSet " + kubeproxy.Namespace + "/" + kubeproxy.Name + " restarts"}
	switch {
	case b == nil && a == nil, b != nil && a != nil && *a == *b:
		return ch, false
	case a == nil:
		ch.Reason = fmt.Sprintf("eksa-metrics gives back the metricsBindAddress it replaced with %s in config.conf, so kube-proxy's plain-HTTP metrics go back to loopback", b.MetricsBindAddress)
	default:
		ch.Reason = fmt.Sprintf("config.conf metricsBindAddress: %s (plain HTTP on every node address; allowInsecure)", a.MetricsBindAddress)
	}
	return ch, true
}

// certificateChanges: the Secrets and ConfigMaps apply writes for the
// serving certificates (never rendered), created where the new spec needs
// one the old did not, and deleted where it no longer needs one.
func certificateChanges(old, cur *Result) []Change {
	// written: what apply writes; issued: the Secrets cert-manager issues
	// from eksa-metrics' Certificates (apply replaces or deletes those
	// when tls.certificates leaves cert-manager).
	type objects struct {
		written, issued map[string]bool
		haproxy         bool
	}
	objs := func(r *Result) objects {
		o := objects{written: map[string]bool{}, issued: map[string]bool{}}
		if r.Config == nil || len(r.Objects) == 0 {
			return o
		}
		served := templates.ServingSecrets(r.Config)
		o.haproxy = slices.ContainsFunc(served, func(sv templates.ServedSecret) bool { return sv.HAProxy })
		for k := range templates.CertificateObjects(r.Config, served) {
			if r.Config.CertManager && strings.HasPrefix(k, "Secret ") {
				o.issued[k] = true
			} else {
				o.written[k] = true
			}
		}
		return o
	}
	before, after := objs(old), objs(cur)
	switched := len(old.Objects) > 0 && len(cur.Objects) > 0 && old.Config.CertManager != cur.Config.CertManager
	kubelet := len(old.Objects) > 0 && len(cur.Objects) > 0 && old.Config.KubeletServingCertificates != cur.Config.KubeletServingCertificates
	var out []Change
	add := func(name string, action ChangeAction, reason string) {
		kind, rest, _ := strings.Cut(name, " ")
		ns, n, _ := strings.Cut(rest, "/")
		out = append(out, Change{Destination: Workload, Kind: kind, Namespace: ns, Name: n, Owned: true, Action: action, Reason: reason})
	}
	for _, k := range slices.Sorted(maps.Keys(after.written)) {
		switch {
		case before.issued[k]:
			add(k, ActionUpdate, "apply replaces the certificate cert-manager issued with one from its own CA, after the objects (which prune the Certificate)")
		case !before.written[k]:
			add(k, ActionCreate, "apply writes it for the serving certificates (tls.certificates: "+certificatesMode(cur)+")")
		case switched && strings.HasPrefix(k, "ConfigMap "):
			add(k, ActionUpdate, "the CA bundle changes to the CA of tls.certificates: "+certificatesMode(cur))
		case kubelet && strings.HasPrefix(k, "ConfigMap "):
			add(k, ActionUpdate, "the CA bundle gains or loses the kubelet-serving CA ("+templates.KubeletCAKey+"; tls.kubeletServingCertificates)")
		}
	}
	for _, k := range slices.Sorted(maps.Keys(before.written)) {
		switch {
		case after.issued[k]:
			add(k, ActionDelete, "apply deletes the certificate it issued before it writes the Certificate, so that cert-manager issues its own there (it would adopt a valid one it finds)")
		case !after.written[k]:
			add(k, ActionDelete, "apply wrote it for the serving certificates, and the new spec no longer needs it")
		}
	}
	for _, k := range slices.Sorted(maps.Keys(before.issued)) {
		if !after.written[k] && !after.issued[k] {
			add(k, ActionDelete, "cert-manager issued it from eksa-metrics' Certificate, which this apply prunes, and the new spec no longer needs it")
		}
	}
	if switched && before.haproxy && after.haproxy {
		out = append(out, Change{Destination: Workload, Kind: "DaemonSet", Namespace: templates.SystemNS, Name: templates.ControlPlaneDS, Owned: true,
			Action: ActionUpdate, Reason: "its serving certificates come from another issuer", Restarts: "HAProxy reads its certificates at start, so its pods restart"})
	}
	return out
}

func certificatesMode(r *Result) string {
	if r.Config.CertManager {
		return "cert-manager"
	}
	return "eksa-metrics"
}
