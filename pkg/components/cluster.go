// Package components is the catalog of what eksa-metrics makes scrapeable, as
// data: one row per component with everything the renderers, verify and
// validate need to know of it. Nothing else in the code names a component's
// port, placement, proxy or kubeadm block.
package components

import "github.com/eksa-metrics/eksa-metrics/pkg/spec"

// ID names a cluster component.
type ID string

// The cluster components.
const (
	KubeAPIServer         ID = "kube-apiserver"
	KubeControllerManager ID = "kube-controller-manager"
	KubeScheduler         ID = "kube-scheduler"
	Etcd                  ID = "etcd"
	KubeProxy             ID = "kube-proxy"
	Kubelet               ID = "kubelet"
)

// Placement is where a component runs.
type Placement string

// The placements.
const (
	// APIServerEndpoint: reached through the API server's own address.
	APIServerEndpoint Placement = "api-server"
	// ControlPlaneNodes: one per control-plane node (static pods).
	ControlPlaneNodes Placement = "control-plane"
	// EveryNode: one per node.
	EveryNode Placement = "every-node"
)

// Proxy is what proxy mode puts in front of a loopback-only component.
type Proxy string

// The proxies.
const (
	// NoProxy: the component is reachable already.
	NoProxy Proxy = ""
	// HAProxyPassThrough: TCP pass-through to a component that serves TLS
	// and authenticates and authorizes itself.
	HAProxyPassThrough Proxy = "haproxy"
	// KubeRBACProxy: TLS, TokenReview and SubjectAccessReview in front of a
	// plain-HTTP endpoint.
	KubeRBACProxy Proxy = "kube-rbac-proxy"
)

// Cluster is one component of every cluster.
type Cluster struct {
	ID ID
	// Job is the job label the alert rules of kubernetes-mixin and etcd's
	// mixin select, as kube-prometheus-stack sets it (KubeAPIDown on
	// job="apiserver", etcd rules on job=~".*etcd.*", ...).
	Job string
	// PortName is the Service/container port name (at most 15 characters).
	PortName string
	Port     int
	// TLS is true when the component itself serves HTTPS.
	TLS bool
	// Loopback is true when kubeadm binds it to 127.0.0.1 only.
	Loopback bool
	// Paths are the metrics paths scraped.
	Paths []string
	// ZPages is true when the component serves /statusz and /flagz (1.33+).
	ZPages bool
	// PodLabels select the component's own pods (kubeadm's static pods, its
	// kube-proxy DaemonSet): what a Service selects in bindAddress mode.
	PodLabels map[string]string
	// Refused are paths the scraper must not be served (what its role does
	// not grant and the component guards: the kubelet's nodes/proxy, logs).
	Refused []string
	// SelfSigned explains why a scraper cannot verify the serving certificate.
	SelfSigned string
	Placement  Placement
	Proxy      Proxy
	// Kubeadm is the component's block in the KubeadmControlPlane's
	// clusterConfiguration ("" when kubeadm does not configure it there).
	Kubeadm string
	// On says whether the metrics section turns the component on.
	On func(*spec.Config) bool
}

// ClusterCatalog lists the cluster components in rendering order.
var ClusterCatalog = []Cluster{
	{ID: KubeAPIServer, Job: "apiserver", PortName: "https", Port: 6443, TLS: true, Paths: []string{"/metrics", "/metrics/slis"}, ZPages: true,
		Placement: APIServerEndpoint, Kubeadm: "apiServer", On: func(c *spec.Config) bool { return c.APIServer }},
	{ID: KubeControllerManager, Job: "kube-controller-manager", PortName: "kcm", Port: 10257, TLS: true, Loopback: true, Paths: []string{"/metrics", "/metrics/slis"}, ZPages: true, PodLabels: staticPod("kube-controller-manager"),
		SelfSigned: "kube-controller-manager serves an in-memory self-signed certificate for localhost/127.0.0.1 (kubeadm issues none)",
		Placement:  ControlPlaneNodes, Proxy: HAProxyPassThrough, Kubeadm: "controllerManager", On: func(c *spec.Config) bool { return c.ControllerManager }},
	{ID: KubeScheduler, Job: "kube-scheduler", PortName: "scheduler", Port: 10259, TLS: true, Loopback: true, Paths: []string{"/metrics", "/metrics/slis", "/metrics/resources"}, ZPages: true, PodLabels: staticPod("kube-scheduler"),
		SelfSigned: "kube-scheduler serves an in-memory self-signed certificate for localhost/127.0.0.1 (kubeadm issues none)",
		Placement:  ControlPlaneNodes, Proxy: HAProxyPassThrough, Kubeadm: "scheduler", On: func(c *spec.Config) bool { return c.Scheduler }},
	{ID: Etcd, Job: "kube-etcd", PortName: "etcd", Port: 2381, Loopback: true, Paths: []string{"/metrics"}, PodLabels: staticPod("etcd"),
		SelfSigned: "kube-rbac-proxy generates a self-signed serving certificate in front of etcd's plain-HTTP metrics",
		Placement:  ControlPlaneNodes, Proxy: KubeRBACProxy, Kubeadm: "etcd", On: func(c *spec.Config) bool { return c.Etcd }},
	{ID: KubeProxy, Job: "kube-proxy", PortName: "kube-proxy", Port: 10249, Loopback: true, Paths: []string{"/metrics", "/metrics/slis"}, ZPages: true, PodLabels: map[string]string{"k8s-app": "kube-proxy"},
		SelfSigned: "kube-rbac-proxy generates a self-signed serving certificate in front of kube-proxy's plain-HTTP metrics",
		Placement:  EveryNode, Proxy: KubeRBACProxy, On: func(c *spec.Config) bool { return c.KubeProxy }},
	{ID: Kubelet, Job: "kubelet", PortName: "https-metrics", Port: 10250, TLS: true, Paths: []string{"/metrics", "/metrics/cadvisor", "/metrics/probes", "/metrics/slis"}, ZPages: true,
		// nodes/proxy (pods, exec, run, pprof), nodes/log, nodes/spec: none of them is the scraper's.
		Refused:    []string{"/pods", "/runningpods/", "/exec/kube-system/pod/container", "/run/kube-system/pod/container", "/debug/pprof/", "/logs/", "/spec/"},
		SelfSigned: "kubelets self-sign their serving certificate unless serverTLSBootstrap is on",
		Placement:  EveryNode, On: func(c *spec.Config) bool { return c.Kubelet }},
}

// staticPod are the labels kubeadm gives a control-plane static pod.
func staticPod(component string) map[string]string {
	return map[string]string{"component": component, "tier": "control-plane"}
}

// Enabled returns the rows the configuration turns on, in catalog order.
// External etcd is not among them: only its scrape configuration is rendered
// (Config.ExternalEtcdScrape).
func Enabled(c *spec.Config) []Cluster {
	var out []Cluster
	for _, row := range ClusterCatalog {
		if row.On(c) {
			out = append(out, row)
		}
	}
	return out
}

// ServesZPages reports whether the component serves /statusz and /flagz on
// the cluster's version: from 1.36 by default; on 1.33 to 1.35 only where
// eksa-metrics renders the feature gates (the KubeadmControlPlane
// components). The kubelet's gates come from EKS-A's machine configuration
// and kube-proxy's from its ConfigMap, which eksa-metrics does not set.
func ServesZPages(c *spec.Config, row Cluster) bool {
	return row.ZPages && (c.KubeVersion.ZPagesByDefault() || row.Kubeadm != "" && c.KubeVersion.ZPageGatesNeeded())
}

// Where returns the enabled rows that satisfy keep.
func Where(c *spec.Config, keep func(Cluster) bool) []Cluster {
	var out []Cluster
	for _, row := range Enabled(c) {
		if keep(row) {
			out = append(out, row)
		}
	}
	return out
}
