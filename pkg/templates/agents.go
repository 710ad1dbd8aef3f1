package templates

import (
	"fmt"
	"slices"
	"strings"

	"github.com/eksa-metrics/eksa-metrics/pkg/spec"
)

// The configuration files of the scraping agents that are not a Prometheus
// server (docs/guide.md has their recipes; sources in docs/reference.md,
// "Monitoring stacks").
const (
	ADOTPackageFile            = "adot-package.yaml"
	OpenTelemetryCollectorFile = "opentelemetry-collector.yaml"
	K8sMonitoringValuesFile    = "k8s-monitoring-values.yaml"
	// RemoteWritePlaceholder stands for what the user completes: the
	// remote-write endpoint (an Amazon Managed Service for Prometheus
	// workspace's, for ADOT) and its region.
	RemoteWritePlaceholder = "<remote-write URL>"
	RegionPlaceholder      = "<AWS region>"
)

// collectorDiscoveryRules are what the OpenTelemetry Collector's prometheus
// receiver needs to discover the targets of the plain jobs: the Nodes (the
// kubelets) and the EndpointSlices with their Services and Pods. Reading
// the metrics is the reader ClusterRole's (RBAC).
const collectorDiscoveryRules = `- apiGroups: [""]
  resources: [nodes, pods, services]
  verbs: [get, list, watch]
- apiGroups: [discovery.k8s.io]
  resources: [endpointslices]
  verbs: [get, list, watch]
`

// collectorJobs are the plain scrape jobs for the OpenTelemetry Collector's
// prometheus receiver: the collector expands ${...} in its configuration,
// so every "$" is written "$$" (aws/eks-anywhere
// docs/content/en/docs/packages/adot/adot_amp_amg.md).
func collectorJobs(c *spec.Config, indent string) string {
	var b strings.Builder
	for _, job := range scrapeJobs(c) {
		writeJob(&b, job, indent, false)
	}
	return strings.ReplaceAll(b.String(), "$", "$$")
}

// ownCA: some target's certificate is signed by eksa-metrics' serving CA
// or by the kubelet-serving CA, whose ConfigMap the agent mounts at
// CABundleFile's directory.
func ownCA(c *spec.Config) bool {
	return slices.ContainsFunc(targets(c), func(t target) bool { return t.ownCA || t.kubeletCA })
}

// adotPackage renders EKS Anywhere's curated ADOT Package
// (packages.eks.amazonaws.com/v1alpha1, packageName adot): Helm values of
// the OpenTelemetry Collector chart that run one collector (a Deployment: a
// DaemonSet would scrape every target once per node) as the scraper's
// ServiceAccount, with the discovery it needs, the CA bundle mounted where
// the jobs read it, the jobs in the prometheus receiver, and a
// remote-write exporter with SigV4 for the user to complete.
func adotPackage(c *spec.Config) string {
	sa := c.TokenServiceAccount // validate requires one
	var v strings.Builder
	fmt.Fprintf(&v, "mode: deployment\nreplicaCount: 1\nserviceAccount:\n  create: true\n  name: %s\nclusterRole:\n  create: true\n  rules:\n", yamlScalar(sa))
	v.WriteString(indentLines(collectorDiscoveryRules, "  "))
	if ownCA(c) {
		fmt.Fprintf(&v, "extraVolumes:\n- name: %s\n  configMap:\n    name: %s\nextraVolumeMounts:\n- name: %s\n  mountPath: %s\n  readOnly: true\n",
			ServingCA, ServingCA, ServingCA, strings.TrimSuffix(CABundleFile, "/"+CABundleKey))
	}
	fmt.Fprintf(&v, `config:
  receivers:
    prometheus:
      config:
        scrape_configs:
%s  exporters:
    # Complete: the workspace's remote-write URL and its region.
    prometheusremotewrite:
      endpoint: %q
      auth:
        authenticator: sigv4auth
  extensions:
    sigv4auth:
      region: %q
      service: aps
  service:
    extensions: [health_check, sigv4auth]
    pipelines:
      metrics:
        receivers: [prometheus]
        exporters: [prometheusremotewrite]
`, collectorJobs(c, "        "), RemoteWritePlaceholder, RegionPlaceholder)
	var b strings.Builder
	fmt.Fprintf(&b, `# Rendered by eksa-metrics for cluster %q: EKS Anywhere's curated
# ADOT package, scraping what eksa-metrics exposes. Complete the
# remote-write exporter (%s and %s), then create it on
# the management cluster:
#   eksctl anywhere create packages -f %s --kubeconfig <management kubeconfig>
# The collector runs as the ServiceAccount %s/%s, the scraper
# eksa-metrics grants; eksa-metrics apply publishes the CA bundle it mounts.
apiVersion: packages.eks.amazonaws.com/v1alpha1
kind: Package
metadata:
  name: %s
  namespace: %s
spec:
  packageName: adot
  targetNamespace: %s
  config: |
%s`, c.ClusterName, RemoteWritePlaceholder, RegionPlaceholder, ADOTPackageFile, c.MonitoringNamespace, sa,
		yamlScalar(c.Release), yamlScalar("eksa-packages-"+c.ClusterName), yamlScalar(c.MonitoringNamespace), indentLines(v.String(), "    "))
	return b.String()
}

// otelCollector renders an OpenTelemetryCollector (opentelemetry.io/v1beta1)
// whose Target Allocator reads the rendered ServiceMonitors. Their
// credentials are Secret references, which the Target Allocator serves the
// collectors only over TLS: mtls.enabled (operator v0.153 and later, with
// cert-manager; earlier releases had the operator.targetallocator.mtls
// feature gate). Sources: open-telemetry/opentelemetry-operator
// internal/naming/main.go (the ServiceAccounts), CHANGELOG 0.153.0,
// apis/v1beta1/opentelemetrycollector_types.go (targetAllocator.mtls),
// apis/v1beta1/targetallocator_types.go (prometheusCR.denyFSAccessThroughSMs),
// cmd/otel-allocator/internal/server/server.go.
func otelCollector(c *spec.Config) string {
	return fmt.Sprintf(`# Rendered by eksa-metrics for cluster %q: an OpenTelemetryCollector whose
# Target Allocator reads the ServiceMonitors eksa-metrics renders in %s.
# Their credentials are Secret references, which the Target Allocator gives
# the collectors over mTLS only (targetAllocator.mtls, operator v0.153 or
# later, with cert-manager), and which its ServiceAccount
# <name>-targetallocator must be allowed to get (with the ServiceMonitors,
# EndpointSlices, Services, Pods and Nodes: docs/guide.md). Complete the
# remote-write exporter (%s), then
#   kubectl apply -f %s
# The collectors run as the ServiceAccount %s/%s, the scraper eksa-metrics grants.
apiVersion: opentelemetry.io/v1beta1
kind: OpenTelemetryCollector
metadata:
  name: %s
  namespace: %s
spec:
  mode: statefulset
  targetAllocator:
    enabled: true
    mtls:
      enabled: true
    prometheusCR:
      enabled: true
      # The ServiceMonitors read no file of the collectors' pods.
      denyFSAccessThroughSMs: true
      scrapeInterval: 30s
      serviceMonitorSelector:
        matchLabels:
          %s: %s
  config:
    receivers:
      prometheus:
        config:
          scrape_configs: []
    exporters:
      prometheusremotewrite:
        endpoint: %q
    service:
      pipelines:
        metrics:
          receivers: [prometheus]
          exporters: [prometheusremotewrite]
`, c.ClusterName, c.MonitoringNamespace, RemoteWritePlaceholder, OpenTelemetryCollectorFile, c.MonitoringNamespace, c.TokenServiceAccount,
		yamlScalar(c.Release), yamlScalar(c.MonitoringNamespace), ManagedByLabel, Prefix, RemoteWritePlaceholder)
}

// k8sMonitoringValues are values for grafana/k8s-monitoring (4.x): its
// own control-plane scrapes off (they reach the components on the pod IP
// with verification off, where EKS Anywhere binds them to 127.0.0.1), and
// Alloy reading the ServiceMonitors (charts/k8s-monitoring/charts/
// feature-cluster-metrics/values.yaml, feature-prometheus-operator-objects).
func k8sMonitoringValues(c *spec.Config) string {
	return fmt.Sprintf(`# Rendered by eksa-metrics for cluster %q. Merge into the values of your
# grafana/k8s-monitoring release:
#   helm upgrade <release> grafana/k8s-monitoring -n %s --reuse-values -f %s
# Its own control-plane scrapes go (eksa-metrics' ServiceMonitors reach the
# components through its proxies, verified, with the job names of its
# dashboards); the kubelet and cAdvisor scrapes stay. List the ServiceAccount
# of the Alloy that reads ServiceMonitors in the metrics section's scrapers.
clusterMetrics:
  controlPlane:
    enabled: false
  apiServer:
    enabled: false
  kubeControllerManager:
    enabled: false
  kubeScheduler:
    enabled: false
  kubeProxy:
    enabled: false
prometheusOperatorObjects:
  enabled: true
  serviceMonitors:
    enabled: true
`, c.ClusterName, c.MonitoringNamespace, K8sMonitoringValuesFile)
}

// indentLines prefixes every non-empty line of s.
func indentLines(s, indent string) string {
	lines := strings.SplitAfter(s, "\n")
	var b strings.Builder
	for _, l := range lines {
		if strings.TrimSpace(l) != "" {
			b.WriteString(indent)
		}
		b.WriteString(l)
	}
	return b.String()
}
