package controller

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// The labels EKS Anywhere sets on the Cluster API Cluster it renders for an
// EKS-A Cluster, naming that Cluster (aws/eks-anywhere
// pkg/clusterapi/apibuilder.go, eksaClusterLabels; its controller maps Cluster
// API objects back to their EKS-A Cluster by them).
const (
	EKSAClusterNameLabel      = "cluster.anywhere.eks.amazonaws.com/cluster-name"
	EKSAClusterNamespaceLabel = "cluster.anywhere.eks.amazonaws.com/cluster-namespace"
	// EKSASystemNamespace holds every Cluster API object of every EKS-A
	// Cluster, whatever the Cluster's own namespace: the KubeadmControlPlane
	// <name>, the Cluster API Cluster <name>, the kubeconfig Secret
	// <name>-kubeconfig.
	EKSASystemNamespace = "eksa-system"
)

var (
	capiClusterGK = schema.GroupKind{Group: "cluster.x-k8s.io", Kind: "Cluster"}
	machineGK     = schema.GroupKind{Group: "cluster.x-k8s.io", Kind: "Machine"}
)

// NotOwnedError says that the objects eksa-system keeps under a Cluster's
// name belong to another EKS-A Cluster (or to none).
type NotOwnedError struct{ Cluster, Reason string }

func (e *NotOwnedError) Error() string {
	return fmt.Sprintf("Cluster %s: %s; eksa-metrics writes to a workload cluster, its KubeadmControlPlane and its kubeconfig only for the EKS Anywhere Cluster they belong to", e.Cluster, e.Reason)
}

// owned checks that what eksa-system keeps under the Cluster's name (the
// KubeadmControlPlane, the kubeconfig Secret, the workload cluster behind
// it) is this Cluster's: those objects are keyed by name alone, so a Cluster
// team-a/prod must not drive the real default/prod. The Cluster API Cluster
// eksa-system/<name> carries EKS-A's labels naming the EKS-A Cluster's
// namespace and name.
func (r *Reconciler) owned(ctx context.Context, obj *unstructured.Unstructured) error {
	key := obj.GetNamespace() + "/" + obj.GetName()
	if r.capiCluster.Empty() {
		return &NotOwnedError{Cluster: key, Reason: "the management cluster serves no Cluster API Cluster kind (cluster.x-k8s.io), so whose eksa-system objects these are cannot be told"}
	}
	capi := &metav1.PartialObjectMetadata{}
	capi.SetGroupVersionKind(r.capiCluster)
	err := r.Client.Get(ctx, types.NamespacedName{Namespace: EKSASystemNamespace, Name: obj.GetName()}, capi)
	switch {
	case apierrors.IsNotFound(err) || meta.IsNoMatchError(err):
		return &NotOwnedError{Cluster: key, Reason: fmt.Sprintf("there is no Cluster API Cluster %s/%s (EKS Anywhere has not created it yet, or this Cluster is not EKS Anywhere's)", EKSASystemNamespace, obj.GetName())}
	case err != nil:
		return fmt.Errorf("reading the Cluster API Cluster %s/%s: %w", EKSASystemNamespace, obj.GetName(), err)
	}
	l := capi.GetLabels()
	if l[EKSAClusterNameLabel] != obj.GetName() || l[EKSAClusterNamespaceLabel] != obj.GetNamespace() {
		return &NotOwnedError{Cluster: key, Reason: fmt.Sprintf("the Cluster API Cluster %s/%s belongs to the EKS Anywhere Cluster %s/%s (its labels %s and %s)",
			EKSASystemNamespace, obj.GetName(), orNone(l[EKSAClusterNamespaceLabel]), orNone(l[EKSAClusterNameLabel]), EKSAClusterNamespaceLabel, EKSAClusterNameLabel)}
	}
	return nil
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}
