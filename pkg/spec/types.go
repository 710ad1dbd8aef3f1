// Package spec loads an EKS Anywhere cluster file together with its metrics
// section: strict parsing with file:line errors, defaulting, and validation,
// as separate steps.
package spec

// APIVersion and Kind of the MetricsConfig document (form A).
const (
	APIGroup   = "metrics.anywhere.eks.amazonaws.com"
	APIVersion = APIGroup + "/v1alpha1"
	Kind       = "MetricsConfig"

	eksaAPIVersion = "anywhere.eks.amazonaws.com/v1alpha1"
)

// Exposure is how loopback-only components are made reachable.
type Exposure string

const (
	ExposureProxy       Exposure = "proxy"
	ExposureBindAddress Exposure = "bindAddress"
)

// MetricsConfig is form A: a document of its own in the cluster file.
type MetricsConfig struct {
	APIVersion string      `json:"apiVersion"`
	Kind       string      `json:"kind"`
	Metadata   ObjectMeta  `json:"metadata"`
	Spec       MetricsSpec `json:"spec"`
}

// ObjectMeta is the part of metadata a MetricsConfig may carry.
type ObjectMeta struct {
	Name        string            `json:"name"`
	Namespace   string            `json:"namespace,omitempty"`
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

// MetricsSpec is the metrics section; form B has the same fields under
// Cluster.spec.metrics, without clusterRef.
type MetricsSpec struct {
	ClusterRef           *ClusterRef          `json:"clusterRef,omitempty"`
	Scrapers             []Scraper            `json:"scrapers"`
	Exposure             Exposure             `json:"exposure,omitempty"`
	Components           Components           `json:"components,omitempty"`
	ManagementComponents ManagementComponents `json:"managementComponents,omitempty"`
	ZPages               ZPages               `json:"zPages,omitempty"`
	TLS                  TLS                  `json:"tls,omitempty"`
	ScrapeConfig         ScrapeConfig         `json:"scrapeConfig,omitempty"`
	Images               Images               `json:"images,omitempty"`
	AllowInsecure        bool                 `json:"allowInsecure,omitempty"`
}

// ClusterRef names the Cluster a MetricsConfig belongs to.
type ClusterRef struct {
	Kind string `json:"kind"`
	Name string `json:"name"`
}

// ScraperKind is the RBAC subject kind of a scraper identity.
type ScraperKind string

const (
	ScraperServiceAccount ScraperKind = "ServiceAccount"
	ScraperUser           ScraperKind = "User"
	ScraperGroup          ScraperKind = "Group"
)

// Scraper is an identity that is allowed to read metrics.
type Scraper struct {
	Kind      ScraperKind `json:"kind"`
	Name      string      `json:"name"`
	Namespace string      `json:"namespace,omitempty"`
}

// Toggle switches one component on or off; nil means the default (on).
type Toggle struct {
	Enabled *bool `json:"enabled,omitempty"`
}

// On reports whether the component is enabled (default true).
func (t Toggle) On() bool { return t.Enabled == nil || *t.Enabled }

// EtcdMetricsLevel is etcd's --metrics value.
type EtcdMetricsLevel string

const (
	EtcdMetricsBasic     EtcdMetricsLevel = "basic"
	EtcdMetricsExtensive EtcdMetricsLevel = "extensive"
)

// Etcd is the stacked etcd component.
type Etcd struct {
	Enabled      *bool            `json:"enabled,omitempty"`
	MetricsLevel EtcdMetricsLevel `json:"metricsLevel,omitempty"`
}

// On reports whether etcd metrics are enabled (default true).
func (e Etcd) On() bool { return e.Enabled == nil || *e.Enabled }

// Components lists the cluster components; each defaults to enabled.
type Components struct {
	KubeAPIServer         Toggle `json:"kubeAPIServer,omitempty"`
	KubeControllerManager Toggle `json:"kubeControllerManager,omitempty"`
	KubeScheduler         Toggle `json:"kubeScheduler,omitempty"`
	Etcd                  Etcd   `json:"etcd,omitempty"`
	KubeProxy             Toggle `json:"kubeProxy,omitempty"`
	Kubelet               Toggle `json:"kubelet,omitempty"`
}

// ManagementComponents covers the controllers of a management cluster.
type ManagementComponents struct {
	Enabled *bool    `json:"enabled,omitempty"`
	Exclude []string `json:"exclude,omitempty"`
}

// ZPages turns /statusz and /flagz on or off; nil means the version default.
type ZPages struct {
	Statusz *bool `json:"statusz,omitempty"`
	Flagz   *bool `json:"flagz,omitempty"`
}

// TLS holds the serving TLS settings eksa-metrics renders.
type TLS struct {
	MinVersion string `json:"minVersion,omitempty"`
}

// TLS versions accepted in tls.minVersion.
const (
	TLS12 = "VersionTLS12"
	TLS13 = "VersionTLS13"
)

// ScrapeConfig selects which scrape configuration is rendered, and for which
// monitoring stack.
type ScrapeConfig struct {
	// Stack is the monitoring stack that scrapes the cluster; it decides what
	// is rendered so that it plugs in (see docs/reference.md).
	Stack Stack `json:"stack,omitempty"`
	// Release is the Helm release of kube-prometheus-stack, or the name of the
	// EKS Anywhere prometheus Package.
	Release         string `json:"release,omitempty"`
	ServiceMonitors *bool  `json:"serviceMonitors,omitempty"`
	Prometheus      *bool  `json:"prometheus,omitempty"`
	Namespace       string `json:"namespace,omitempty"`
	// Labels are added to every ServiceMonitor.
	Labels map[string]string `json:"labels,omitempty"`
	// DropHighCardinality drops the high-cardinality series that
	// kube-prometheus-stack drops (default true).
	DropHighCardinality *bool `json:"dropHighCardinality,omitempty"`
}

// Stack is a monitoring stack profile.
type Stack string

// The monitoring stacks eksa-metrics renders for.
const (
	// StackGeneric (the default) renders ServiceMonitors and a plain
	// scrape file for every component.
	StackGeneric              Stack = ""
	StackKubePrometheusStack  Stack = "kube-prometheus-stack"
	StackKubePrometheus       Stack = "kube-prometheus"
	StackEKSAnywhere          Stack = "eks-anywhere"
	StackPrometheus           Stack = "prometheus"
	DefaultEKSAPackageRelease       = "generated-prometheus"
)

// Stacks lists the stack names accepted in scrapeConfig.stack.
var Stacks = []Stack{StackKubePrometheusStack, StackKubePrometheus, StackEKSAnywhere, StackPrometheus}

// Images overrides the proxy images.
type Images struct {
	KubeRBACProxy string `json:"kubeRBACProxy,omitempty"`
	HAProxy       string `json:"haproxy,omitempty"`
}
