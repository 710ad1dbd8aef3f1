package components

// Family is how a management controller serves metrics, and so what
// eksa-metrics does to make it secure.
type Family string

const (
	// Diagnostics: controller-runtime with Cluster API's secure diagnostics
	// flags (--diagnostics-address, --insecure-diagnostics, --tls-min-version).
	Diagnostics Family = "diagnostics"
	// Sidecar: plain HTTP on localhost and no secure mode: a kube-rbac-proxy
	// sidecar (TLS on 8443, TokenReview, SubjectAccessReview, /metrics only).
	Sidecar Family = "sidecar"
)

// Management is one controller of a management cluster.
type Management struct {
	Namespace      string
	Deployment     string
	Container      string
	ServiceAccount string
	Family         Family
	// Providers lists the datacenterRef kinds' providers that run it; empty
	// means every management cluster.
	Providers []string
	// Selector are the pod labels of the Deployment (from the shipped
	// manifests; Cluster API providers carry clusterctl's provider label).
	Selector map[string]string
	// ListenFlag moves a sidecar component's plain-HTTP listener to loopback;
	// UpstreamPort is that listener's port.
	ListenFlag   string
	UpstreamPort int
	// DropContainer is a container to remove (CAPX's kube-rbac-proxy, made
	// unnecessary by the secure diagnostics flags).
	DropContainer string
	// AuthDelegatorFromEKSA: from this EKS-A version on, the component's
	// ServiceAccount lacks create on tokenreviews and subjectaccessreviews.
	AuthDelegatorFromEKSA string
}

// ID is "namespace/deployment", as managementComponents.exclude spells it.
func (m Management) ID() string { return m.Namespace + "/" + m.Deployment }

// MetricsPort is where every management component serves metrics securely.
const MetricsPort = 8443

func provider(p string) map[string]string { return map[string]string{"cluster.x-k8s.io/provider": p} }

// ManagementCatalog lists the management controllers (EKS-A v0.26, CAPI
// v1.13), in rendering order.
var ManagementCatalog = []Management{
	{Namespace: "eksa-system", Deployment: "eksa-controller-manager", Container: "manager", ServiceAccount: "eksa-controller-manager", Family: Diagnostics,
		Selector: map[string]string{"control-plane": "eksa-controller-manager"}, AuthDelegatorFromEKSA: "v0.25.0"},
	{Namespace: "capi-system", Deployment: "capi-controller-manager", Container: "manager", ServiceAccount: "capi-manager", Family: Diagnostics, Selector: provider("cluster-api")},
	{Namespace: "capi-kubeadm-bootstrap-system", Deployment: "capi-kubeadm-bootstrap-controller-manager", Container: "manager", ServiceAccount: "capi-kubeadm-bootstrap-manager", Family: Diagnostics, Selector: provider("bootstrap-kubeadm")},
	{Namespace: "capi-kubeadm-control-plane-system", Deployment: "capi-kubeadm-control-plane-controller-manager", Container: "manager", ServiceAccount: "capi-kubeadm-control-plane-manager", Family: Diagnostics, Selector: provider("control-plane-kubeadm")},
	{Namespace: "capv-system", Deployment: "capv-controller-manager", Container: "manager", ServiceAccount: "capv-controller-manager", Family: Diagnostics, Providers: []string{"vsphere"}, Selector: provider("infrastructure-vsphere")},
	{Namespace: "capd-system", Deployment: "capd-controller-manager", Container: "manager", ServiceAccount: "capd-manager", Family: Diagnostics, Providers: []string{"docker"}, Selector: provider("infrastructure-docker")},
	{Namespace: "capc-system", Deployment: "capc-controller-manager", Container: "manager", ServiceAccount: "capc-controller-manager", Family: Diagnostics, Providers: []string{"cloudstack"}, Selector: provider("infrastructure-cloudstack")},
	{Namespace: "capx-system", Deployment: "capx-controller-manager", Container: "manager", ServiceAccount: "capx-controller-manager", Family: Diagnostics, Providers: []string{"nutanix"}, Selector: provider("infrastructure-nutanix"), DropContainer: "kube-rbac-proxy"},
	{Namespace: "etcdadm-bootstrap-provider-system", Deployment: "etcdadm-bootstrap-provider-controller-manager", Container: "manager", ServiceAccount: "etcdadm-bootstrap-provider-controller-manager", Family: Diagnostics, Selector: provider("bootstrap-etcdadm-bootstrap")},
	{Namespace: "etcdadm-controller-system", Deployment: "etcdadm-controller-controller-manager", Container: "manager", ServiceAccount: "etcdadm-controller-controller-manager", Family: Diagnostics, Selector: provider("control-plane-etcdadm-controller")},
	{Namespace: "capt-system", Deployment: "capt-controller-manager", Container: "manager", ServiceAccount: "capt-controller-manager", Family: Sidecar, Providers: []string{"tinkerbell"}, Selector: provider("infrastructure-tinkerbell"),
		ListenFlag: "--metrics-bind-addr", UpstreamPort: 8080},
	{Namespace: "eksa-packages", Deployment: "eks-anywhere-packages", Container: "controller", ServiceAccount: "eks-anywhere-packages", Family: Sidecar, Selector: map[string]string{"app.kubernetes.io/name": "eks-anywhere-packages"},
		ListenFlag: "--metrics-bind-address", UpstreamPort: 8080},
	{Namespace: "cert-manager", Deployment: "cert-manager", Container: "cert-manager-controller", ServiceAccount: "cert-manager", Family: Sidecar,
		Selector: map[string]string{"app.kubernetes.io/name": "cert-manager", "app.kubernetes.io/component": "controller"}, ListenFlag: "--metrics-listen-address", UpstreamPort: 9402},
	{Namespace: "cert-manager", Deployment: "cert-manager-cainjector", Container: "cert-manager-cainjector", ServiceAccount: "cert-manager-cainjector", Family: Sidecar,
		Selector: map[string]string{"app.kubernetes.io/name": "cainjector", "app.kubernetes.io/component": "cainjector"}, ListenFlag: "--metrics-listen-address", UpstreamPort: 9402},
	{Namespace: "cert-manager", Deployment: "cert-manager-webhook", Container: "cert-manager-webhook", ServiceAccount: "cert-manager-webhook", Family: Sidecar,
		Selector: map[string]string{"app.kubernetes.io/name": "webhook", "app.kubernetes.io/component": "webhook"}, ListenFlag: "--metrics-listen-address", UpstreamPort: 9402},
}
