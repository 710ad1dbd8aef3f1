package templates

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/eksa-metrics/eksa-metrics/pkg/components"
	"github.com/eksa-metrics/eksa-metrics/pkg/spec"
)

// target is how Prometheus reaches one component in this configuration.
type target struct {
	comp components.Cluster
	// service is the Service (namespace/name) whose endpoints are scraped.
	serviceNS, serviceName string
	// selector picks the Service: our own label, or the one that already exists.
	selector map[string]string
	port     string
	scheme   string
	// verify: the target's certificate chains to the cluster CA with this name.
	serverName string
	// insecure explains why the certificate cannot be verified ("" = verify).
	insecure string
	// mgmt marks a management component (its Service is rendered with it).
	mgmt bool
}

// targets lists the scrape targets of the enabled components.
func targets(c *spec.Config) []target {
	var out []target
	for _, comp := range Enabled(c) {
		t := target{comp: comp, serviceNS: SystemNS, serviceName: Prefix + "-" + string(comp.ID), port: comp.PortName, scheme: "https", insecure: comp.SelfSigned}
		t.selector = map[string]string{ComponentLabel: string(comp.ID)}
		switch comp.ID {
		case components.KubeAPIServer:
			t.serviceNS, t.serviceName, t.serverName, t.insecure = "default", "kubernetes", "kubernetes", ""
			t.selector = map[string]string{"component": "apiserver", "provider": "kubernetes"}
		case components.Kubelet:
			// The Service prometheus-operator maintains (--kubelet-service=kube-system/kubelet).
			t.serviceName, t.selector = "kubelet", map[string]string{"k8s-app": "kubelet"}
		case components.Etcd, components.KubeProxy:
			if c.Exposure == spec.ExposureBindAddress {
				t.scheme, t.insecure = "http", ""
			}
		}
		out = append(out, t)
	}
	for _, m := range ManagementComponents(c) {
		comp := components.Cluster{ID: components.ID(m.Deployment), PortName: "https", Port: components.MetricsPort, TLS: true, Paths: []string{"/metrics"}}
		why := "controller-runtime serves a self-signed certificate on the secure diagnostics port"
		if m.Family == components.Sidecar {
			why = "the kube-rbac-proxy sidecar generates a self-signed serving certificate"
		}
		out = append(out, target{comp: comp, serviceNS: m.Namespace, serviceName: m.Deployment + "-metrics", port: "https", scheme: "https",
			selector: map[string]string{ComponentLabel: m.Deployment}, insecure: why, mgmt: true})
	}
	return out
}

// Services renders the headless Services that give Prometheus the endpoints
// of the loopback-only components: the proxy pods in proxy mode, the static
// pods and kube-proxy pods in bindAddress mode.
func Services(c *spec.Config) []Object {
	var out []Object
	for _, t := range targets(c) {
		if t.comp.ID == components.KubeAPIServer || t.comp.ID == components.Kubelet || t.mgmt {
			continue // their Services exist already, or come with ManagementObjects
		}
		var selector map[string]string
		switch {
		case c.Exposure == spec.ExposureProxy && t.comp.ID == components.KubeProxy:
			selector = map[string]string{NameLabel: NodeDS}
		case c.Exposure == spec.ExposureProxy:
			selector = map[string]string{NameLabel: ControlPlaneDS}
		case t.comp.ID == components.KubeProxy:
			selector = map[string]string{"k8s-app": "kube-proxy"}
		default:
			selector = map[string]string{"component": t.comp.StaticPod, "tier": "control-plane"}
		}
		svc := &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: t.serviceName, Namespace: t.serviceNS, Labels: labels(t.selector)},
			Spec: corev1.ServiceSpec{
				ClusterIP: corev1.ClusterIPNone,
				Selector:  selector,
				Ports:     []corev1.ServicePort{{Name: t.port, Port: int32(t.comp.Port), TargetPort: intstr.FromInt32(int32(t.comp.Port)), Protocol: corev1.ProtocolTCP}},
			},
		}
		out = append(out, toObject("v1", "Service", svc))
	}
	return out
}

// ServiceMonitors renders one prometheus-operator ServiceMonitor per target.
func ServiceMonitors(c *spec.Config) []Object {
	if !c.ServiceMonitors {
		return nil
	}
	var out []Object
	for _, t := range targets(c) {
		var eps []monitoringv1.Endpoint
		for _, p := range t.comp.Paths {
			ep := monitoringv1.Endpoint{Port: t.port, Path: p, Scheme: t.scheme}
			if t.scheme == "https" { // never a token over plain HTTP
				ep.BearerTokenFile = saTokenFile
				tls := &monitoringv1.TLSConfig{CAFile: saCAFile}
				if t.insecure != "" {
					tls.InsecureSkipVerify = ptr.To(true)
				} else {
					tls.ServerName = ptr.To(t.serverName)
				}
				ep.TLSConfig = tls
			}
			eps = append(eps, ep)
		}
		meta := metav1.ObjectMeta{Name: Prefix + "-" + string(t.comp.ID), Namespace: c.MonitoringNamespace, Labels: labels(map[string]string{ComponentLabel: string(t.comp.ID)})}
		if t.insecure != "" && t.scheme == "https" {
			meta.Annotations = map[string]string{InsecureSkipVerifyAnnotation: t.insecure}
		}
		sm := &monitoringv1.ServiceMonitor{
			ObjectMeta: meta,
			Spec: monitoringv1.ServiceMonitorSpec{
				JobLabel:          ComponentLabel,
				Endpoints:         eps,
				Selector:          metav1.LabelSelector{MatchLabels: t.selector},
				NamespaceSelector: monitoringv1.NamespaceSelector{MatchNames: []string{t.serviceNS}},
			},
		}
		if t.comp.ID == components.KubeAPIServer || t.comp.ID == components.Kubelet {
			sm.Spec.JobLabel = ""
		}
		out = append(out, toObject(monitoringv1.SchemeGroupVersion.String(), monitoringv1.ServiceMonitorsKind, sm))
	}
	return out
}

// Prometheus scrape_configs, as a plain Prometheus configuration file;
// writeJob writes them.
type scrapeJob struct {
	JobName             string
	Scheme              string
	MetricsPath         string
	Authorization       *authorization
	TLSConfig           *tlsConfig
	KubernetesSDConfigs []kubernetesSD
	RelabelConfigs      []relabel
	comment             string
}

type authorization struct {
	CredentialsFile string
}

type tlsConfig struct {
	CAFile             string
	ServerName         string
	InsecureSkipVerify bool
}

type kubernetesSD struct {
	Role       string
	Namespaces sdNamespaces
}

type sdNamespaces struct {
	Names []string
}

type relabel struct {
	SourceLabels []string
	Regex        string
	Action       string
	TargetLabel  string
	Replacement  string
}

// promLabel is how Prometheus service discovery spells a label name.
func promLabel(prefix, name string) string {
	return prefix + strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			return r
		}
		return '_'
	}, name)
}

// ScrapeConfigFile renders a Prometheus scrape_configs file equivalent to the
// ServiceMonitors, for Prometheus servers without the operator. It expects
// Prometheus to run in the cluster as one of the scrapers.
func ScrapeConfigFile(c *spec.Config) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Rendered by eksa-metrics for cluster %q. Add these jobs to prometheus.yml\n", c.ClusterName)
	b.WriteString("# (scrape_configs), or reference this file from a prometheus-operator\n# Prometheus as additionalScrapeConfigs. Prometheus must run in the cluster as\n# one of the scrapers: it authenticates with its own ServiceAccount token.\nscrape_configs:\n")
	for _, t := range targets(c) {
		for _, p := range t.comp.Paths {
			job := scrapeJob{
				JobName:             Prefix + "/" + string(t.comp.ID) + strings.ReplaceAll(strings.TrimPrefix(p, "/metrics"), "/", "-"),
				Scheme:              t.scheme,
				MetricsPath:         p,
				KubernetesSDConfigs: []kubernetesSD{{Role: "endpoints", Namespaces: sdNamespaces{Names: []string{t.serviceNS}}}},
			}
			if t.scheme == "https" { // never a token over plain HTTP
				job.Authorization = &authorization{CredentialsFile: saTokenFile}
				job.TLSConfig = &tlsConfig{CAFile: saCAFile, ServerName: t.serverName}
				if t.insecure != "" {
					job.TLSConfig = &tlsConfig{InsecureSkipVerify: true}
					job.comment = "insecure_skip_verify: " + t.insecure
				}
			}
			var src []string
			var regex []string
			keys := make([]string, 0, len(t.selector))
			for k := range t.selector {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				src = append(src, promLabel("__meta_kubernetes_service_label_", k))
				regex = append(regex, t.selector[k])
			}
			src = append(src, "__meta_kubernetes_endpoint_port_name")
			regex = append(regex, t.port)
			job.RelabelConfigs = []relabel{
				{SourceLabels: src, Regex: strings.Join(regex, ";"), Action: "keep"},
				{SourceLabels: []string{"__meta_kubernetes_endpoint_node_name"}, TargetLabel: "node"},
			}
			if t.comp.ID == components.KubeAPIServer {
				job.RelabelConfigs = job.RelabelConfigs[:1]
			}
			writeJob(&b, job)
		}
	}
	if c.ExternalEtcdScrape {
		b.WriteString(`# External etcd (etcdadm) is not changed by eksa-metrics: it serves /metrics on
# https://<etcd machine IP>:2379 and requires a client certificate signed by the
# etcd CA. Mount one into Prometheus and list the etcd machines, for example:
# - job_name: eksa-metrics/etcd-external
#   scheme: https
#   tls_config:
#     ca_file: /etc/prometheus/secrets/etcd-client/ca.crt
#     cert_file: /etc/prometheus/secrets/etcd-client/tls.crt
#     key_file: /etc/prometheus/secrets/etcd-client/tls.key
#   static_configs:
#   - targets: ["<etcd-1 IP>:2379", "<etcd-2 IP>:2379", "<etcd-3 IP>:2379"]
`)
	}
	return b.String()
}

// writeJob writes one job. The shape is fixed, so it is written directly
// (a YAML encoder was half of the render time); every value is a plain
// scalar or quoted by yamlScalar.
func writeJob(b *strings.Builder, job scrapeJob) {
	if job.comment != "" {
		fmt.Fprintf(b, "# %s\n", job.comment)
	}
	fmt.Fprintf(b, "- job_name: %s\n  scheme: %s\n  metrics_path: %s\n", yamlScalar(job.JobName), yamlScalar(job.Scheme), yamlScalar(job.MetricsPath))
	if job.Authorization != nil {
		fmt.Fprintf(b, "  authorization:\n    credentials_file: %s\n", yamlScalar(job.Authorization.CredentialsFile))
	}
	if t := job.TLSConfig; t != nil {
		b.WriteString("  tls_config:\n")
		if t.CAFile != "" {
			fmt.Fprintf(b, "    ca_file: %s\n", yamlScalar(t.CAFile))
		}
		if t.ServerName != "" {
			fmt.Fprintf(b, "    server_name: %s\n", yamlScalar(t.ServerName))
		}
		if t.InsecureSkipVerify {
			b.WriteString("    insecure_skip_verify: true\n")
		}
	}
	b.WriteString("  kubernetes_sd_configs:\n")
	for _, sd := range job.KubernetesSDConfigs {
		fmt.Fprintf(b, "    - role: %s\n      namespaces:\n        names:\n", yamlScalar(sd.Role))
		for _, n := range sd.Namespaces.Names {
			fmt.Fprintf(b, "          - %s\n", yamlScalar(n))
		}
	}
	b.WriteString("  relabel_configs:\n")
	for _, r := range job.RelabelConfigs {
		prefix := "    - "
		field := func(k, v string) {
			if v != "" {
				fmt.Fprintf(b, "%s%s: %s\n", prefix, k, v)
				prefix = "      "
			}
		}
		if len(r.SourceLabels) > 0 {
			q := make([]string, len(r.SourceLabels))
			for i, l := range r.SourceLabels {
				q[i] = yamlScalar(l)
			}
			field("source_labels", "["+strings.Join(q, ", ")+"]")
		}
		for _, kv := range [][2]string{{"regex", r.Regex}, {"action", r.Action}, {"target_label", r.TargetLabel}, {"replacement", r.Replacement}} {
			if kv[1] != "" {
				field(kv[0], yamlScalar(kv[1]))
			}
		}
	}
}

// plainScalar matches strings YAML reads back as the same string unquoted.
var plainScalar = regexp.MustCompile(`^[A-Za-z_/][A-Za-z0-9_./;:-]*$`)

// yamlScalar writes s plain when YAML reads it back as that string, else
// double-quoted.
func yamlScalar(s string) string {
	switch strings.ToLower(s) {
	case "true", "false", "yes", "no", "on", "off", "null", "~", "y", "n":
		return strconv.Quote(s)
	}
	if plainScalar.MatchString(s) && !strings.Contains(s, ": ") && !strings.HasSuffix(s, ":") {
		return s
	}
	return strconv.Quote(s)
}

// ScrapeConfigObject wraps the scrape file in a ConfigMap in the monitoring
// namespace, so that it is applied with everything else.
func ScrapeConfigObject(c *spec.Config) []Object {
	if !c.PrometheusConfig {
		return nil
	}
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: ScrapeConfigMap, Namespace: c.MonitoringNamespace, Labels: labels(nil)},
		Data:       map[string]string{ScrapeFileKey: ScrapeConfigFile(c)},
	}
	return []Object{toObject("v1", "ConfigMap", cm)}
}
