package spec

import (
	"strings"

	metricsv1alpha1 "github.com/eksa-metrics/eksa-metrics/pkg/apis/metrics/v1alpha1"
)

// Stack is what eksa-metrics knows of a monitoring stack (a value of
// scrapeConfig.stack): its defaults, its Prometheus identity, and what is
// rendered for it. Stacks has one row per stack; adding a stack is adding a
// row (and its recipe in docs/guide.md). Sources in docs/reference.md,
// "Monitoring stacks".
type Stack struct {
	// ServiceMonitors and File are the defaults of scrapeConfig.serviceMonitors
	// and scrapeConfig.prometheus.
	ServiceMonitors, File bool
	// Namespace is the default of scrapeConfig.namespace.
	Namespace string
	// Release: whether scrapeConfig.release is required, or may be set, and
	// its default.
	ReleaseRequired, ReleaseAllowed bool
	DefaultRelease                  string
	// ReleaseNames says what the release names; ReleaseMeans, where it is
	// required, how to find it.
	ReleaseNames, ReleaseMeans string
	// Scraper is the ServiceAccount the stack's Prometheus runs as, from the
	// release and the namespace; nil when the stack has no fixed one.
	Scraper func(release, namespace string) *metricsv1alpha1.Scraper
	// NoCABundle: eksa-metrics cannot have the stack mount the CA bundle, so
	// its scrapes of the proxies skip verification (tls.certificates
	// defaults to none, and eksa-metrics or cert-manager is refused).
	NoCABundle bool

	// ScrapesItself are the components (components.ID) the stack scrapes
	// with monitors of its own; rendering them again would double every
	// series.
	ScrapesItself []string
	// ReleaseLabel: the stack's Prometheus selects ServiceMonitors labelled
	// release: <release>.
	ReleaseLabel bool
	// DiscoveryRoles: render Roles that let the scrapers discover targets in
	// the namespaces other than DiscoveryNamespaces, where the stack grants
	// nothing.
	DiscoveryRoles      bool
	DiscoveryNamespaces []string
	// ConfigFile names the file of the stack's own configuration that
	// eksa-metrics renders beside the objects, for the user to complete or
	// merge (templates.StackFiles renders it): kube-prometheus-stack values,
	// the ADOT Package, an OpenTelemetryCollector.
	ConfigFile string
	// ConfigFileScrapes: ConfigFile carries the scrape jobs (the stack reads
	// neither ServiceMonitors nor the plain file).
	ConfigFileScrapes bool
	// EKSAPackage: render the EKS Anywhere curated prometheus Package.
	EKSAPackage bool
	// AdditionalScrapeConfigs: render the list-shaped Secret a
	// prometheus-operator Prometheus names in additionalScrapeConfigs.
	AdditionalScrapeConfigs bool
	// MonitorsAlone: the stack's Prometheus selects the ServiceMonitors by
	// itself, so a render with ServiceMonitors and no file still plugs in.
	MonitorsAlone bool
	// NoRuleEvaluation: the stack evaluates no alerting rules (a collector
	// that remote-writes), so no PrometheusRule is rendered for it.
	NoRuleEvaluation bool
	// GrafanaSidecar: the stack's Grafana loads dashboards from ConfigMaps
	// labelled grafana_dashboard: "1" (kube-prometheus-stack's sidecar).
	GrafanaSidecar bool
	// TextOnly: the stack's scraper reads the text exposition format only
	// and refuses scrape-config fields it does not know, so the plain file
	// rendered for it leaves out always_scrape_classic_histograms (vmagent:
	// VictoriaMetrics lib/promscrape/config.go, ScrapeConfig has no such
	// field and -promscrape.config.strictParse defaults to true; a text
	// scrape always carries the classic buckets).
	TextOnly bool
	// Jobs are the job labels the stack's dashboards expect, by component
	// (components.ID), where they differ from the catalog's.
	Jobs map[string]string
	// NoFileCredentials: the stack refuses ServiceMonitors that read files
	// of its pod (Grafana Alloy 1.19 and later by default), so the
	// credentials must be references.
	NoFileCredentials bool
}

// Stacks are the monitoring stacks of scrapeConfig.stack, by name ("" is no
// stack: ServiceMonitors and the plain file for every component).
var Stacks = map[metricsv1alpha1.Stack]Stack{
	metricsv1alpha1.StackGeneric: {ServiceMonitors: true, File: true, Namespace: "monitoring"},
	// kube-prometheus-stack ships ServiceMonitors for the API server and the
	// kubelet (with its own drop lists) and selects by the release label.
	metricsv1alpha1.StackKubePrometheusStack: {ServiceMonitors: true, Namespace: "monitoring",
		ReleaseRequired: true, ReleaseAllowed: true, ReleaseNames: "the Helm release", ReleaseMeans: "the Helm release name of kube-prometheus-stack (helm list -A); its Prometheus selects ServiceMonitors labelled release: <release>",
		Scraper: func(release, ns string) *metricsv1alpha1.Scraper {
			if release == "" {
				return nil
			}
			return serviceAccount(KubePrometheusStackFullname(release)+"-prometheus", ns)
		},
		ScrapesItself: []string{"kube-apiserver", "kubelet"}, ReleaseLabel: true, ConfigFile: "kube-prometheus-stack-values.yaml", MonitorsAlone: true, GrafanaSidecar: true},
	// kube-prometheus ships monitors for the API server and the kubelet, and
	// discovery Roles only in default, kube-system and monitoring.
	metricsv1alpha1.StackKubePrometheus: {ServiceMonitors: true, Namespace: "monitoring",
		Scraper:       func(_, ns string) *metricsv1alpha1.Scraper { return serviceAccount("prometheus-k8s", ns) },
		ScrapesItself: []string{"kube-apiserver", "kubelet"}, DiscoveryRoles: true, DiscoveryNamespaces: []string{"default", "kube-system", "monitoring"}, MonitorsAlone: true},
	// The curated package's prometheus chart scrapes the API servers, the
	// kubelets and cAdvisor by default (jobs kubernetes-api-servers,
	// kubernetes-nodes, kubernetes-nodes-cadvisor).
	metricsv1alpha1.StackEKSAnywhere: {Namespace: "observability",
		ReleaseAllowed: true, ReleaseNames: "the Package name", DefaultRelease: metricsv1alpha1.DefaultEKSAPackageRelease,
		Scraper: func(release, ns string) *metricsv1alpha1.Scraper {
			// The prometheus chart's server fullname: <release>-server when
			// the release name contains "prometheus", else
			// <release>-prometheus-server.
			name := release + "-prometheus-server"
			if strings.Contains(release, "prometheus") {
				name = release + "-server"
			}
			return serviceAccount(truncate(name, 63), ns)
		},
		NoCABundle: true, ScrapesItself: []string{"kube-apiserver", "kubelet"}, EKSAPackage: true},
	metricsv1alpha1.StackPrometheus: {File: true, Namespace: "monitoring", AdditionalScrapeConfigs: true},
	// EKS Anywhere's curated ADOT package runs the OpenTelemetry Collector
	// chart, which reads no ServiceMonitor: the Package's collector
	// configuration carries the scrape jobs, and the collector pod scrapes
	// with its own ServiceAccount (named in the rendered values).
	metricsv1alpha1.StackADOT: {Namespace: "observability",
		ReleaseAllowed: true, ReleaseNames: "the Package name", DefaultRelease: metricsv1alpha1.DefaultADOTPackageRelease,
		Scraper:    func(release, ns string) *metricsv1alpha1.Scraper { return serviceAccount(release, ns) },
		ConfigFile: "adot-package.yaml", ConfigFileScrapes: true, NoRuleEvaluation: true},
	// The OpenTelemetry Operator's Target Allocator reads ServiceMonitors
	// (and refuses file references with denyFSAccessThroughSMs); the
	// collectors run as <name>-collector.
	metricsv1alpha1.StackOpenTelemetryOperator: {ServiceMonitors: true, Namespace: "opentelemetry", NoFileCredentials: true,
		ReleaseRequired: true, ReleaseAllowed: true, ReleaseNames: "the OpenTelemetryCollector name", ReleaseMeans: "the name of the OpenTelemetryCollector whose Target Allocator reads the ServiceMonitors; its collectors run as the ServiceAccount <name>-collector",
		Scraper: func(release, ns string) *metricsv1alpha1.Scraper {
			return serviceAccount(truncate(release+"-collector", 63), ns)
		},
		ConfigFile: "opentelemetry-collector.yaml", MonitorsAlone: true, NoRuleEvaluation: true},
	// Grafana Alloy (grafana/k8s-monitoring 4.x) reads the ServiceMonitors
	// with prometheusOperatorObjects, refuses file references (Alloy 1.19),
	// scrapes the kubelets and cAdvisor itself, and its dashboards expect
	// integrations/... jobs (feature-cluster-metrics values.yaml,
	// integrations/etcd-values.yaml).
	metricsv1alpha1.StackGrafanaAlloy: {ServiceMonitors: true, Namespace: "monitoring",
		ScrapesItself: []string{"kubelet"}, ConfigFile: "k8s-monitoring-values.yaml", MonitorsAlone: true, NoFileCredentials: true,
		Jobs: map[string]string{"kube-apiserver": "integrations/kubernetes/kube-apiserver", "kube-proxy": "integrations/kubernetes/kube-proxy", "etcd": "integrations/etcd"}},
	// The VictoriaMetrics operator converts ServiceMonitors into
	// VMServiceScrapes; a vmagent without it reads the plain scrape file.
	// An operator VMAgent <name> runs as vmagent-<name>.
	metricsv1alpha1.StackVictoriaMetrics: {ServiceMonitors: true, File: true, Namespace: "monitoring", TextOnly: true,
		ReleaseAllowed: true, ReleaseNames: "the VMAgent name",
		Scraper: func(release, ns string) *metricsv1alpha1.Scraper {
			if release == "" {
				return nil
			}
			return serviceAccount(truncate("vmagent-"+release, 63), ns)
		}},
}

// RendersConfiguration: the stack's scrape configuration is rendered even
// without ServiceMonitors or the plain file (a Package, a collector file).
func (s Stack) RendersConfiguration() bool { return s.EKSAPackage || s.ConfigFileScrapes }

func serviceAccount(name, namespace string) *metricsv1alpha1.Scraper {
	return &metricsv1alpha1.Scraper{Kind: metricsv1alpha1.ScraperServiceAccount, Name: name, Namespace: namespace}
}

// StackScraper is the ServiceAccount a stack's Prometheus runs as, or nil
// when the stack has no fixed one (or needs the release name to know it).
func StackScraper(stack metricsv1alpha1.Stack, release, namespace string) *metricsv1alpha1.Scraper {
	if s := Stacks[stack]; s.Scraper != nil {
		return s.Scraper(release, namespace)
	}
	return nil
}

// KubePrometheusStackFullname is the chart's fullname helper for a release
// (kube-prometheus-stack _helpers.tpl): the release name when it contains the
// chart name, else "<release>-kube-prometheus-stack", cut to 26 characters
// and a trailing "-".
func KubePrometheusStackFullname(release string) string {
	const chart = "kube-prometheus-stack"
	name := release + "-" + chart
	if strings.Contains(release, chart) {
		name = release
	}
	return strings.TrimSuffix(truncate(name, 26), "-")
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}
