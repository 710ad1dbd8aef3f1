package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// BindingKind is the kind of the per-Cluster state the controller keeps.
const BindingKind = "MetricsConfigBinding"

// Labels on a MetricsConfigBinding, for `kubectl get -l`: the Cluster and the
// MetricsConfig it binds.
const (
	BindingClusterLabel       = Group + "/cluster"
	BindingMetricsConfigLabel = Group + "/metricsconfig"
)

// MetricsConfigBinding is what the controller knows of one Cluster that a
// MetricsConfig selects: one object per (MetricsConfig, Cluster), in their
// namespace, named <cluster>.<metricsconfig>, owned by the MetricsConfig
// (garbage-collected with it). As Cluster API's ClusterResourceSetBinding
// records what a ClusterResourceSet applied to a Cluster, it records what
// was rendered, applied and verified there, what was written where, and
// when; the controller writes it when that changes, never at rest, and
// reads it back after a restart. The controller is its only writer.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:shortName=mcb,categories=eksa-metrics
// +kubebuilder:printcolumn:name="Cluster",type=string,JSONPath=`.spec.clusterName`
// +kubebuilder:printcolumn:name="Config",type=string,JSONPath=`.spec.metricsConfigName`
// +kubebuilder:printcolumn:name="Applied",type=string,JSONPath=`.status.conditions[?(@.type=="Applied")].status`
// +kubebuilder:printcolumn:name="Verified",type=string,JSONPath=`.status.conditions[?(@.type=="Verified")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.reason`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type MetricsConfigBinding struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   MetricsConfigBindingSpec   `json:"spec,omitempty"`
	Status MetricsConfigBindingStatus `json:"status,omitempty"`
}

// MetricsConfigBindingList is a list of MetricsConfigBindings.
//
// +kubebuilder:object:root=true
type MetricsConfigBindingList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []MetricsConfigBinding `json:"items"`
}

// MetricsConfigBindingSpec names what is bound.
type MetricsConfigBindingSpec struct {
	// ClusterName is the EKS Anywhere Cluster (in this namespace).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	ClusterName string `json:"clusterName"`
	// MetricsConfigName is the MetricsConfig that selects it (in this
	// namespace; the owner).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	MetricsConfigName string `json:"metricsConfigName"`
}

// MetricsConfigBindingStatus is the Cluster's state.
type MetricsConfigBindingStatus struct {
	// ObservedGeneration is the MetricsConfig's generation this state is for.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Reason is the reason of the first condition that is not True
	// (Rendered, Applied, Verified, in that order), or Verified.
	// +optional
	Reason string `json:"reason,omitempty"`
	// Conditions: Rendered, Applied, Verified.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// ContentHash is the SHA-256 of what the last successful apply applied
	// (the rendered objects and edits, in their order).
	// +optional
	ContentHash string `json:"contentHash,omitempty"`
	// Inventory lists what eksa-metrics keeps for this Cluster, one
	// "<cluster> <Kind> <namespace>/<name>" per object, cluster being
	// workload or management.
	// +optional
	// +listType=atomic
	Inventory []string `json:"inventory,omitempty"`
	// LastAppliedTime is when an apply last wrote to the Cluster (an apply
	// that found everything as it should be writes nothing, and leaves it).
	// +optional
	LastAppliedTime *metav1.Time `json:"lastAppliedTime,omitempty"`
	// NextRenewalTime is when the earliest of the Cluster's serving
	// certificates is due for renewal.
	// +optional
	NextRenewalTime *metav1.Time `json:"nextRenewalTime,omitempty"`
	// DriftRepairs counts the re-plans because another writer changed or
	// deleted what eksa-metrics applied to the Cluster.
	// +optional
	DriftRepairs int64 `json:"driftRepairs,omitempty"`
	// RolledOut lists what the last apply that wrote anything wrote.
	// +optional
	// +listType=atomic
	RolledOut []string `json:"rolledOut,omitempty"`
	// LastError is the last error, empty after a success.
	// +optional
	LastError string `json:"lastError,omitempty"`
}
