package templates

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/eksa-metrics/eksa-metrics/pkg/components"
	"github.com/eksa-metrics/eksa-metrics/pkg/spec"
)

// profile is the stack's row of spec.Stacks.
type profile struct{ spec.Stack }

func profileOf(c *spec.Config) profile { return profile{spec.Stacks[c.Stack]} }

// scrapesItself: the stack scrapes the component with monitors of its own.
func (p profile) scrapesItself(id components.ID) bool {
	return slices.Contains(p.ScrapesItself, string(id))
}

// monitorLabels are the labels every ServiceMonitor carries for the stack and
// the metrics section.
func (p profile) monitorLabels(c *spec.Config) map[string]string {
	out := map[string]string{}
	if p.ReleaseLabel {
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
	if p.DiscoveryRoles {
		out = append(out, discoveryRoles(c, p)...)
	}
	if p.AdditionalScrapeConfigs {
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
		if !slices.Contains(p.DiscoveryNamespaces, t.serviceNS) && !slices.Contains(namespaces, t.serviceNS) {
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
	if !profileOf(c).EKSAPackage {
		return nil
	}
	var config strings.Builder
	config.WriteString("# Rendered by eksa-metrics: scrape jobs merged into the chart's scrapeConfigs.\nscrapeConfigs:\n")
	for _, job := range scrapeJobs(c) {
		writeJob(&config, job, "  ", true)
	}
	// The chart writes serverFiles as they are (toYaml, no templating), so
	// the alerts' {{ $labels }} reach Prometheus.
	if groups := operatorGroups(c); len(groups) > 0 {
		rules, err := yaml.Marshal(map[string]any{"serverFiles": map[string]any{"alerting_rules.yml": map[string]any{"groups": groups}}})
		if err != nil {
			panic(err) // plain structs
		}
		config.WriteString("# eksa-metrics' alerting rules (docs/alerts.md).\n")
		config.Write(rules)
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

// GrafanaDashboardLabel is the label kube-prometheus-stack's Grafana
// sidecar loads dashboards from (its values: grafana.sidecar.dashboards.label
// and labelValue "1").
const GrafanaDashboardLabel = "grafana_dashboard"

// DashboardConfigMap carries one dashboard's JSON for the Grafana sidecar
// of the stack (spec.Stack.GrafanaSidecar), in the monitoring namespace.
func DashboardConfigMap(c *spec.Config, name string, js []byte) Object {
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: name + "-dashboard", Namespace: c.MonitoringNamespace, Labels: labels(map[string]string{GrafanaDashboardLabel: "1"})},
		Data:       map[string]string{name + ".json": string(js)},
	}
	return toObject("v1", "ConfigMap", cm)
}

// StackFiles are files of the kustomize directory that are not applied: the
// stack's own configuration (spec.Stack.ConfigFile), for the user to merge
// or complete.
func StackFiles(c *spec.Config) map[string][]byte {
	name := profileOf(c).ConfigFile
	if name == "" {
		return nil
	}
	return map[string][]byte{name: []byte(configFiles[name].render(c))}
}

// StackFileUse says what the user does with a file of StackFiles, and the
// command that does it.
func StackFileUse(c *spec.Config, name string) (what, command string) {
	return configFiles[name].use(c, name)
}

// configFile renders one spec.Stack.ConfigFile and says how it is used.
type configFile struct {
	render func(*spec.Config) string
	use    func(c *spec.Config, name string) (what, command string)
}

// configFiles are the spec.Stack.ConfigFile values.
var configFiles = map[string]configFile{
	KubePrometheusStackValues: {kpsValues, func(c *spec.Config, name string) (string, string) {
		return fmt.Sprintf("merge it into the values of the kube-prometheus-stack release %q", c.Release), "helm upgrade " + c.Release + " ... --reuse-values -f " + name
	}},
	ADOTPackageFile: {adotPackage, func(c *spec.Config, name string) (string, string) {
		return "complete its remote-write exporter (endpoint and region), then create the ADOT Package on the management cluster", "eksctl anywhere create packages -f " + name
	}},
	K8sMonitoringValuesFile: {k8sMonitoringValues, func(c *spec.Config, name string) (string, string) {
		return "merge it into the values of your grafana/k8s-monitoring release", "helm upgrade <release> grafana/k8s-monitoring -n " + c.MonitoringNamespace + " --reuse-values -f " + name
	}},
	OpenTelemetryCollectorFile: {otelCollector, func(c *spec.Config, name string) (string, string) {
		return "complete its remote-write exporter, then create the OpenTelemetryCollector in the workload cluster", "kubectl apply -f " + name
	}},
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
