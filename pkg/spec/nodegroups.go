package spec

import (
	"fmt"
	"maps"

	corev1 "k8s.io/api/core/v1"
)

// ControlPlaneNodeLabel is the label kubeadm gives every control-plane node
// on init and on join, whatever the spec says (k8s.io/kubernetes
// cmd/kubeadm/app/phases/markcontrolplane/markcontrolplane.go,
// constants.LabelNodeRoleControlPlane).
const ControlPlaneNodeLabel = "node-role.kubernetes.io/control-plane"

// NodeGroup is one group of nodes a Cluster spec makes: its control plane or
// one worker node group, with the labels and taints its nodes get.
type NodeGroup struct {
	// Name is "control plane" or the worker node group's name.
	Name         string
	ControlPlane bool
	Labels       map[string]string
	Taints       []NodeTaint
}

// NodeTaint is a taint of a group's nodes and the spec field that sets it
// ("" for the taint EKS-A sets by default).
type NodeTaint struct {
	corev1.Taint
	Field string
}

// NodeGroups are the control plane and the worker node groups of the spec.
// The control plane has the taints of controlPlaneConfiguration.taints when
// the field is set (even empty); otherwise kubeadm's
// node-role.kubernetes.io/control-plane:NoSchedule, which EKS-A leaves out
// when the cluster has no worker node group (its control-plane template
// renders taints: [] then, so that workloads can run there).
func (c *Cluster) NodeGroups() []NodeGroup {
	cp := c.Spec.ControlPlaneConfiguration
	g := NodeGroup{Name: "control plane", ControlPlane: true, Labels: map[string]string{ControlPlaneNodeLabel: ""}}
	maps.Copy(g.Labels, cp.Labels)
	switch {
	case cp.Taints != nil:
		for i, t := range cp.Taints {
			g.Taints = append(g.Taints, NodeTaint{t, fmt.Sprintf("spec.controlPlaneConfiguration.taints[%d]", i)})
		}
	case len(c.Spec.WorkerNodeGroupConfigurations) > 0:
		g.Taints = []NodeTaint{{Taint: corev1.Taint{Key: ControlPlaneNodeLabel, Effect: corev1.TaintEffectNoSchedule}}}
	}
	out := []NodeGroup{g}
	for i, w := range c.Spec.WorkerNodeGroupConfigurations {
		g := NodeGroup{Name: w.Name, Labels: maps.Clone(w.Labels)}
		if g.Labels == nil {
			g.Labels = map[string]string{}
		}
		for j, t := range w.Taints {
			g.Taints = append(g.Taints, NodeTaint{t, fmt.Sprintf("spec.workerNodeGroupConfigurations[%d].taints[%d]", i, j)})
		}
		out = append(out, g)
	}
	return out
}
