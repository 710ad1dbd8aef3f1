package templates

import (
	"fmt"
	"slices"
	"strings"

	metricsv1alpha1 "github.com/eksa-metrics/eksa-metrics/pkg/apis/metrics/v1alpha1"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/eksa-metrics/eksa-metrics/pkg/components"
	"github.com/eksa-metrics/eksa-metrics/pkg/spec"
)

// profile is what a monitoring stack needs from eksa-metrics, as data.
type profile struct {
	// scrapesItself are the components the stack scrapes with monitors of its
	// own; rendering them again would double every series.
	scrapesItself []components.ID
	// releaseLabel: the stack's Prometheus selects ServiceMonitors labelled
	// release: <release> (kube-prometheus-stack).
	releaseLabel bool
	// discoveryNamespaces are the namespaces where the stack's Prometheus may
	// already discover targets; elsewhere it needs a Role (kube-prometheus).
	discoveryNamespaces []string
	discoveryRoles      bool
	// kpsValues: render kube-prometheus-stack values that turn off its own
	// monitors of the components eksa-metrics exposes, keeping its alerts.
	kpsValues bool
	// eksaPackage: render the EKS Anywhere curated prometheus Package.
	eksaPackage bool
	// additionalScrapeConfigs: render the list-shaped Secret for a
	// prometheus-operator additionalScrapeConfigs.
	additionalScrapeConfigs bool
}

// profiles are the stacks of scrapeConfig.stack; sources in docs/guide.md.
var profiles = map[metricsv1alpha1.Stack]profile{
	metricsv1alpha1.StackGeneric: {},
	// kube-prometheus-stack ships ServiceMonitors for the API server and the
	// kubelet (with its own drop lists) and selects by the release label.
	metricsv1alpha1.StackKubePrometheusStack: {scrapesItself: []components.ID{components.KubeAPIServer, components.Kubelet}, releaseLabel: true, kpsValues: true},
	// kube-prometheus ships monitors for the API server and the kubelet, and
	// discovery Roles only in default, kube-system and monitoring.
	metricsv1alpha1.StackKubePrometheus: {scrapesItself: []components.ID{components.KubeAPIServer, components.Kubelet}, discoveryRoles: true,
		discoveryNamespaces: []string{"default", SystemNS, "monitoring"}},
	// The curated package's prometheus chart scrapes the API servers, the
	// kubelets and cAdvisor by default (jobs kubernetes-api-servers,
	// kubernetes-nodes, kubernetes-nodes-cadvisor).
	metricsv1alpha1.StackEKSAnywhere: {scrapesItself: []components.ID{components.KubeAPIServer, components.Kubelet}, eksaPackage: true},
	metricsv1alpha1.StackPrometheus:  {additionalScrapeConfigs: true},
}

func profileOf(c *spec.Config) profile { return profiles[c.Stack] }

// monitorLabels are the labels every ServiceMonitor carries for the stack and
// the metrics section.
func (p profile) monitorLabels(c *spec.Config) map[string]string {
	out := map[string]string{}
	if p.releaseLabel {
		out["release"] = c.Release
	}
	for k, v := range c.MonitorLabels {
		out[k] = v
	}
	return out
}

// StackObjects renders what the chosen stack needs besides the monitors:
// kube-prometheus discovery Roles, the EKS Anywhere Package, the
// additionalScrapeConfigs Secret.
func StackObjects(c *spec.Config) []Object {
	p := profileOf(c)
	var out []Object
	if p.discoveryRoles {
		out = append(out, discoveryRoles(c, p)...)
	}
	if p.additionalScrapeConfigs {
		s := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: AdditionalScrapeConfigsSecret, Namespace: c.MonitoringNamespace, Labels: labels(nil)},
			Type:       corev1.SecretTypeOpaque,
			StringData: map[string]string{AdditionalScrapeConfigsKey: AdditionalScrapeConfigs(c)},
		}
		out = append(out, toObject("v1", "Secret", s))
	}
	return out
}

// The Secret a prometheus-operator Prometheus names in additionalScrapeConfigs.
const (
	AdditionalScrapeConfigsSecret = Prefix + "-additional-scrape-configs"
	AdditionalScrapeConfigsKey    = "additional-scrape-configs.yaml"
	DiscoveryRole                 = Prefix + "-discovery"
)

// discoveryRoles lets the scrapers discover targets (EndpointSlices, the
// Services and Pods behind them) in the namespaces the ServiceMonitors point
// at, where the stack grants nothing. Read-only, namespaced.
func discoveryRoles(c *spec.Config, p profile) []Object {
	var namespaces []string
	for _, t := range targets(c) {
		if !slices.Contains(p.discoveryNamespaces, t.serviceNS) && !slices.Contains(namespaces, t.serviceNS) {
			namespaces = append(namespaces, t.serviceNS)
		}
	}
	slices.Sort(namespaces)
	var out []Object
	for _, ns := range namespaces {
		role := &rbacv1.Role{
			ObjectMeta: metav1.ObjectMeta{Name: DiscoveryRole, Namespace: ns, Labels: labels(nil)},
			Rules: []rbacv1.PolicyRule{
				{APIGroups: []string{"discovery.k8s.io"}, Resources: []string{"endpointslices"}, Verbs: []string{"get", "list", "watch"}},
				{APIGroups: []string{""}, Resources: []string{"pods", "services"}, Verbs: []string{"get", "list", "watch"}},
			},
		}
		binding := &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: DiscoveryRole, Namespace: ns, Labels: labels(nil)},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: DiscoveryRole},
			Subjects:   subjects(c.Scrapers),
		}
		out = append(out, toObject("rbac.authorization.k8s.io/v1", "Role", role), toObject("rbac.authorization.k8s.io/v1", "RoleBinding", binding))
	}
	return out
}

// PackageObjects renders, for the eks-anywhere stack, the curated prometheus
// Package (packages.eks.amazonaws.com/v1alpha1, on the management cluster)
// whose chart values add eksa-metrics' jobs through the chart's scrapeConfigs
// map: one key per job, merged with the chart's own jobs. (The package's
// extraScrapeConfigs is rendered twice by chart 29.11 and breaks the
// configuration.)
func PackageObjects(c *spec.Config) []Object {
	if !profileOf(c).eksaPackage {
		return nil
	}
	var config strings.Builder
	config.WriteString("# Rendered by eksa-metrics: scrape jobs merged into the chart's scrapeConfigs.\nscrapeConfigs:\n")
	for _, job := range scrapeJobs(c) {
		writeJob(&config, job, "  ", true)
	}
	return []Object{{
		"apiVersion": "packages.eks.amazonaws.com/v1alpha1",
		"kind":       "Package",
		"metadata": map[string]any{
			"name":      c.Release,
			"namespace": "eksa-packages-" + c.ClusterName,
			"labels":    map[string]any{ManagedByLabel: Prefix},
		},
		"spec": map[string]any{
			"packageName":     "prometheus",
			"targetNamespace": c.MonitoringNamespace,
			"config":          config.String(),
		},
	}}
}

// StackFiles are files of the kustomize directory that are not objects: the
// kube-prometheus-stack values.
func StackFiles(c *spec.Config) map[string][]byte {
	if !profileOf(c).kpsValues {
		return nil
	}
	return map[string][]byte{KubePrometheusStackValues: []byte(kpsValues(c))}
}

// KubePrometheusStackValues is the values file for kube-prometheus-stack.
const KubePrometheusStackValues = "kube-prometheus-stack-values.yaml"

// kpsValues turns off kube-prometheus-stack's own Services and
// ServiceMonitors of the components eksa-metrics exposes (they would scrape
// the proxies' ports in plain HTTP, or twice), while keeping enabled: true,
// on which its alert rules depend. Discovery uses EndpointSlices.
func kpsValues(c *spec.Config) string {
	var b strings.Builder
	fmt.Fprintf(&b, `# Rendered by eksa-metrics for cluster %q. Merge into the values of the
# kube-prometheus-stack release %q, for example:
#   helm upgrade %s prometheus-community/kube-prometheus-stack -n %s --reuse-values -f %s
# It turns off the chart's own Services and ServiceMonitors of the components
# eksa-metrics exposes, and keeps "enabled: true", which keeps their alert rules.
`, c.ClusterName, c.Release, c.Release, c.MonitoringNamespace, KubePrometheusStackValues)
	for _, v := range []struct {
		key string
		on  bool
	}{
		{"kubeControllerManager", c.ControllerManager},
		{"kubeScheduler", c.Scheduler},
		{"kubeEtcd", c.Etcd},
		{"kubeProxy", c.KubeProxy},
	} {
		if v.on {
			fmt.Fprintf(&b, "%s:\n  enabled: true\n  service:\n    enabled: false\n  serviceMonitor:\n    enabled: false\n", v.key)
		}
	}
	b.WriteString(`prometheus:
  prometheusSpec:
    # The Endpoints API is deprecated from Kubernetes 1.33.
    serviceDiscoveryRole: EndpointSlice
prometheusOperator:
  kubeletEndpointSliceEnabled: true
`)
	return b.String()
}
