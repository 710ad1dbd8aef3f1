package spec

import (
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Machine is what vouches for a node's names and addresses in its kubelet's
// serving certificate (tls.kubeletServingCertificates): a Cluster API
// Machine of the Cluster, whose status the infrastructure provider writes
// and no node can. Node is its status.nodeRef.name; Addresses its
// status.addresses (the same fields in Cluster API v1beta1 and v1beta2).
type Machine struct {
	Name      string           `json:"name"`
	Node      string           `json:"node,omitempty"`
	Created   string           `json:"created,omitempty"` // RFC 3339: the older of two Machines keeps an address both list
	Addresses []MachineAddress `json:"addresses,omitempty"`
}

// MachineAddress is one entry of a Machine's status.addresses.
type MachineAddress struct {
	Type    string `json:"type"`
	Address string `json:"address"`
}

// MachinesNamespace is where EKS Anywhere keeps the Cluster API objects of
// every Cluster, its Machines among them (the management cluster's own,
// after the move, in the management cluster itself).
const MachinesNamespace = "eksa-system"

// KubeconfigSecret is the Secret of MachinesNamespace in which Cluster API
// keeps a Cluster's admin kubeconfig, under the key "value"
// (sigs.k8s.io/cluster-api v1.13.2 util/secret: Name(cluster, Kubeconfig),
// KubeconfigDataName).
func KubeconfigSecret(cluster string) string { return cluster + "-kubeconfig" }

// MachineClusterLabel is the label Cluster API puts on each Machine: the
// name of its Cluster (sigs.k8s.io/cluster-api api/core ClusterNameLabel).
const MachineClusterLabel = "cluster.x-k8s.io/cluster-name"

// MachinesOf reads each Machine of a list the API server returns.
func MachinesOf(items []unstructured.Unstructured) []Machine {
	out := make([]Machine, len(items))
	for i := range items {
		out[i] = MachineOf(items[i].Object)
	}
	return out
}

// MachineOf reads a Machine from the object the API server returns (a
// Cluster API Machine of v1beta1 or v1beta2, as unstructured content).
func MachineOf(obj map[string]any) Machine {
	u := unstructured.Unstructured{Object: obj}
	m := Machine{Name: u.GetName()}
	if t := u.GetCreationTimestamp(); !t.IsZero() {
		m.Created = t.UTC().Format(time.RFC3339)
	}
	m.Node, _, _ = unstructured.NestedString(obj, "status", "nodeRef", "name")
	addrs, _, _ := unstructured.NestedSlice(obj, "status", "addresses")
	for _, a := range addrs {
		e, ok := a.(map[string]any)
		if !ok {
			continue
		}
		t, _ := e["type"].(string)
		v, _ := e["address"].(string)
		if t != "" && v != "" {
			m.Addresses = append(m.Addresses, MachineAddress{Type: t, Address: v})
		}
	}
	return m
}
