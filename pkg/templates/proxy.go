package templates

import (
	"fmt"
	"slices"
	"strings"

	metricsv1alpha1 "github.com/eksa-metrics/eksa-metrics/pkg/apis/metrics/v1alpha1"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/eksa-metrics/eksa-metrics/pkg/components"
	"github.com/eksa-metrics/eksa-metrics/pkg/spec"
)

// NodeIPEnv is the environment variable that carries the node's address into
// the proxy containers (from status.hostIP); it appears in the rendered
// arguments and HAProxy configuration as $(NODE_IP) and ${NODE_IP}.
const NodeIPEnv = "NODE_IP"

const HAProxyCfgDir = "/usr/local/etc/haproxy"

// proxied are the enabled components proxy mode puts a proxy of a kind in
// front of (any kind when proxy is "").
func proxied(c *spec.Config, proxy components.Proxy) []components.Cluster {
	if c.Exposure != metricsv1alpha1.ExposureProxy {
		return nil
	}
	return components.Where(c, func(row components.Cluster) bool {
		return row.Proxy != components.NoProxy && (proxy == "" || row.Proxy == proxy)
	})
}

// needsProxy reports whether proxy mode renders any proxy.
func needsProxy(c *spec.Config) bool { return len(proxied(c, "")) > 0 }

// needsRBACProxy reports whether proxy mode runs a kube-rbac-proxy, the only
// proxy that talks to the API server (TokenReview, SubjectAccessReview).
func needsRBACProxy(c *spec.Config) bool { return len(proxied(c, components.KubeRBACProxy)) > 0 }

// proxyDaemonSet is the DaemonSet whose pods proxy a component: the
// control-plane one, or the one on every node.
func proxyDaemonSet(comp components.Cluster) string {
	if comp.Placement == components.EveryNode {
		return NodeDS
	}
	return ControlPlaneDS
}

// apiAccessVolume is the ServiceAccount token, cluster CA and namespace the
// kubelet would mount into every container; here it is mounted only into the
// containers that call the API server (the pods set
// automountServiceAccountToken: false).
const apiAccessVolume = "kube-api-access"

func apiAccess() corev1.Volume {
	return corev1.Volume{Name: apiAccessVolume, VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
		DefaultMode: ptr.To[int32](0o444),
		Sources: []corev1.VolumeProjection{
			{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: ptr.To[int64](3607)}},
			{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "kube-root-ca.crt"}, Items: []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}},
			{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{{Path: "namespace", FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.namespace"}}}}},
		},
	}}}
}

func apiAccessMount() corev1.VolumeMount {
	return corev1.VolumeMount{Name: apiAccessVolume, MountPath: "/var/run/secrets/kubernetes.io/serviceaccount", ReadOnly: true}
}

// HAProxyConfig is the configuration of HAProxy in front of the
// loopback-only secure ports of kube-controller-manager and kube-scheduler.
// With serving certificates (tls.certificates eksa-metrics or cert-manager)
// it terminates TLS and allows only GET of the paths the reader roles grant
// (haproxyTLS), then re-encrypts to loopback without verifying the
// component's self-signed certificate; with tls.certificates: none it is a
// TCP pass-through, TLS end to end. Either way the component itself still authenticates and
// authorizes every request that reaches it.
func HAProxyConfig(c *spec.Config) string {
	if c.ServingCertificates {
		return haproxyTLS(c)
	}
	var b strings.Builder
	b.WriteString(`# Rendered by eksa-metrics. TCP pass-through from the node address to the
# loopback-only secure ports (tls.certificates: none): HAProxy sees no request,
# so TLS, authentication, authorization and which paths are served stay with
# the component itself.
global
  log stdout format raw local0 notice
  maxconn 512

defaults
  mode tcp
  log global
  option dontlognull
  timeout connect 5s
  timeout client 60s
  timeout server 60s
`)
	for _, comp := range proxied(c, components.HAProxyPassThrough) {
		fmt.Fprintf(&b, "\nfrontend %s\n  bind \"${%s}:%d\"\n  default_backend %s\n", comp.ID, NodeIPEnv, comp.Port, comp.ID)
		fmt.Fprintf(&b, "\nbackend %s\n  server local 127.0.0.1:%d\n", comp.ID, comp.Port)
	}
	return b.String()
}

// HAProxy's TLS cipher lists, on the node address (bind) and towards the
// component (server): ECDHE key exchange with AES-GCM or ChaCha20-Poly1305
// under TLS 1.2 (no CBC, no SHA-1 MAC, no static RSA), and the three TLS 1.3
// suites. The serving certificates are ECDSA (eksa-metrics' CA and the
// cert-manager Certificates alike); the components' in-memory self-signed
// certificates are RSA.
const (
	HAProxyCiphers      = "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384:ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305"
	HAProxyCipherSuites = "TLS_AES_128_GCM_SHA256:TLS_AES_256_GCM_SHA384:TLS_CHACHA20_POLY1305_SHA256"
)

// HAProxyAllowPaths are the paths HAProxy forwards to a component: what the
// reader roles grant for it (ProxyAllowPaths, as for a kube-rbac-proxy). The
// proxies have no probes, and the static pods' probes reach the loopback
// port directly, so no health path is among them.
func HAProxyAllowPaths(c *spec.Config, comp components.Cluster) []string {
	return ProxyAllowPaths(c, comp)
}

// haproxyTLS: HAProxy terminates TLS on the node address with eksa-metrics'
// certificate (which Prometheus verifies), answers 403 itself to anything
// but a GET or HEAD of an allowed path (matched exactly, before any
// decoding, query string aside), and forwards the rest, its Authorization
// header untouched, over TLS to the loopback port, where the component still
// authenticates and authorizes the caller. The loopback hop cannot verify
// the component's in-memory self-signed certificate; it never leaves the
// node.
func haproxyTLS(c *spec.Config) string {
	minVer := map[string]string{metricsv1alpha1.TLS12: "TLSv1.2", metricsv1alpha1.TLS13: "TLSv1.3"}[c.TLSMinVersion]
	var b strings.Builder
	fmt.Fprintf(&b, `# Rendered by eksa-metrics. HAProxy terminates TLS on the node address with
# eksa-metrics' serving certificate (ciphers below; TLS 1.2 with ECDHE and
# AES-GCM or ChaCha20, or TLS 1.3), answers 403 itself to any request that is
# not a GET or HEAD of a path the reader roles grant (the allow-list in each
# frontend), and forwards the others, their Authorization header untouched,
# re-encrypted with TLS to the loopback-only secure port, where the component
# authenticates and authorizes the caller itself. That last hop does not
# verify the component's certificate (verify none: kubeadm leaves it
# self-signed) and never leaves the node: 127.0.0.1.
global
  log stdout format raw local0 notice
  maxconn 512
  ssl-default-bind-ciphers %[1]s
  ssl-default-bind-ciphersuites %[2]s
  ssl-default-bind-options ssl-min-ver %[3]s no-tls-tickets
  ssl-default-server-ciphers %[1]s
  ssl-default-server-ciphersuites %[2]s
  ssl-default-server-options ssl-min-ver TLSv1.2

defaults
  mode http
  log global
  option dontlognull
  timeout connect 5s
  timeout client 60s
  timeout server 60s
`, HAProxyCiphers, HAProxyCipherSuites, minVer)
	for _, comp := range proxied(c, components.HAProxyPassThrough) {
		fmt.Fprintf(&b, "\nfrontend %s\n  bind \"${%s}:%d\" ssl crt %s/%s alpn http/1.1\n", comp.ID, NodeIPEnv, comp.Port, ServingDir(comp.ID), haproxyCertFile)
		fmt.Fprintf(&b, "  http-request deny deny_status 403 unless METH_GET { path %s }\n", strings.Join(HAProxyAllowPaths(c, comp), " "))
		fmt.Fprintf(&b, "  default_backend %s\n", comp.ID)
		fmt.Fprintf(&b, "\nbackend %s\n  server local 127.0.0.1:%d ssl verify none sni str(localhost)\n", comp.ID, comp.Port)
	}
	return b.String()
}

// haproxyCertFile is the certificate file HAProxy loads; it finds the key
// next to it as haproxyCertFile + ".key".
const haproxyCertFile = "tls.crt"

// KubeRBACProxyArgs are the arguments of a kube-rbac-proxy in front of a
// plain-HTTP loopback endpoint: TLS on the node address, TokenReview and
// SubjectAccessReview on the request path, and only the allowed paths.
func KubeRBACProxyArgs(port int, allowPaths []string, tlsMinVersion string) []string {
	return []string{
		fmt.Sprintf("--secure-listen-address=$(%s):%d", NodeIPEnv, port),
		fmt.Sprintf("--upstream=http://127.0.0.1:%d/", port),
		"--allow-paths=" + strings.Join(allowPaths, ","),
		"--tls-min-version=" + tlsMinVersion,
	}
}

// ProxyAllowPaths are the paths a kube-rbac-proxy lets through for a component.
func ProxyAllowPaths(c *spec.Config, comp components.Cluster) []string {
	paths := append([]string{}, comp.Paths...)
	if comp.ZPages {
		paths = append(paths, ZPagePaths(c)...)
	}
	return paths
}

// Proxies renders the proxy DaemonSets, their ServiceAccount and the HAProxy
// ConfigMap (proxy mode only).
func Proxies(c *spec.Config) []Object {
	if !needsProxy(c) {
		return nil
	}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: ProxySA, Namespace: SystemNS, Labels: labels(nil)}}
	out := []Object{toObject("v1", "ServiceAccount", sa)}

	containers := map[string][]corev1.Container{}
	volumes := map[string][]corev1.Volume{}
	if passThrough := proxied(c, components.HAProxyPassThrough); len(passThrough) > 0 {
		cm := &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: ControlPlaneDS, Namespace: SystemNS, Labels: labels(nil)},
			Data:       map[string]string{HAProxyCfgKey: HAProxyConfig(c)},
		}
		out = append(out, toObject("v1", "ConfigMap", cm))
		var ports []corev1.ContainerPort
		for _, comp := range passThrough {
			ports = append(ports, corev1.ContainerPort{Name: comp.PortName, ContainerPort: int32(comp.Port), Protocol: corev1.ProtocolTCP})
		}
		ct := corev1.Container{
			Name:            "haproxy",
			Image:           c.Images.HAProxy,
			Command:         HAProxyCommand(),
			Env:             []corev1.EnvVar{nodeIPEnv()},
			Ports:           ports,
			VolumeMounts:    []corev1.VolumeMount{{Name: "haproxy-config", MountPath: HAProxyCfgDir, ReadOnly: true}},
			SecurityContext: hardened(99), // the haproxy image's own user
			Resources:       smallResources(),
		}
		volumes[ControlPlaneDS] = append(volumes[ControlPlaneDS], corev1.Volume{Name: "haproxy-config", VolumeSource: corev1.VolumeSource{
			ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: ControlPlaneDS}},
		}})
		if c.ServingCertificates {
			for _, comp := range passThrough {
				ct.VolumeMounts = append(ct.VolumeMounts, corev1.VolumeMount{Name: servingVolume(comp.ID), MountPath: ServingDir(comp.ID), ReadOnly: true})
				volumes[ControlPlaneDS] = append(volumes[ControlPlaneDS], corev1.Volume{Name: servingVolume(comp.ID), VolumeSource: corev1.VolumeSource{
					Secret: &corev1.SecretVolumeSource{SecretName: ServingSecret(comp.ID), DefaultMode: ptr.To[int32](0o440), Items: []corev1.KeyToPath{
						{Key: corev1.TLSCertKey, Path: haproxyCertFile}, {Key: corev1.TLSPrivateKeyKey, Path: haproxyCertFile + ".key"}}}}})
			}
		}
		containers[ControlPlaneDS] = append(containers[ControlPlaneDS], ct)
	}
	for _, comp := range proxied(c, components.KubeRBACProxy) {
		ds := proxyDaemonSet(comp)
		containers[ds] = append(containers[ds], rbacProxyContainer(c, comp))
		if !slices.ContainsFunc(volumes[ds], func(v corev1.Volume) bool { return v.Name == apiAccessVolume }) {
			volumes[ds] = append(volumes[ds], apiAccess())
		}
		if c.ServingCertificates {
			// Not optional: the pod waits for apply to create the Secret.
			volumes[ds] = append(volumes[ds], corev1.Volume{Name: servingVolume(comp.ID), VolumeSource: corev1.VolumeSource{
				Secret: &corev1.SecretVolumeSource{SecretName: ServingSecret(comp.ID), DefaultMode: ptr.To[int32](0o440)}}})
		}
	}
	if cs := containers[ControlPlaneDS]; len(cs) > 0 {
		ds := daemonSet(c, ControlPlaneDS, cs, volumes[ControlPlaneDS])
		// The label kubeadm puts on every control-plane node whatever the
		// spec says. EKS-A replaces kubeadm's default
		// taint with controlPlaneConfiguration.taints when they are set, and
		// nodes can be tainted later by hand: the proxies of the static pods
		// tolerate every taint, like kubeadm's kube-proxy, so that no taint
		// keeps a control-plane node's components from being scraped.
		ds.Spec.Template.Spec.NodeSelector = map[string]string{spec.ControlPlaneNodeLabel: ""}
		ds.Spec.Template.Spec.Tolerations = []corev1.Toleration{{Operator: corev1.TolerationOpExists}}
		out = append(out, toObject("apps/v1", "DaemonSet", ds))
	}
	if cs := containers[NodeDS]; len(cs) > 0 {
		ds := daemonSet(c, NodeDS, cs, volumes[NodeDS])
		ds.Spec.Template.Spec.Tolerations = []corev1.Toleration{{Operator: corev1.TolerationOpExists}} // every node, like kube-proxy
		out = append(out, toObject("apps/v1", "DaemonSet", ds))
	}
	return out
}

func rbacProxyContainer(c *spec.Config, comp components.Cluster) corev1.Container {
	ct := corev1.Container{
		Name:            "kube-rbac-proxy-" + string(comp.ID),
		Image:           c.Images.KubeRBACProxy,
		Args:            KubeRBACProxyArgs(comp.Port, ProxyAllowPaths(c, comp), c.TLSMinVersion),
		Env:             []corev1.EnvVar{nodeIPEnv()},
		Ports:           []corev1.ContainerPort{{Name: comp.PortName, ContainerPort: int32(comp.Port), Protocol: corev1.ProtocolTCP}},
		VolumeMounts:    []corev1.VolumeMount{apiAccessMount()},
		SecurityContext: hardened(65532),
		Resources:       smallResources(),
	}
	if c.ServingCertificates {
		// kube-rbac-proxy reads the files again when they change (every
		// minute), so a renewed certificate is served without a restart.
		dir := ServingDir(comp.ID)
		ct.Args = append(ct.Args, "--tls-cert-file="+dir+"/tls.crt", "--tls-private-key-file="+dir+"/tls.key")
		ct.VolumeMounts = append(ct.VolumeMounts, corev1.VolumeMount{Name: servingVolume(comp.ID), MountPath: dir, ReadOnly: true})
	}
	return ct
}

// ServingDir is where a proxy container finds its serving certificate.
func ServingDir(id components.ID) string { return ServingDirRoot + string(id) }

// ServingDirRoot is the directory below which every container eksa-metrics
// renders finds a serving certificate.
const ServingDirRoot = "/var/run/secrets/eksa-metrics/"

// HAProxyCommand is how the control-plane proxy runs HAProxy: in the
// foreground, with the rendered configuration only.
func HAProxyCommand() []string {
	return []string{"haproxy", "-W", "-db", "-f", HAProxyCfgDir + "/" + HAProxyCfgKey}
}

func servingVolume(id components.ID) string { return "serving-" + string(id) }

func daemonSet(c *spec.Config, name string, containers []corev1.Container, volumes []corev1.Volume) *appsv1.DaemonSet {
	sel := map[string]string{NameLabel: name}
	var fsGroup *int64
	if c.ServingCertificates && slices.ContainsFunc(volumes, func(v corev1.Volume) bool { return v.Secret != nil }) {
		// The serving keys are readable by the kube-rbac-proxy group only (0440).
		fsGroup = ptr.To[int64](65532)
	}
	return &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: SystemNS, Labels: labels(sel)},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: sel},
			UpdateStrategy: appsv1.DaemonSetUpdateStrategy{Type: appsv1.RollingUpdateDaemonSetStrategyType,
				RollingUpdate: &appsv1.RollingUpdateDaemonSet{MaxUnavailable: ptr.To(intOrStr(1))}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels(sel)},
				Spec: corev1.PodSpec{
					ServiceAccountName:           ProxySA,
					AutomountServiceAccountToken: ptr.To(false), // mounted only where used: apiAccess

					HostNetwork:       true,
					DNSPolicy:         corev1.DNSClusterFirstWithHostNet,
					PriorityClassName: "system-node-critical",
					SecurityContext: &corev1.PodSecurityContext{
						RunAsNonRoot:   ptr.To(true),
						FSGroup:        fsGroup,
						SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
					},
					Containers: containers,
					Volumes:    volumes,
				},
			},
		},
	}
}

func nodeIPEnv() corev1.EnvVar {
	return corev1.EnvVar{Name: NodeIPEnv, ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "status.hostIP"}}}
}

// hardened is the container security context of every proxy: non-root, no
// capabilities (all ports are above 1024), read-only root filesystem.
func hardened(uid int64) *corev1.SecurityContext {
	return &corev1.SecurityContext{
		RunAsUser:                ptr.To(uid),
		RunAsGroup:               ptr.To(uid),
		RunAsNonRoot:             ptr.To(true),
		AllowPrivilegeEscalation: ptr.To(false),
		ReadOnlyRootFilesystem:   ptr.To(true),
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
	}
}

func smallResources() corev1.ResourceRequirements {
	return corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("20Mi")},
		Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
	}
}
