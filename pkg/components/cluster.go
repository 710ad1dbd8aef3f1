// Package components is the catalog of what eksa-metrics makes scrapeable, as
// data: one row per component with its port, paths and how it serves them.
package components

// ID names a cluster component.
type ID string

const (
	KubeAPIServer         ID = "kube-apiserver"
	KubeControllerManager ID = "kube-controller-manager"
	KubeScheduler         ID = "kube-scheduler"
	Etcd                  ID = "etcd"
	KubeProxy             ID = "kube-proxy"
	Kubelet               ID = "kubelet"
)

// Cluster is one component of every cluster.
type Cluster struct {
	ID ID
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
	// StaticPod is the kubeadm static pod's "component" label, when it is one.
	StaticPod string
	// SelfSigned explains why a scraper cannot verify the serving certificate.
	SelfSigned string
	// Job is the job label the alert rules of kubernetes-mixin and etcd's
	// mixin select, as kube-prometheus-stack sets it (KubeAPIDown on
	// job="apiserver", etcd rules on job=~".*etcd.*", ...).
	Job string
}

// ClusterCatalog lists the cluster components in rendering order.
var ClusterCatalog = []Cluster{
	{ID: KubeAPIServer, Job: "apiserver", PortName: "https", Port: 6443, TLS: true, Paths: []string{"/metrics", "/metrics/slis"}, ZPages: true},
	{ID: KubeControllerManager, Job: "kube-controller-manager", PortName: "kcm", Port: 10257, TLS: true, Loopback: true, Paths: []string{"/metrics", "/metrics/slis"}, ZPages: true, StaticPod: "kube-controller-manager",
		SelfSigned: "kube-controller-manager serves an in-memory self-signed certificate for localhost/127.0.0.1 (kubeadm issues none)"},
	{ID: KubeScheduler, Job: "kube-scheduler", PortName: "scheduler", Port: 10259, TLS: true, Loopback: true, Paths: []string{"/metrics", "/metrics/slis", "/metrics/resources"}, ZPages: true, StaticPod: "kube-scheduler",
		SelfSigned: "kube-scheduler serves an in-memory self-signed certificate for localhost/127.0.0.1 (kubeadm issues none)"},
	{ID: Etcd, Job: "kube-etcd", PortName: "etcd", Port: 2381, Loopback: true, Paths: []string{"/metrics"}, StaticPod: "etcd",
		SelfSigned: "kube-rbac-proxy generates a self-signed serving certificate in front of etcd's plain-HTTP metrics"},
	{ID: KubeProxy, Job: "kube-proxy", PortName: "kube-proxy", Port: 10249, Loopback: true, Paths: []string{"/metrics", "/metrics/slis"}, ZPages: true,
		SelfSigned: "kube-rbac-proxy generates a self-signed serving certificate in front of kube-proxy's plain-HTTP metrics"},
	{ID: Kubelet, Job: "kubelet", PortName: "https-metrics", Port: 10250, TLS: true, Paths: []string{"/metrics", "/metrics/cadvisor", "/metrics/probes", "/metrics/slis"}, ZPages: true,
		SelfSigned: "kubelets self-sign their serving certificate unless serverTLSBootstrap is on"},
}

// Lookup returns the catalog row of id.
func Lookup(id ID) Cluster {
	for _, c := range ClusterCatalog {
		if c.ID == id {
			return c
		}
	}
	panic("components: unknown component " + string(id))
}
