// Package templates renders the Kubernetes objects eksa-metrics needs: RBAC,
// the proxy DaemonSets and their configuration, Services and scrape
// configuration. Functions here are pure: configuration in, objects out.
package templates

import (
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"

	metricsv1alpha1 "github.com/eksa-metrics/eksa-metrics/pkg/apis/metrics/v1alpha1"
	"github.com/eksa-metrics/eksa-metrics/pkg/components"
	"github.com/eksa-metrics/eksa-metrics/pkg/spec"
)

// Names and labels shared by everything rendered.
const (
	Prefix         = "eksa-metrics"
	SystemNS       = "kube-system"
	ComponentLabel = "eksa-metrics/component"
	ManagedByLabel = "app.kubernetes.io/managed-by"
	// ClusterLabel names, on every object eksa-metrics creates, the EKS-A
	// Cluster it was rendered for: with ManagedByLabel, the inventory that
	// apply prunes.
	ClusterLabel = "metrics.anywhere.eks.amazonaws.com/cluster"
	NameLabel    = "app.kubernetes.io/name"
	// TargetClusterLabel is the target label that names, on every series
	// of a component eksa-metrics exposes, the EKS-A cluster it came from
	// (kubernetes-mixin's multi-cluster label): what tells one cluster's
	// targets from another's where a fleet's metrics meet (remote write,
	// federation, Thanos), and what the fleet dashboard groups by.
	TargetClusterLabel = "cluster"
	// AppliedAnnotation holds, on every object eksa-metrics applies, a
	// digest of what it applied: apply compares it to know that a field it
	// set before and no longer renders must go (the live object still holds
	// it).
	AppliedAnnotation = "metrics.anywhere.eks.amazonaws.com/applied"
	// InsecureSkipVerifyAnnotation explains, on a scrape object, why it does
	// not verify the target's certificate.
	InsecureSkipVerifyAnnotation = "eksa-metrics/insecure-skip-verify"

	ReaderRole      = Prefix + "-reader"
	ZPageReaderRole = Prefix + "-zpages-reader"
	ProxySA         = Prefix + "-proxy"
	ControlPlaneDS  = Prefix + "-control-plane-proxy"
	NodeDS          = Prefix + "-kube-proxy-proxy"
	ScrapeConfigMap = Prefix + "-scrape-configs"
	ScrapeFileKey   = "scrape-configs.yaml"
	HAProxyCfgKey   = "haproxy.cfg"

	// ServingCA is the Secret (kube-system) of the CA that signs the
	// proxies' serving certificates, and the ConfigMap (in the monitoring
	// namespace and each scraper's) that publishes its certificate under
	// CABundleKey. apply creates them (tls.certificates: eksa-metrics; with
	// cert-manager the ConfigMap holds the certificate of every namespace's
	// IssuerCA instead).
	ServingCA   = Prefix + "-serving-ca"
	CABundleKey = "ca.crt"
	// CertificateLabel marks the Secrets and ConfigMaps of the certificates
	// (with ManagedByLabel): apply writes only those that carry it.
	CertificateLabel = "eksa-metrics/certificate"
	// CABundleFile is where a Prometheus finds the CA bundle: the path at
	// which prometheus-operator mounts a ConfigMap listed in a Prometheus'
	// spec.configMaps; a Prometheus without the operator mounts it there too.
	CABundleFile = "/etc/prometheus/configmaps/" + ServingCA + "/" + CABundleKey

	// KubeletServingCA is the Secret (kube-system) of the CA that the
	// kubelet approver signs the kubelets' serving certificates with
	// (tls.kubeletServingCertificates); apply creates it. Its certificate
	// is published under KubeletCAKey in the ServingCA ConfigMaps, apart
	// from the serving CA bundle: the kubelet scrapes trust it alone, and
	// nothing else trusts it.
	KubeletServingCA = Prefix + "-kubelet-serving-ca"
	KubeletCAKey     = "kubelet-ca.crt"
	// KubeletCAFile is where a Prometheus finds it (see CABundleFile).
	KubeletCAFile = "/etc/prometheus/configmaps/" + ServingCA + "/" + KubeletCAKey

	// ScraperTokenSecret is the token Secret of the scraper's ServiceAccount
	// (type kubernetes.io/service-account-token: kube-controller-manager
	// writes the token) that the ServiceMonitors reference.
	ScraperTokenSecret = Prefix + "-scraper-token"
	// ClusterCAConfigMap is the cluster CA that kube-controller-manager
	// publishes in every namespace (root-ca-cert-publisher).
	ClusterCAConfigMap = "kube-root-ca.crt"

	saTokenFile = "/var/run/secrets/kubernetes.io/serviceaccount/token"
	saCAFile    = "/var/run/secrets/kubernetes.io/serviceaccount/ca.crt"
)

// Object is one rendered object, as plain maps (what YAML/JSON output and
// server-side apply take).
type Object = map[string]any

func labels(extra map[string]string) map[string]string {
	l := map[string]string{ManagedByLabel: Prefix}
	for k, v := range extra {
		l[k] = v
	}
	return l
}

// toObject converts a typed object to maps, dropping empty fields such as
// creationTimestamp: null and status: {}.
func toObject(apiVersion, kind string, obj any) Object {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		panic(fmt.Sprintf("templates: converting %s: %v", kind, err)) // a programming error
	}
	m["apiVersion"], m["kind"] = apiVersion, kind
	delete(m, "status") // never rendered: the cluster owns status
	prune(m)
	return m
}

// ToObject is toObject, for the objects the controller's installation adds
// (config).
func ToObject(apiVersion, kind string, obj any) Object { return toObject(apiVersion, kind, obj) }

// prune removes nil values and empty maps, recursively.
func prune(m map[string]any) {
	for k, v := range m {
		switch x := v.(type) {
		case nil:
			delete(m, k)
		case map[string]any:
			prune(x)
			if len(x) == 0 {
				delete(m, k)
			}
		case []any:
			for _, item := range x {
				if mm, ok := item.(map[string]any); ok {
					prune(mm)
				}
			}
		}
	}
}

// ZPagePaths returns /statusz and /flagz as enabled.
func ZPagePaths(c *spec.Config) []string {
	var out []string
	if c.Statusz {
		out = append(out, "/statusz")
	}
	if c.Flagz {
		out = append(out, "/flagz")
	}
	return out
}

func intOrStr(i int) intstr.IntOrString { return intstr.FromInt32(int32(i)) }

// ObjectName is "Kind namespace/name", or "Kind name" for a cluster-scoped
// object: how every message names an object.
func ObjectName(kind, namespace, name string) string {
	if namespace == "" {
		return kind + " " + name
	}
	return kind + " " + namespace + "/" + name
}

// Images lists the container images of an object's pod template.
func Images(obj Object) []string {
	var out []string
	for _, list := range []string{"containers", "initContainers"} {
		cs, _, _ := unstructured.NestedSlice(obj, "spec", "template", "spec", list)
		for _, c := range cs {
			if m, ok := c.(map[string]any); ok {
				if img, ok := m["image"].(string); ok {
					out = append(out, img)
				}
			}
		}
	}
	return out
}

// ServingSecret is the Secret (kube-system) holding a component's serving
// certificate and key (tls.crt, tls.key).
func ServingSecret(id components.ID) string { return Prefix + "-" + string(id) + "-serving" }

// ServingName is the one DNS name in a component's serving certificate: its
// metrics Service's name, the same on every node.
func ServingName(id components.ID) string {
	return Prefix + "-" + string(id) + "." + SystemNS + ".svc"
}

// ServedCertificates are the components whose proxy serves a certificate
// from eksa-metrics' CA: every proxy of proxy mode (kube-rbac-proxy in front
// of etcd and kube-proxy, HAProxy terminating TLS in front of
// kube-controller-manager and kube-scheduler).
func ServedCertificates(c *spec.Config) []components.Cluster {
	if !c.ServingCertificates {
		return nil
	}
	return proxied(c, "")
}

// ServesCertificate reports whether an enabled component's proxy serves a
// certificate from eksa-metrics' CA (one of ServedCertificates).
func ServesCertificate(c *spec.Config, comp components.Cluster) bool {
	return c.ServingCertificates && c.Exposure == metricsv1alpha1.ExposureProxy && comp.Proxy != components.NoProxy
}

// ServedManagement are the management controllers whose metrics endpoint
// serves a certificate from eksa-metrics' CA: eksa-metrics' own
// kube-rbac-proxy sidecar, a shipped kube-rbac-proxy given it by flag, or a
// controller-runtime metrics server that reads it from the directory the
// edit mounts it at (Release.CertDir). (Secure diagnostics whose directory
// is not confirmed make their own self-signed certificate.)
func ServedManagement(c *spec.Config) []components.Resolved {
	if !c.ServingCertificates {
		return nil
	}
	var out []components.Resolved
	for _, m := range ManagementComponents(c) {
		if ServesOurCertificate(c, m) {
			out = append(out, m)
		}
	}
	return out
}

// ServesOurCertificate reports whether a management controller's metrics
// endpoint serves a certificate from eksa-metrics' CA (one of
// ServedManagement): its sidecar's or shipped proxy's, or its own metrics
// server's from the mounted Secret.
func ServesOurCertificate(c *spec.Config, m components.Resolved) bool {
	return c.ServingCertificates && (m.Method == components.Sidecar || m.Method == components.ShippedProxy || m.Method == components.Shipped && m.CertDir != "")
}

// ServedSecret is one serving certificate's Secret: where it is, the one
// DNS name it names, and who reads it.
type ServedSecret struct {
	Namespace, Name, DNSName string
	// HAProxy reads it, only when it starts.
	HAProxy bool
	// Deployment is the management controller whose sidecar or metrics
	// server serves it ("" for a proxy of the workload cluster).
	Deployment string
}

// ServingSecrets are the Secrets of every serving certificate eksa-metrics'
// CA (or cert-manager) issues: one per proxy (ServedCertificates), one per
// management sidecar (ServedManagement).
func ServingSecrets(c *spec.Config) []ServedSecret {
	var out []ServedSecret
	for _, comp := range ServedCertificates(c) {
		out = append(out, ServedSecret{Namespace: SystemNS, Name: ServingSecret(comp.ID), DNSName: ServingName(comp.ID), HAProxy: comp.Proxy == components.HAProxyPassThrough})
	}
	for _, m := range ServedManagement(c) {
		out = append(out, ServedSecret{Namespace: m.Namespace, Name: ServingSecret(components.ID(m.Deployment)), DNSName: ManagementServingName(m), Deployment: m.Deployment})
	}
	return out
}

// ManagementServingName is the DNS name in a management controller's
// serving certificate: its metrics Service's name.
func ManagementServingName(m components.Resolved) string {
	return m.Deployment + "-metrics." + m.Namespace + ".svc"
}

// BundleNamespaces are where scrapers read the CA bundle: the namespace of
// the ServiceMonitors (prometheus-operator reads it there) and of every
// ServiceAccount scraper (a Prometheus mounts it from its own namespace).
func BundleNamespaces(cfg *spec.Config) []string {
	var out []string
	if cfg.ServiceMonitors {
		out = append(out, cfg.MonitoringNamespace)
	}
	for _, s := range cfg.Scrapers {
		if s.Kind == metricsv1alpha1.ScraperServiceAccount && !slices.Contains(out, s.Namespace) {
			out = append(out, s.Namespace)
		}
	}
	slices.Sort(out)
	return out
}

// CertificateObjects are the Secrets and ConfigMaps of the certificates a spec needs, as
// "Kind namespace/name": the serving certificates, the CA of
// tls.certificates: eksa-metrics, and the CA bundles.
func CertificateObjects(cfg *spec.Config, served []ServedSecret) map[string]bool {
	keep := map[string]bool{}
	if cfg.KubeletServingCertificates {
		keep[ObjectName("Secret", SystemNS, KubeletServingCA)] = true
		for _, ns := range BundleNamespaces(cfg) {
			keep[ObjectName("ConfigMap", ns, ServingCA)] = true
		}
	}
	if len(served) == 0 {
		return keep
	}
	for _, sv := range served {
		keep[ObjectName("Secret", sv.Namespace, sv.Name)] = true
	}
	if !cfg.CertManager {
		keep[ObjectName("Secret", SystemNS, ServingCA)] = true
	} else {
		for _, ns := range IssuerNamespaces(served) {
			keep[ObjectName("Secret", ns, IssuerCA)] = true
		}
	}
	for _, ns := range BundleNamespaces(cfg) {
		keep[ObjectName("ConfigMap", ns, ServingCA)] = true
	}
	return keep
}

// SecretNames are, by namespace, the names of every Secret a render may
// write in a management cluster whose scrape configuration goes to the
// monitoring namespaces: the serving certificates of the proxies (and
// their CAs) in kube-system, those of the management controllers (their
// Issuer's CA and the sidecar's token Secret) in the controllers'
// namespaces, and the scraper's token and the additionalScrapeConfigs in
// the monitoring namespaces. The controller reads and changes Secrets
// there by these names only (its Roles' resourceNames), so that it never
// reads a Secret it did not write: the admin kubeconfigs and CA keys of
// eksa-system, the bootstrap tokens of kube-system, the webhook keys of
// the providers. TestSecretNamesHoldEveryRender keeps the list whole.
func SecretNames(monitoring []string) map[string][]string {
	out := map[string][]string{}
	add := func(ns string, names ...string) { out[ns] = append(out[ns], names...) }
	for _, c := range components.ClusterCatalog {
		if c.Proxy != components.NoProxy {
			add(SystemNS, ServingSecret(c.ID))
		}
	}
	add(SystemNS, ServingCA, KubeletServingCA, IssuerCA)
	for _, m := range components.ManagementCatalog {
		add(m.Namespace, ServingSecret(components.ID(m.Deployment)), IssuerCA)
		if slices.ContainsFunc(m.Releases, func(r components.Release) bool { return r.Method == components.Sidecar }) {
			add(m.Namespace, SidecarTokenSecret)
		}
	}
	for _, ns := range monitoring {
		add(ns, ScraperTokenSecret, AdditionalScrapeConfigsSecret)
	}
	for ns, names := range out {
		slices.Sort(names)
		out[ns] = slices.Compact(names)
	}
	return out
}
