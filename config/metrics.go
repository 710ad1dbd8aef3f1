package config

import (
	"fmt"
	"maps"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/eksa-metrics/eksa-metrics/pkg/components"
	"github.com/eksa-metrics/eksa-metrics/pkg/templates"
)

// The controller's own metrics endpoint (`controller run
// --metrics-bind-address`, controller-runtime's secure metrics server):
// its Service, the certificate it serves (from cert-manager, which every
// EKS Anywhere management cluster runs), and the ServiceMonitor that
// scrapes it with that certificate verified.
const (
	// MetricsService is the Service of the controller's metrics (port https).
	MetricsService = ControllerName + "-metrics"
	// MetricsSecret holds the serving certificate cert-manager issues
	// (tls.crt, tls.key) and the CA that signs it (ca.crt).
	MetricsSecret = ControllerName + "-metrics-tls"
	// MetricsCertDir is where the metrics server reads tls.crt and tls.key
	// (controller-runtime's default CertDir under the image's /tmp; the
	// same rule as the management controllers, components.ControllerRuntimeCertDir).
	MetricsCertDir = components.ControllerRuntimeCertDir

	selfSignedIssuer = ControllerName + "-selfsigned"
	caName           = ControllerName + "-ca"
	// metricsCerts values.
	CertificatesCertManager = "cert-manager"
	CertificatesNone        = "none"
)

// MetricsServerName is the name the controller's serving certificate is
// for, and what a scraper verifies.
func MetricsServerName(namespace string) string { return MetricsService + "." + namespace + ".svc" }

// metricsCertificateObjects are the cert-manager objects of the serving
// certificate, in the controller's namespace: a self-signed Issuer that
// issues a CA, an Issuer of that CA, and the serving Certificate (the
// durations and keys of the proxies' certificates, pkg/templates
// certmanager.go). Namespaced Issuers: nobody who may create a Certificate
// elsewhere gets one signed by this CA.
func metricsCertificateObjects(o Options) []any {
	object := func(kind, name string, spec map[string]any) map[string]any {
		return map[string]any{"apiVersion": templates.CertManagerAPIVersion, "kind": kind, "spec": spec,
			"metadata": map[string]any{"name": name, "namespace": o.Namespace, "labels": map[string]any{"app.kubernetes.io/name": ControllerName}}}
	}
	key := func() map[string]any {
		return map[string]any{"algorithm": "ECDSA", "size": 256, "rotationPolicy": "Always"}
	}
	return []any{
		object("Issuer", selfSignedIssuer, map[string]any{"selfSigned": map[string]any{}}),
		object("Certificate", caName, map[string]any{"isCA": true, "commonName": caName + "." + o.Namespace, "secretName": caName,
			"duration": templates.CADuration, "privateKey": key(), "issuerRef": templates.IssuerRef(selfSignedIssuer)}),
		object("Issuer", caName, map[string]any{"ca": map[string]any{"secretName": caName}}),
		object("Certificate", MetricsService, map[string]any{"secretName": MetricsSecret,
			"dnsNames": []any{MetricsServerName(o.Namespace), MetricsServerName(o.Namespace) + ".cluster.local"},
			"duration": templates.ServingDuration, "renewBefore": templates.ServingRenewBefore, "usages": []any{"digital signature", "server auth"},
			"privateKey": key(), "issuerRef": templates.IssuerRef(caName)}),
	}
}

// metricsCertificatePatch mounts the serving certificate's Secret where the
// metrics server reads it (not optional: the pod waits for cert-manager
// rather than serve a self-signed certificate it would keep).
func metricsCertificatePatch() string {
	return fmt.Sprintf(`    - {op: add, path: /spec/template/spec/volumes, value: [{name: metrics-certificate, secret: {secretName: %s, defaultMode: 0444}}]}
    - {op: add, path: /spec/template/spec/containers/0/volumeMounts, value: [{name: metrics-certificate, mountPath: %s, readOnly: true}]}
`, MetricsSecret, MetricsCertDir)
}

// serviceMonitor scrapes the controller's metrics Service with the
// scraper's own token, verifying the certificate with the CA cert-manager
// puts in the serving Secret (a Secret of the ServiceMonitor's own
// namespace, as prometheus-operator requires). Without the certificate it
// skips verification, and says why.
func serviceMonitor(o Options) *monitoringv1.ServiceMonitor {
	labels := map[string]string{"app.kubernetes.io/name": ControllerName}
	maps.Copy(labels, o.ServiceMonitorLabels)
	tls := &monitoringv1.TLSConfig{}
	var annotations map[string]string
	if o.MetricsCertificates == CertificatesNone {
		tls.InsecureSkipVerify = ptr.To(true)
		annotations = map[string]string{templates.InsecureSkipVerifyAnnotation: "controller manifests --metrics-certificates none: the controller serves a self-signed certificate"}
	} else {
		tls.ServerName = ptr.To(MetricsServerName(o.Namespace))
		tls.CA = monitoringv1.SecretOrConfigMap{Secret: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: MetricsSecret}, Key: "ca.crt"}}
	}
	ep := monitoringv1.Endpoint{Port: "https", Scheme: ptr.To(monitoringv1.Scheme("https"))}
	ep.BearerTokenFile = "/var/run/secrets/kubernetes.io/serviceaccount/token"
	ep.TLSConfig = tls
	return &monitoringv1.ServiceMonitor{
		ObjectMeta: metav1.ObjectMeta{Name: ControllerName, Namespace: o.Namespace, Labels: labels, Annotations: annotations},
		Spec: monitoringv1.ServiceMonitorSpec{
			Selector:  metav1.LabelSelector{MatchLabels: map[string]string{"app.kubernetes.io/name": ControllerName}},
			Endpoints: []monitoringv1.Endpoint{ep},
		},
	}
}

// MetricsScrapeJob is the plain Prometheus job for the controller's
// metrics: a Prometheus in the management cluster, with its own token and
// the CA copied to caFile (docs/controller.md says how).
func MetricsScrapeJob(namespace, caFile string) string {
	return fmt.Sprintf(`- job_name: %s
  scheme: https
  authorization:
    credentials_file: /var/run/secrets/kubernetes.io/serviceaccount/token
  tls_config:
    ca_file: %s
    server_name: %s
  kubernetes_sd_configs:
    - role: endpointslice
      namespaces:
        names: [%s]
  relabel_configs:
    - source_labels: [__meta_kubernetes_service_name, __meta_kubernetes_endpointslice_port_name]
      regex: %s;https
      action: keep
`, ControllerName, caFile, MetricsServerName(namespace), namespace, MetricsService)
}

// metricsObjects are the objects the metrics options add.
func metricsObjects(o Options) []any {
	var out []any
	if o.MetricsCertificates != CertificatesNone {
		out = append(out, metricsCertificateObjects(o)...)
	}
	if o.ServiceMonitor {
		out = append(out, templates.ToObject(monitoringv1.SchemeGroupVersion.String(), monitoringv1.ServiceMonitorsKind, serviceMonitor(o)))
	}
	return out
}

// MetricsCertificatesValues are the values of --metrics-certificates.
var MetricsCertificatesValues = []string{CertificatesCertManager, CertificatesNone}
