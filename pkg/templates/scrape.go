package templates

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"

	metricsv1alpha1 "github.com/eksa-metrics/eksa-metrics/pkg/apis/metrics/v1alpha1"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/eksa-metrics/eksa-metrics/pkg/components"
	"github.com/eksa-metrics/eksa-metrics/pkg/spec"
)

// JobLabel is the label of the Services eksa-metrics renders whose value is
// the Prometheus job: the ServiceMonitors name it as jobLabel, and the plain
// scrape file sets the same job, so both forms give the series the job the
// alert rules select (components.Cluster.Job).
const JobLabel = "eksa-metrics/job"

// target is how Prometheus reaches one component in this configuration.
type target struct {
	comp components.Cluster
	// job is the job label of the component's series.
	job string
	// service is the Service (namespace/name) whose endpoints are scraped.
	serviceNS, serviceName string
	// selector picks the Service: our own label, or the one that already exists.
	selector map[string]string
	// jobLabel is the Service label whose value is the job.
	jobLabel string
	port     string
	scheme   string
	// verify: the target's certificate chains to the cluster CA (or, with
	// ownCA, to eksa-metrics' serving CA) with this name.
	serverName string
	ownCA      bool
	// kubeletCA: the kubelet's certificate chains to the kubelet-serving CA
	// (tls.kubeletServingCertificates), trusted for these targets only.
	kubeletCA bool
	// insecure explains why the certificate cannot be verified ("" = verify).
	insecure string
	// mgmt marks a management component (its Service is rendered with it).
	mgmt bool
}

// targets lists the scrape targets of the enabled components, without those
// the chosen monitoring stack already scrapes itself.
func targets(c *spec.Config) []target {
	var out []target
	for _, comp := range components.Enabled(c) {
		if profileOf(c).scrapesItself(comp.ID) {
			continue
		}
		t := target{comp: comp, job: comp.Job, serviceNS: SystemNS, serviceName: Prefix + "-" + string(comp.ID), port: comp.PortName, scheme: "https", insecure: comp.SelfSigned, jobLabel: JobLabel}
		t.selector = map[string]string{ComponentLabel: string(comp.ID)}
		switch comp.ID {
		case components.KubeAPIServer:
			t.serviceNS, t.serviceName, t.serverName, t.insecure = "default", "kubernetes", "kubernetes", ""
			t.selector, t.jobLabel = map[string]string{"component": "apiserver", "provider": "kubernetes"}, "component"
		case components.Kubelet:
			// The Service prometheus-operator maintains (--kubelet-service=kube-system/kubelet);
			// plain Prometheus discovers the nodes instead.
			t.serviceName, t.selector, t.jobLabel = "kubelet", map[string]string{"k8s-app": "kubelet"}, "k8s-app"
			if c.KubeletServingCertificates {
				// Signed by the kubelet-serving CA for the node's own
				// addresses, which are the targets' (no server name).
				t.insecure, t.kubeletCA = "", true
			}
		case components.Etcd, components.KubeProxy:
			if c.Exposure == metricsv1alpha1.ExposureBindAddress {
				t.scheme, t.insecure = "http", ""
			}
		}
		if ServesCertificate(c, comp) {
			t.serverName, t.insecure, t.ownCA = ServingName(comp.ID), "", true
		}
		if job, ok := profileOf(c).Jobs[string(comp.ID)]; ok {
			t.job = job
		}
		out = append(out, t)
	}
	if c.KubeletServingCertificates {
		// The kubelet serving-certificate approver's own metrics, with the
		// certificate it issues itself with the kubelet-serving CA.
		comp := components.Cluster{ID: KubeletApproverComponent, PortName: "https", Port: KubeletApproverMetricsPort, TLS: true, Paths: []string{"/metrics"}}
		out = append(out, target{comp: comp, job: KubeletApproverComponent, serviceNS: SystemNS, serviceName: KubeletApprover, port: "https", scheme: "https",
			selector: map[string]string{ComponentLabel: KubeletApproverComponent}, jobLabel: JobLabel, kubeletCA: true, serverName: KubeletApproverServingName})
	}
	for _, m := range ManagementComponents(c) {
		comp := components.Cluster{ID: components.ID(m.Deployment), PortName: "https", Port: components.MetricsPort, TLS: true, Paths: []string{"/metrics"}}
		why := "controller-runtime serves a self-signed certificate on the secure diagnostics port"
		if m.Method != components.Shipped {
			why = "kube-rbac-proxy generates a self-signed serving certificate"
		}
		t := target{comp: comp, job: m.Deployment, serviceNS: m.Namespace, serviceName: m.Deployment + "-metrics", port: "https", scheme: "https",
			selector: map[string]string{ComponentLabel: m.Deployment}, jobLabel: JobLabel, insecure: why, mgmt: true}
		if ServesOurCertificate(c, m) {
			t.serverName, t.insecure, t.ownCA = ManagementServingName(m), "", true
		}
		out = append(out, t)
	}
	return out
}

// Services renders the headless Services that give Prometheus the endpoints
// of the loopback-only components: the proxy pods in proxy mode, the static
// pods and kube-proxy pods in bindAddress mode.
func Services(c *spec.Config) []Object {
	var out []Object
	for _, comp := range components.Enabled(c) {
		if comp.ID == components.KubeAPIServer || comp.ID == components.Kubelet {
			continue // their Services exist already
		}
		selector := comp.PodLabels // bindAddress: the component's own pods
		if c.Exposure == metricsv1alpha1.ExposureProxy {
			selector = map[string]string{NameLabel: proxyDaemonSet(comp)}
		}
		svc := &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: Prefix + "-" + string(comp.ID), Namespace: SystemNS, Labels: labels(map[string]string{ComponentLabel: string(comp.ID), JobLabel: comp.Job})},
			Spec: corev1.ServiceSpec{
				ClusterIP: corev1.ClusterIPNone,
				Selector:  selector,
				Ports:     []corev1.ServicePort{{Name: comp.PortName, Port: int32(comp.Port), TargetPort: intstr.FromInt32(int32(comp.Port)), Protocol: corev1.ProtocolTCP}},
			},
		}
		out = append(out, toObject("v1", "Service", svc))
	}
	return out
}

// relabel is one relabeling rule, in the words of both forms.
type relabel struct {
	SourceLabels []string
	Regex        string
	Action       string
	TargetLabel  string
	Replacement  string
}

func (r relabel) operator() monitoringv1.RelabelConfig {
	out := monitoringv1.RelabelConfig{Regex: r.Regex, Action: r.Action, TargetLabel: r.TargetLabel}
	for _, l := range r.SourceLabels {
		out.SourceLabels = append(out.SourceLabels, monitoringv1.LabelName(l))
	}
	if r.Replacement != "" {
		out.Replacement = ptr.To(r.Replacement)
	}
	return out
}

// highCardinality are the series kube-prometheus-stack drops at scrape time
// (its values.yaml, chart 88.5.3: kubeApiServer.serviceMonitor.metricRelabelings,
// kubelet.serviceMonitor.metricRelabelings and cAdvisorMetricRelabelings),
// per component and path.
var highCardinality = map[string][]relabel{
	"kube-apiserver /metrics": {{SourceLabels: []string{"__name__", "le"}, Action: "drop",
		Regex: `(etcd_request|apiserver_request_slo|apiserver_request_sli|apiserver_request)_duration_seconds_bucket;(0\.15|0\.2|0\.3|0\.35|0\.4|0\.45|0\.6|0\.7|0\.8|0\.9|1\.25|1\.5|1\.75|2|3|3\.5|4|4\.5|6|7|8|9|15|20|40|45|50)(\.0)?`}},
	"kubelet /metrics": {{SourceLabels: []string{"__name__", "le"}, Action: "drop",
		Regex: `(csi_operations|storage_operation_duration)_seconds_bucket;(0.25|2.5|15|25|120|600)(\.0)?`}},
	"kubelet /metrics/cadvisor": {
		{SourceLabels: []string{"__name__"}, Action: "drop", Regex: `container_cpu_(cfs_throttled_seconds_total|load_average_10s|system_seconds_total|user_seconds_total)`},
		{SourceLabels: []string{"__name__"}, Action: "drop", Regex: `container_fs_(io_current|io_time_seconds_total|io_time_weighted_seconds_total|reads_merged_total|sector_reads_total|sector_writes_total|writes_merged_total)`},
		{SourceLabels: []string{"__name__"}, Action: "drop", Regex: `container_memory_(mapped_file|swap)`},
		{SourceLabels: []string{"__name__"}, Action: "drop", Regex: `container_(file_descriptors|tasks_state|threads_max)`},
		{SourceLabels: []string{"__name__", "scope"}, Action: "drop", Regex: `container_memory_failures_total;hierarchy`},
		{SourceLabels: []string{"__name__", "interface"}, Action: "drop", Regex: `container_network_.*;(cali|cilium|cni|lxc|nodelocaldns|tunl).*`},
		{SourceLabels: []string{"__name__"}, Action: "drop", Regex: `container_spec.*`},
		{SourceLabels: []string{"id", "pod"}, Action: "drop", Regex: `.+;`},
	},
}

func drops(c *spec.Config, t target, path string) []relabel {
	if !c.DropHighCardinality {
		return nil
	}
	return highCardinality[string(t.comp.ID)+" "+path]
}

// metricsPathLabel copies the path into the metrics_path label, which the
// kubelet rules select (KubeletDown wants metrics_path="/metrics").
// clusterLabel sets TargetClusterLabel to the EKS-A cluster's name on the
// targets of the components eksa-metrics exposes. Not on the management
// controllers: their own series may carry a cluster label (the Cluster they
// reconcile), which a target label of that name would rename.
func clusterLabel(c *spec.Config, t target) (relabel, bool) {
	return relabel{TargetLabel: TargetClusterLabel, Replacement: c.ClusterName, Action: "replace"}, !t.mgmt && c.ClusterName != ""
}

var metricsPathLabel = relabel{SourceLabels: []string{"__metrics_path__"}, TargetLabel: "metrics_path", Action: "replace"}

// labelsPath: the target's series carry metrics_path. Every kubelet path
// does (its rules select it); another component's paths besides /metrics do
// too, or their up and scrape_* series would be the /metrics target's
// (same job and instance): two scrapes writing one series, which Prometheus
// drops as out of order and a collector merges into one.
func labelsPath(t target, path string) bool {
	return t.comp.ID == components.Kubelet || path != "/metrics"
}

// ServiceMonitors renders one prometheus-operator ServiceMonitor per target
// (ScraperToken renders the token Secret they reference).
func ServiceMonitors(c *spec.Config) []Object {
	if !c.ServiceMonitors {
		return nil
	}
	var out []Object
	for _, t := range targets(c) {
		kubelet := t.comp.ID == components.Kubelet
		var eps []monitoringv1.Endpoint
		for _, p := range t.comp.Paths {
			ep := monitoringv1.Endpoint{Port: t.port, Path: p, Scheme: ptr.To(monitoringv1.Scheme(t.scheme))}
			if t.scheme == "https" { // never a token over plain HTTP
				ep.Authorization, ep.BearerTokenFile, ep.TLSConfig = monitorCredentials(c, t)
			}
			if kubelet {
				// cAdvisor and the probes carry their own namespace and pod labels.
				ep.HonorLabels = true
				if p == "/metrics/cadvisor" {
					ep.TrackTimestampsStaleness = ptr.To(true)
				}
			}
			if labelsPath(t, p) {
				ep.RelabelConfigs = append(ep.RelabelConfigs, metricsPathLabel.operator())
			}
			if t.job != t.comp.Job && !t.mgmt { // the stack's own job names
				ep.RelabelConfigs = append(ep.RelabelConfigs, relabel{TargetLabel: "job", Replacement: t.job, Action: "replace"}.operator())
			}
			if l, ok := clusterLabel(c, t); ok {
				ep.RelabelConfigs = append(ep.RelabelConfigs, l.operator())
			}
			for _, d := range drops(c, t, p) {
				ep.MetricRelabelConfigs = append(ep.MetricRelabelConfigs, d.operator())
			}
			eps = append(eps, ep)
		}
		lbls := map[string]string{ComponentLabel: string(t.comp.ID)}
		for k, v := range profileOf(c).monitorLabels(c) {
			lbls[k] = v
		}
		meta := metav1.ObjectMeta{Name: Prefix + "-" + string(t.comp.ID), Namespace: c.MonitoringNamespace, Labels: labels(lbls)}
		if t.insecure != "" && t.scheme == "https" {
			meta.Annotations = map[string]string{InsecureSkipVerifyAnnotation: t.insecure}
		}
		sm := &monitoringv1.ServiceMonitor{
			ObjectMeta: meta,
			Spec: monitoringv1.ServiceMonitorSpec{
				JobLabel:  t.jobLabel,
				Endpoints: eps,
				// The classic buckets stay when the Prometheus scrapes
				// native histograms (always_scrape_classic_histograms).
				NativeHistogramConfig: monitoringv1.NativeHistogramConfig{ScrapeClassicHistograms: ptr.To(true)},
				Selector:              metav1.LabelSelector{MatchLabels: t.selector},
				NamespaceSelector:     monitoringv1.NamespaceSelector{MatchNames: []string{t.serviceNS}},
			},
		}
		out = append(out, toObject(monitoringv1.SchemeGroupVersion.String(), monitoringv1.ServiceMonitorsKind, sm))
	}
	return out
}

// monitorCredentials is how a ServiceMonitor endpoint authenticates and
// verifies: by reference (the scraper's token Secret, the CA ConfigMaps)
// unless scrapeConfig.credentials is file (the Prometheus pod's own files).
func monitorCredentials(c *spec.Config, t target) (*monitoringv1.SafeAuthorization, string, *monitoringv1.TLSConfig) {
	tls := &monitoringv1.TLSConfig{}
	switch {
	case t.insecure != "":
		tls.InsecureSkipVerify = ptr.To(true)
	case t.ownCA:
		// The CA bundle apply publishes in the monitor's namespace.
		tls.ServerName, tls.CA = ptr.To(t.serverName), configMapKey(ServingCA, CABundleKey)
	case t.kubeletCA:
		// The kubelet-serving CA, apart in the same ConfigMap (the kubelets'
		// certificates for their addresses, the approver's for its name).
		tls.ServerName, tls.CA = ptr.To(t.serverName), configMapKey(ServingCA, KubeletCAKey)
	case c.CredentialsFile:
		tls.ServerName, tls.CAFile = ptr.To(t.serverName), saCAFile
	default:
		tls.ServerName, tls.CA = ptr.To(t.serverName), configMapKey(ClusterCAConfigMap, "ca.crt")
	}
	if t.serverName == "" {
		tls.ServerName = nil // the target's own address
	}
	if c.CredentialsFile {
		if t.insecure != "" {
			tls.CAFile = saCAFile // as before the credentials were references
		}
		return nil, saTokenFile, tls
	}
	return &monitoringv1.SafeAuthorization{Type: "Bearer", Credentials: &corev1.SecretKeySelector{
		LocalObjectReference: corev1.LocalObjectReference{Name: ScraperTokenSecret}, Key: corev1.ServiceAccountTokenKey}}, "", tls
}

func configMapKey(name, key string) monitoringv1.SecretOrConfigMap {
	return monitoringv1.SecretOrConfigMap{ConfigMap: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: name}, Key: key}}
}

// ScraperToken asks kube-controller-manager for a token of the scraper's
// ServiceAccount in a Secret of the monitors' namespace, which
// prometheus-operator (and the other agents that read ServiceMonitors)
// read, when the ServiceMonitors reference it. The token carries the
// scraper's own permissions, no more; deleting the Secret revokes it, and
// the next apply asks for a new one.
func ScraperToken(c *spec.Config) []Object {
	if !c.ServiceMonitors || c.CredentialsFile || c.TokenServiceAccount == "" {
		return nil
	}
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: ScraperTokenSecret, Namespace: c.MonitoringNamespace, Labels: labels(nil),
			Annotations: map[string]string{corev1.ServiceAccountNameKey: c.TokenServiceAccount}},
		Type: corev1.SecretTypeServiceAccountToken,
	}
	return []Object{toObject("v1", "Secret", s)}
}

// scrapeJob is one job of a plain Prometheus scrape_configs list; writeJob
// writes it.
type scrapeJob struct {
	JobName              string
	Scheme               string
	MetricsPath          string
	HonorLabels          bool
	ClassicHistograms    bool
	Authorization        *authorization
	TLSConfig            *tlsConfig
	KubernetesSDConfigs  []kubernetesSD
	RelabelConfigs       []relabel
	MetricRelabelConfigs []relabel
	comment              string
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
	Namespaces []string
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

// scrapeJobs are the jobs of the plain scrape configuration: the same targets
// and job labels as the ServiceMonitors, discovered through EndpointSlices
// (the Endpoints API is deprecated from Kubernetes 1.33), and the kubelets
// through the Node objects (no operator maintains a kubelet Service here).
// Job names are unique per path; the job label is the component's.
func scrapeJobs(c *spec.Config) []scrapeJob {
	var out []scrapeJob
	for _, t := range targets(c) {
		kubelet := t.comp.ID == components.Kubelet
		for _, p := range t.comp.Paths {
			job := scrapeJob{
				JobName:     Prefix + "/" + t.job + strings.TrimPrefix(p, "/metrics"),
				Scheme:      t.scheme,
				MetricsPath: p,
				HonorLabels: kubelet,
				// Kubernetes 1.37 serves native histograms (KEP-5808); a
				// Prometheus that scrapes them natively keeps the _bucket
				// series the rules and dashboards read only with this.
				ClassicHistograms: !profileOf(c).TextOnly,
			}
			if t.scheme == "https" { // never a token over plain HTTP
				job.Authorization = &authorization{CredentialsFile: saTokenFile}
				job.TLSConfig = &tlsConfig{CAFile: saCAFile, ServerName: t.serverName}
				if t.ownCA {
					job.TLSConfig.CAFile = CABundleFile
				}
				if t.kubeletCA {
					job.TLSConfig.CAFile = KubeletCAFile
				}
				if t.insecure != "" {
					job.TLSConfig = &tlsConfig{CAFile: saCAFile, InsecureSkipVerify: true}
					job.comment = "insecure_skip_verify: " + t.insecure
				}
			}
			if kubelet {
				job.KubernetesSDConfigs = []kubernetesSD{{Role: "node"}}
				job.RelabelConfigs = []relabel{
					{SourceLabels: []string{"__meta_kubernetes_node_name"}, TargetLabel: "node", Action: "replace"},
				}
			} else {
				var src, regex []string
				for _, k := range slices.Sorted(maps.Keys(t.selector)) {
					src = append(src, promLabel("__meta_kubernetes_service_label_", k))
					regex = append(regex, t.selector[k])
				}
				src = append(src, "__meta_kubernetes_endpointslice_port_name")
				regex = append(regex, t.port)
				job.KubernetesSDConfigs = []kubernetesSD{{Role: "endpointslice", Namespaces: []string{t.serviceNS}}}
				job.RelabelConfigs = []relabel{{SourceLabels: src, Regex: strings.Join(regex, ";"), Action: "keep"}}
			}
			if labelsPath(t, p) {
				job.RelabelConfigs = append(job.RelabelConfigs, metricsPathLabel)
			}
			job.RelabelConfigs = append(job.RelabelConfigs, relabel{TargetLabel: "job", Replacement: t.job, Action: "replace"})
			if l, ok := clusterLabel(c, t); ok {
				job.RelabelConfigs = append(job.RelabelConfigs, l)
			}
			job.MetricRelabelConfigs = drops(c, t, p)
			out = append(out, job)
		}
	}
	return out
}

// ScrapeConfigFile renders the plain Prometheus scrape configuration, for
// Prometheus servers without the operator: a file with one top-level
// scrape_configs key, which prometheus.yml loads with scrape_config_files.
// Prometheus must run in the cluster as one of the scrapers: it
// authenticates with its own ServiceAccount token.
func ScrapeConfigFile(c *spec.Config) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Rendered by eksa-metrics for cluster %q. Load it from prometheus.yml with\n", c.ClusterName)
	b.WriteString("#   scrape_config_files: [/etc/prometheus/eksa-metrics/scrape-configs.yaml]\n# or copy the jobs into its scrape_configs. Prometheus must run in the cluster as\n# one of the scrapers: it authenticates with its own ServiceAccount token.\n# A prometheus-operator Prometheus takes the same jobs as a list: with\n# scrapeConfig.stack: prometheus, the Secret eksa-metrics-additional-scrape-configs\n# (key additional-scrape-configs.yaml) for its additionalScrapeConfigs.\nscrape_configs:\n")
	writeJobs(&b, c)
	return b.String()
}

// AdditionalScrapeConfigs renders the same jobs as a YAML list: what a
// prometheus-operator Prometheus reads from the Secret key named by
// spec.additionalScrapeConfigs.
func AdditionalScrapeConfigs(c *spec.Config) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Rendered by eksa-metrics for cluster %q: a list of scrape configs for a\n# prometheus-operator Prometheus (spec.additionalScrapeConfigs).\n", c.ClusterName)
	writeJobs(&b, c)
	return b.String()
}

func writeJobs(b *strings.Builder, c *spec.Config) {
	for _, job := range scrapeJobs(c) {
		writeJob(b, job, "", false)
	}
	if c.ExternalEtcdScrape {
		b.WriteString(`# External etcd (etcdadm) is not changed by eksa-metrics: it serves /metrics on
# https://<etcd machine IP>:2379 and requires a client certificate signed by the
# etcd CA. Mount one into Prometheus and list the etcd machines, for example:
# - job_name: eksa-metrics/kube-etcd-external
#   scheme: https
#   tls_config:
#     ca_file: /etc/prometheus/secrets/etcd-client/ca.crt
#     cert_file: /etc/prometheus/secrets/etcd-client/tls.crt
#     key_file: /etc/prometheus/secrets/etcd-client/tls.key
#   static_configs:
#   - targets: ["<etcd-1 IP>:2379", "<etcd-2 IP>:2379", "<etcd-3 IP>:2379"]
#   relabel_configs:
#   - target_label: job
#     replacement: kube-etcd
`)
	}
}

// writeJob writes one job as a list item (or, with asMap, as a map entry
// keyed by its name), each line prefixed by indent. The shape is fixed, so it
// is written directly (a YAML encoder was half of the render time); every
// value is a plain scalar or quoted by yamlScalar.
func writeJob(b *strings.Builder, job scrapeJob, indent string, asMap bool) {
	line := func(format string, args ...any) {
		b.WriteString(indent)
		fmt.Fprintf(b, format, args...)
		b.WriteByte('\n')
	}
	if job.comment != "" {
		line("# %s", job.comment)
	}
	if asMap {
		line("%s:", yamlScalar(job.JobName))
	} else {
		line("- job_name: %s", yamlScalar(job.JobName))
	}
	line("  scheme: %s", yamlScalar(job.Scheme))
	line("  metrics_path: %s", yamlScalar(job.MetricsPath))
	if job.HonorLabels {
		line("  honor_labels: true")
	}
	if job.ClassicHistograms {
		line("  always_scrape_classic_histograms: true")
	}
	if job.Authorization != nil {
		line("  authorization:")
		line("    credentials_file: %s", yamlScalar(job.Authorization.CredentialsFile))
	}
	if t := job.TLSConfig; t != nil {
		line("  tls_config:")
		if t.CAFile != "" {
			line("    ca_file: %s", yamlScalar(t.CAFile))
		}
		if t.ServerName != "" {
			line("    server_name: %s", yamlScalar(t.ServerName))
		}
		if t.InsecureSkipVerify {
			line("    insecure_skip_verify: true")
		}
	}
	line("  kubernetes_sd_configs:")
	for _, sd := range job.KubernetesSDConfigs {
		line("    - role: %s", yamlScalar(sd.Role))
		if len(sd.Namespaces) > 0 {
			line("      namespaces:")
			line("        names:")
			for _, n := range sd.Namespaces {
				line("          - %s", yamlScalar(n))
			}
		}
	}
	writeRelabels(line, "relabel_configs", job.RelabelConfigs)
	writeRelabels(line, "metric_relabel_configs", job.MetricRelabelConfigs)
}

func writeRelabels(line func(string, ...any), key string, rules []relabel) {
	if len(rules) == 0 {
		return
	}
	line("  %s:", key)
	for _, r := range rules {
		prefix := "    - "
		field := func(k, v string) {
			if v != "" {
				line("%s%s: %s", prefix, k, v)
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
		Data:       map[string]string{ScrapeFileKey: ScrapeConfigFile(c), RulesFileKey: RulesFile(c)},
	}
	return []Object{toObject("v1", "ConfigMap", cm)}
}
