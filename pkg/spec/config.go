package spec

import metricsv1alpha1 "github.com/eksa-metrics/eksa-metrics/pkg/apis/metrics/v1alpha1"

// Config is the defaulted, validated metrics section together with the facts
// about the cluster that rendering needs. Renderers read only this.
type Config struct {
	ClusterName string
	KubeVersion KubeVersion
	Provider    Provider
	// OSFamily of the control-plane machines; empty for Docker.
	OSFamily    string
	CAPIVersion string // CAPIv1beta1 or CAPIv1beta2
	// CAPIReason says why CAPIVersion was chosen.
	CAPIReason     string
	EKSAVersion    *EKSAVersion
	Management     bool
	ExternalEtcd   bool
	EtcdEncryption bool
	// APIServerExtraArgs is the Cluster's
	// controlPlaneConfiguration.apiServerExtraArgs, which EKS-A renders.
	APIServerExtraArgs map[string]string

	Exposure      metricsv1alpha1.Exposure
	Scrapers      []metricsv1alpha1.Scraper
	AllowInsecure bool

	APIServer         bool
	ControllerManager bool
	Scheduler         bool
	// Etcd is true when stacked etcd metrics are rendered (false with
	// external etcd, whose metrics need no change).
	Etcd             bool
	EtcdMetricsLevel metricsv1alpha1.EtcdMetricsLevel
	// ExternalEtcdScrape is true when etcd is enabled but external: only a
	// scrape configuration (mTLS on 2379) is rendered.
	ExternalEtcdScrape bool
	KubeProxy          bool
	Kubelet            bool

	ManagementComponents bool
	ManagementExclude    []string

	Statusz bool
	Flagz   bool

	TLSMinVersion string
	// ServingCertificates: the kube-rbac-proxies serve certificates from
	// eksa-metrics' CA, and scrapes verify them (tls.certificates).
	ServingCertificates bool
	// CertManager: cert-manager issues and renews those certificates from
	// the Issuers and Certificates eksa-metrics renders (tls.certificates:
	// cert-manager); otherwise apply does.
	CertManager bool
	// KubeletServingCertificates: the kubelets serve certificates from the
	// cluster CA (serverTLSBootstrap, approved by the approver eksa-metrics
	// runs), and their scrapes verify them (tls.kubeletServingCertificates).
	KubeletServingCertificates bool
	// Machines are what the controller publishes to the approver of a
	// workload cluster (Input.Machines); PublishMachines says it does
	// (the approver then reads them from the ConfigMap rather than the
	// Machines of its own cluster).
	Machines        []Machine
	PublishMachines bool
	// ServiceCIDRs and ControlPlaneEndpoint are the Cluster's Service
	// ranges and control-plane endpoint host, which the kubelet approver
	// never approves in a kubelet's certificate.
	ServiceCIDRs         []string
	ControlPlaneEndpoint string

	Stack               metricsv1alpha1.Stack
	Release             string
	ServiceMonitors     bool
	PrometheusConfig    bool
	MonitoringNamespace string
	MonitorLabels       map[string]string
	DropHighCardinality bool
	// DefaultScraper is true when Scrapers is the stack's own Prometheus
	// identity because the section named none.
	DefaultScraper bool
	// CredentialsFile: the ServiceMonitors read the scraper pod's token and
	// CA files (scrapeConfig.credentials: file, or no scraper is a
	// ServiceAccount of MonitoringNamespace). Otherwise they reference the
	// token Secret of TokenServiceAccount, the first scraper that is.
	CredentialsFile     bool
	TokenServiceAccount string

	Images metricsv1alpha1.Images
	// ImageSources say where the kube-rbac-proxy and HAProxy images come
	// from: "spec.images", the bundles file's path, or "default".
	ImageSources [2]string
	// RegistryMirror is the Cluster's registryMirrorConfiguration endpoint.
	RegistryMirror string
}

// Default images, pinned. --bundles-override and spec.images override them.
const (
	DefaultKubeRBACProxyImage = "quay.io/brancz/kube-rbac-proxy:v0.19.1"
	DefaultHAProxyImage       = "docker.io/library/haproxy:3.0.12-alpine"
)

// ZPages reports whether any z-page is on.
func (c *Config) ZPages() bool { return c.Statusz || c.Flagz }
