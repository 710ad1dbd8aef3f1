package validate

import (
	"context"
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2"

	"github.com/eksa-metrics/eksa-metrics/pkg/spec"
	"github.com/eksa-metrics/eksa-metrics/pkg/templates"
)

// checkScheduling: every rendered DaemonSet can place a pod on every node
// group of the spec it serves (the control-plane proxies on the control
// plane, the node proxies on every group), by its node selector and
// tolerations against the labels and taints the spec gives those nodes.
func checkScheduling(_ context.Context, in *Input) Result {
	groups := in.File.Cluster.NodeGroups()
	var details []string
	n := 0
	for _, o := range in.Result.Objects {
		if o.Kind() != "DaemonSet" {
			continue
		}
		var ds appsv1.DaemonSet
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &ds); err != nil {
			return Result{Status: Fail, Message: "a rendered DaemonSet does not decode", Details: []string{o.String() + ": " + err.Error()}, Remediation: "report this with the spec"}
		}
		n++
		for _, g := range groups {
			if o.Name() == templates.ControlPlaneDS && !g.ControlPlane {
				continue
			}
			for _, why := range unschedulable(&ds.Spec.Template.Spec, g, in.File) {
				details = append(details, fmt.Sprintf("%s on the %s: %s", o, groupName(g), why))
			}
		}
	}
	if len(details) > 0 {
		return Result{Status: Fail, Message: "a DaemonSet cannot place its pods on nodes whose components it serves: their metrics would not be scraped", Details: details,
			Remediation: "report this with the spec: the proxies are meant to tolerate every taint"}
	}
	var taints []string
	for _, g := range groups {
		if len(g.Taints) > 0 {
			taints = append(taints, fmt.Sprintf("%s: %d", groupName(g), len(g.Taints)))
		}
	}
	msg := fmt.Sprintf("%d DaemonSets can place pods on every node group they serve (%d groups", n, len(groups))
	if len(taints) > 0 {
		msg += "; taints tolerated, " + strings.Join(taints, ", ")
	}
	return pass("%s)", msg)
}

func groupName(g spec.NodeGroup) string {
	if g.ControlPlane {
		return g.Name
	}
	return "worker node group " + g.Name
}

// unschedulable says why a pod spec cannot run on a group's nodes, each
// reason located in the spec file when it comes from a field there.
func unschedulable(pod *corev1.PodSpec, g spec.NodeGroup, f *spec.File) []string {
	var out []string
	if sel := labels.SelectorFromSet(pod.NodeSelector); !sel.Matches(labels.Set(g.Labels)) {
		out = append(out, fmt.Sprintf("its node selector %s matches none of the group's labels", sel))
	}
	for _, t := range g.Taints {
		if t.Effect == corev1.TaintEffectPreferNoSchedule || tolerated(pod.Tolerations, &t.Taint) {
			continue
		}
		detail := fmt.Sprintf("taint %s is not tolerated", t.ToString())
		if t.Field == "" {
			out = append(out, detail+" (the taint EKS-A sets by default)")
		} else {
			out = append(out, f.At(t.Field, detail).String())
		}
	}
	return out
}

func tolerated(ts []corev1.Toleration, t *corev1.Taint) bool {
	for _, tol := range ts {
		if tol.ToleratesTaint(klog.Background(), t, false) { // no Lt/Gt tolerations are rendered
			return true
		}
	}
	return false
}
