// Package v1alpha1 is the metrics section of an EKS Anywhere cluster spec as
// an API type: the MetricsConfig document of a cluster file and the
// MetricsConfig custom resource of the controller are the same schema.
//
// +kubebuilder:object:generate=true
// +groupName=metrics.anywhere.eks.amazonaws.com
package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Group, version and kind of the metrics section.
const (
	Group      = "metrics.anywhere.eks.amazonaws.com"
	Version    = "v1alpha1"
	APIVersion = Group + "/" + Version
	Kind       = "MetricsConfig"
)

// MetricsConfig is the metrics section of one or more EKS Anywhere clusters.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:shortName=mc,categories=eksa-metrics
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Exposure",type=string,JSONPath=`.spec.exposure`
// +kubebuilder:printcolumn:name="Stack",type=string,JSONPath=`.spec.scrapeConfig.stack`
// +kubebuilder:printcolumn:name="Clusters",type=integer,JSONPath=`.status.selectedClusters`
// +kubebuilder:printcolumn:name="Ready",type=integer,JSONPath=`.status.readyClusters`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type MetricsConfig struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   MetricsConfigSpec   `json:"spec,omitempty"`
	Status MetricsConfigStatus `json:"status,omitempty"`
}

// MetricsConfigList is a list of MetricsConfigs.
//
// +kubebuilder:object:root=true
type MetricsConfigList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []MetricsConfig `json:"items"`
}

// MetricsConfigSpec is the metrics section; inline in a Cluster
// (Cluster.spec.metrics) it has the same fields but clusterRef.
//
// +kubebuilder:validation:XValidation:rule="!(has(self.clusterRef) && has(self.clusterSelector))",message="clusterRef and clusterSelector exclude each other"
type MetricsConfigSpec struct {
	// ClusterRef names the Cluster these metrics are for; optional in a file
	// with one Cluster.
	// +optional
	ClusterRef *ClusterRef `json:"clusterRef,omitempty"`
	// ClusterSelector selects EKS Anywhere Clusters by label (the custom
	// resource only), so that one MetricsConfig covers a fleet.
	// +optional
	ClusterSelector *metav1.LabelSelector `json:"clusterSelector,omitempty"`
	// Scrapers are the identities that may read metrics; required unless
	// scrapeConfig.stack names a stack whose Prometheus identity is known.
	// +optional
	// +kubebuilder:validation:MaxItems=32
	// +listType=atomic
	Scrapers []Scraper `json:"scrapers,omitempty"`
	// Exposure is how the loopback-only components are reached.
	// +optional
	Exposure Exposure `json:"exposure,omitempty"`
	// +optional
	Components Components `json:"components,omitempty"`
	// +optional
	ManagementComponents ManagementComponents `json:"managementComponents,omitempty"`
	// +optional
	ZPages ZPages `json:"zPages,omitempty"`
	// +optional
	TLS TLS `json:"tls,omitempty"`
	// +optional
	ScrapeConfig ScrapeConfig `json:"scrapeConfig,omitempty"`
	// +optional
	Images Images `json:"images,omitempty"`
	// AllowInsecure must be true before a plain-HTTP endpoint (etcd 2381,
	// kube-proxy 10249) leaves loopback in bindAddress mode.
	// +optional
	AllowInsecure bool `json:"allowInsecure,omitempty"`
	// AllowControlPlaneRollout lets the controller change the
	// KubeadmControlPlane, which replaces every control-plane machine (the
	// custom resource only; the CLI asks with --allow-control-plane-rollout).
	// +optional
	AllowControlPlaneRollout bool `json:"allowControlPlaneRollout,omitempty"`
}

// ClusterRef names the Cluster a MetricsConfig belongs to.
type ClusterRef struct {
	// +kubebuilder:validation:Enum=Cluster
	Kind string `json:"kind"`
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Name string `json:"name"`
}

// Exposure is how loopback-only components are made reachable.
// +kubebuilder:validation:Enum=proxy;bindAddress
type Exposure string

// The exposure modes.
const (
	ExposureProxy       Exposure = "proxy"
	ExposureBindAddress Exposure = "bindAddress"
)

// ScraperKind is the RBAC subject kind of a scraper identity.
// +kubebuilder:validation:Enum=ServiceAccount;User;Group
type ScraperKind string

// The scraper kinds.
const (
	ScraperServiceAccount ScraperKind = "ServiceAccount"
	ScraperUser           ScraperKind = "User"
	ScraperGroup          ScraperKind = "Group"
)

// Scraper is an identity that is allowed to read metrics.
//
// +kubebuilder:validation:XValidation:rule="self.kind == 'ServiceAccount' ? has(self.namespace) && size(self.namespace) > 0 : !has(self.namespace) || size(self.namespace) == 0",message="namespace is required for a ServiceAccount and forbidden otherwise"
// +kubebuilder:validation:XValidation:rule="!(self.name in ['system:anonymous', 'system:unauthenticated', 'system:authenticated', 'system:serviceaccounts']) && !self.name.startsWith('system:serviceaccounts:')",message="this name stands for everybody: binding it would serve metrics to all"
type Scraper struct {
	Kind ScraperKind `json:"kind"`
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
	// +optional
	// +kubebuilder:validation:MaxLength=63
	Namespace string `json:"namespace,omitempty"`
}

// Toggle switches one component on or off; nil means the default (on).
type Toggle struct {
	// +optional
	Enabled *bool `json:"enabled,omitempty"`
}

// On reports whether the component is enabled (default true).
func (t Toggle) On() bool { return t.Enabled == nil || *t.Enabled }

// EtcdMetricsLevel is etcd's --metrics value.
// +kubebuilder:validation:Enum=basic;extensive
type EtcdMetricsLevel string

// The etcd metrics levels.
const (
	EtcdMetricsBasic     EtcdMetricsLevel = "basic"
	EtcdMetricsExtensive EtcdMetricsLevel = "extensive"
)

// Etcd is the stacked etcd component.
type Etcd struct {
	// +optional
	Enabled *bool `json:"enabled,omitempty"`
	// +optional
	MetricsLevel EtcdMetricsLevel `json:"metricsLevel,omitempty"`
}

// On reports whether etcd metrics are enabled (default true).
func (e Etcd) On() bool { return e.Enabled == nil || *e.Enabled }

// Components lists the cluster components; each defaults to enabled.
type Components struct {
	// +optional
	KubeAPIServer Toggle `json:"kubeAPIServer,omitempty"`
	// +optional
	KubeControllerManager Toggle `json:"kubeControllerManager,omitempty"`
	// +optional
	KubeScheduler Toggle `json:"kubeScheduler,omitempty"`
	// +optional
	Etcd Etcd `json:"etcd,omitempty"`
	// +optional
	KubeProxy Toggle `json:"kubeProxy,omitempty"`
	// +optional
	Kubelet Toggle `json:"kubelet,omitempty"`
}

// ManagementComponents covers the controllers of a management cluster.
type ManagementComponents struct {
	// Enabled defaults to true on a management cluster.
	// +optional
	Enabled *bool `json:"enabled,omitempty"`
	// Exclude lists Deployments (namespace/name) to leave untouched.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=64
	Exclude []string `json:"exclude,omitempty"`
}

// ZPages grants the scrapers /statusz and /flagz; off unless asked.
type ZPages struct {
	// +optional
	Statusz *bool `json:"statusz,omitempty"`
	// +optional
	Flagz *bool `json:"flagz,omitempty"`
}

// TLS holds the serving TLS settings eksa-metrics renders.
type TLS struct {
	// +optional
	// +kubebuilder:validation:Enum=VersionTLS12;VersionTLS13
	MinVersion string `json:"minVersion,omitempty"`
	// Certificates says who issues the serving certificates of the proxies
	// eksa-metrics runs, so that Prometheus verifies them: eksa-metrics
	// (apply keeps a CA of its own and renews the certificates; the
	// default), cert-manager (eksa-metrics renders a CA and a Certificate
	// per proxy for the cert-manager that runs in the cluster, which issues
	// and renews them), or none (the proxies' own self-signed certificates,
	// and scrapes that skip verification).
	// +optional
	// +kubebuilder:validation:Enum=eksa-metrics;cert-manager;none
	Certificates string `json:"certificates,omitempty"`
	// KubeletServingCertificates gives every kubelet a serving certificate
	// from a CA of the kubelets' own (Secret
	// kube-system/eksa-metrics-kubelet-serving-ca, which apply creates and
	// only the kubelet scrapes trust), so that the kubelet scrapes verify
	// it: generate
	// adds serverTLSBootstrap: true to the Cluster's kubeletConfiguration
	// (control plane and every worker node group; EKS Anywhere then rolls
	// every node), and eksa-metrics runs an approver in the cluster that
	// approves a kubelet's kubernetes.io/kubelet-serving
	// CertificateSigningRequest only for that node's own names and
	// addresses, and signs it; kube-controller-manager (the
	// KubeadmControlPlane change) stops signing them with the cluster CA.
	// Refused where EKS Anywhere does not apply
	// kubeletConfiguration (Bottlerocket, Snow, Docker nodes with labels,
	// EKS Anywhere before v0.20).
	// +optional
	KubeletServingCertificates *bool `json:"kubeletServingCertificates,omitempty"`
}

// Issuers accepted in tls.certificates.
const (
	CertificatesEKSAMetrics = "eksa-metrics"
	CertificatesCertManager = "cert-manager"
	CertificatesNone        = "none"
)

// TLS versions accepted in tls.minVersion.
const (
	TLS12 = "VersionTLS12"
	TLS13 = "VersionTLS13"
)

// ScrapeConfig selects which scrape configuration is rendered, and for which
// monitoring stack.
type ScrapeConfig struct {
	// Stack is the monitoring stack that scrapes the cluster; it decides what
	// is rendered so that it plugs in.
	// +optional
	Stack Stack `json:"stack,omitempty"`
	// Release is the Helm release of kube-prometheus-stack, the name of the
	// EKS Anywhere prometheus or adot Package, of the OpenTelemetryCollector,
	// or of the VMAgent: what names the stack's scraper.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	Release string `json:"release,omitempty"`
	// +optional
	ServiceMonitors *bool `json:"serviceMonitors,omitempty"`
	// +optional
	Prometheus *bool `json:"prometheus,omitempty"`
	// +optional
	// +kubebuilder:validation:MaxLength=63
	Namespace string `json:"namespace,omitempty"`
	// Labels are added to every ServiceMonitor.
	// +optional
	Labels map[string]string `json:"labels,omitempty"`
	// DropHighCardinality drops the high-cardinality series that
	// kube-prometheus-stack drops (default true).
	// +optional
	DropHighCardinality *bool `json:"dropHighCardinality,omitempty"`
	// Credentials is where the rendered ServiceMonitors take the scraper's
	// token and the CA from. "secret" (the default): a token Secret of the
	// scraper's ServiceAccount (authorization) and CA ConfigMaps
	// (tlsConfig.ca), which every agent that reads ServiceMonitors accepts.
	// "file": the Prometheus pod's own token and CA files (bearerTokenFile,
	// caFile), which prometheus-operator deprecates and Grafana Alloy 1.19
	// and the OpenTelemetry Target Allocator refuse by default.
	// +optional
	Credentials Credentials `json:"credentials,omitempty"`
}

// Credentials says where ServiceMonitors take the scraper's credentials.
// +kubebuilder:validation:Enum="";secret;file
type Credentials string

// The values of scrapeConfig.credentials.
const (
	CredentialsSecret Credentials = "secret"
	CredentialsFile   Credentials = "file"
)

// Stack is a monitoring stack profile.
// +kubebuilder:validation:Enum="";kube-prometheus-stack;kube-prometheus;eks-anywhere;prometheus;adot;opentelemetry-operator;victoriametrics;grafana-alloy
type Stack string

// The monitoring stacks eksa-metrics renders for.
const (
	// StackGeneric (the default) renders ServiceMonitors and a plain
	// scrape file for every component.
	StackGeneric             Stack = ""
	StackKubePrometheusStack Stack = "kube-prometheus-stack"
	StackKubePrometheus      Stack = "kube-prometheus"
	StackEKSAnywhere         Stack = "eks-anywhere"
	StackPrometheus          Stack = "prometheus"
	// StackADOT is EKS Anywhere's curated ADOT package (the OpenTelemetry
	// Collector chart): its Package carries the collector's scrape configs.
	StackADOT Stack = "adot"
	// StackOpenTelemetryOperator is an OpenTelemetryCollector whose Target
	// Allocator reads the ServiceMonitors.
	StackOpenTelemetryOperator Stack = "opentelemetry-operator"
	// StackVictoriaMetrics is the VictoriaMetrics operator (which converts
	// ServiceMonitors) or a vmagent reading the plain scrape file.
	StackVictoriaMetrics Stack = "victoriametrics"
	// StackGrafanaAlloy is Grafana Alloy of grafana/k8s-monitoring, reading
	// the ServiceMonitors (prometheusOperatorObjects).
	StackGrafanaAlloy Stack = "grafana-alloy"
	// DefaultEKSAPackageRelease and DefaultADOTPackageRelease are the
	// Package names eksctl anywhere generates.
	DefaultEKSAPackageRelease = "generated-prometheus"
	DefaultADOTPackageRelease = "generated-adot"
)

// Stacks lists the stack names accepted in scrapeConfig.stack.
var Stacks = []Stack{StackKubePrometheusStack, StackKubePrometheus, StackEKSAnywhere, StackPrometheus, StackADOT, StackOpenTelemetryOperator, StackVictoriaMetrics, StackGrafanaAlloy}

// Images overrides the proxy images.
type Images struct {
	// +optional
	KubeRBACProxy string `json:"kubeRBACProxy,omitempty"`
	// +optional
	HAProxy string `json:"haproxy,omitempty"`
	// EKSAMetrics is the eksa-metrics image the kubelet serving-certificate
	// approver runs (tls.kubeletServingCertificates); default: the image of
	// this eksa-metrics release.
	// +optional
	EKSAMetrics string `json:"eksaMetrics,omitempty"`
}

// MetricsConfigStatus sums up the Clusters the MetricsConfig selects; each
// Cluster's own state is its MetricsConfigBinding, so that this object's
// size does not depend on the fleet's.
type MetricsConfigStatus struct {
	// ObservedGeneration is the generation of the spec last reconciled.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// SelectedClusters counts the Clusters the spec selects.
	// +optional
	SelectedClusters int32 `json:"selectedClusters,omitempty"`
	// ReadyClusters counts the Clusters whose objects are applied.
	// +optional
	ReadyClusters int32 `json:"readyClusters,omitempty"`
	// Conditions summarise all clusters (Ready).
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// Shards is the same per controller shard (controller run --shard),
	// each written by its own replicas; the fields above are the unsharded
	// controller's (the Clusters without the shard label).
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=64
	Shards []ShardStatus `json:"shards,omitempty"`
}

// ShardStatus is what one controller shard observed and did.
type ShardStatus struct {
	// Name is the shard (the value of the Clusters' shard label).
	Name string `json:"name"`
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// +optional
	SelectedClusters int32 `json:"selectedClusters,omitempty"`
	// +optional
	ReadyClusters int32 `json:"readyClusters,omitempty"`
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// The condition types of a MetricsConfigBinding, and the summary condition
// of a MetricsConfig.
const (
	ConditionRendered = "Rendered"
	ConditionApplied  = "Applied"
	ConditionVerified = "Verified"
	ConditionReady    = "Ready"
)

// Reasons of the conditions that say the controller refused a Cluster.
const (
	// ReasonNotAllowed: the MetricsConfig asks for what its namespace may
	// not have the controller do (the controller's policy).
	ReasonNotAllowed = "NotAllowed"
	// ReasonNotOwned: what eksa-system keeps under the Cluster's name
	// belongs to another EKS Anywhere Cluster, or to none.
	ReasonNotOwned = "ClusterNotOwned"
	// ReasonKubeconfigRefused: the workload kubeconfig Secret asks for an
	// exec or auth-provider plugin, a tokenFile or a local file.
	ReasonKubeconfigRefused = "KubeconfigRefused"
	// ReasonForeignObject: an object eksa-metrics renders exists in the
	// Cluster's clusters and eksa-metrics did not create it (or created it
	// for another Cluster): it is never taken over, and nothing was written.
	ReasonForeignObject = "ForeignObject"
	// ReasonKubeconfigInvalid: the workload kubeconfig Secret holds no
	// kubeconfig that can be used (it does not parse, or names no usable
	// context and server): nothing was sent, and the workload cluster is
	// not called unreachable.
	ReasonKubeconfigInvalid = "KubeconfigInvalid"
	// ReasonKubeconfigNotGranted: the controller may not read the
	// Cluster's kubeconfig Secret: it reads only those its installation
	// names (controller manifests --workload-cluster), so nothing was sent
	// and the workload cluster is not called unreachable.
	ReasonKubeconfigNotGranted = "KubeconfigNotGranted"
	// ReasonSelectedTwice: more than one MetricsConfig selects the Cluster;
	// a Cluster is kept by one.
	ReasonSelectedTwice = "SelectedTwice"
	// ReasonAdmissionPolicy: the controller's admission policy is missing,
	// unbound or not the one shipped, so the controller writes nothing.
	ReasonAdmissionPolicy = "AdmissionPolicyMissing"
)

// ShardLabel, on an EKS Anywhere Cluster, names the controller shard that
// keeps it (controller run --shard); a controller without --shard keeps
// the Clusters without the label.
const ShardLabel = "metrics.anywhere.eks.amazonaws.com/shard"

// The other reasons of a Cluster's conditions and of the summary.
const (
	ReasonRendered          = "Rendered"
	ReasonInvalid           = "Invalid"      // the spec does not render for this Cluster
	ReasonInvalidInput      = "InvalidInput" // a live object the render reads could not be read
	ReasonPaused            = "ClusterPaused"
	ReasonUpgrading         = "ClusterUpgrading"
	ReasonUnreachable       = "Unreachable"
	ReasonApplied           = "Applied"
	ReasonApplyFailed       = "ApplyFailed"
	ReasonRolloutNotAllowed = "RolloutNotAllowed"
	ReasonNotApplied        = "NotApplied"
	ReasonVerified          = "Verified"
	ReasonCheckFailed       = "CheckFailed"
	ReasonReleaseFailed     = "ReleaseFailed"
	ReasonNotAllApplied     = "NotAllApplied"
	// ReasonSelectsNothing: the MetricsConfig selects no Cluster (no
	// clusterRef or clusterSelector, an empty selector, a selector that
	// matches no Cluster of its namespace, or a clusterRef to a Cluster that
	// is not there), so nothing is applied: Ready is False, not "0 of 0".
	ReasonSelectsNothing = "SelectsNothing"
)
