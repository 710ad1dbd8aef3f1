package spec

// The parts of EKS Anywhere's documents that eksa-metrics reads. Everything
// else in the file is preserved untouched and never decoded.

import corev1 "k8s.io/api/core/v1"

// Cluster is the subset of anywhere.eks.amazonaws.com/v1alpha1 Cluster used here.
type Cluster struct {
	APIVersion string      `json:"apiVersion"`
	Kind       string      `json:"kind"`
	Metadata   ObjectMeta  `json:"metadata"`
	Spec       ClusterSpec `json:"spec"`
}

// ClusterSpec is the subset of Cluster.spec used here.
type ClusterSpec struct {
	KubernetesVersion             string                     `json:"kubernetesVersion"`
	EksaVersion                   string                     `json:"eksaVersion,omitempty"`
	ManagementCluster             ManagementCluster          `json:"managementCluster,omitempty"`
	ControlPlaneConfiguration     ControlPlaneConfiguration  `json:"controlPlaneConfiguration,omitempty"`
	WorkerNodeGroupConfigurations []WorkerNodeGroup          `json:"workerNodeGroupConfigurations,omitempty"`
	ExternalEtcdConfiguration     *ExternalEtcdConfiguration `json:"externalEtcdConfiguration,omitempty"`
	DatacenterRef                 Ref                        `json:"datacenterRef"`
	EtcdEncryption                []any                      `json:"etcdEncryption,omitempty"`
	RegistryMirrorConfiguration   *RegistryMirror            `json:"registryMirrorConfiguration,omitempty"`
	ClusterNetwork                ClusterNetwork             `json:"clusterNetwork,omitempty"`
}

// ClusterNetwork is the part of clusterNetwork read here: the Service
// ranges, whose addresses no kubelet certificate may name.
type ClusterNetwork struct {
	Services CIDRBlocks `json:"services,omitempty"`
}

// CIDRBlocks is EKS-A's {cidrBlocks: [...]}.
type CIDRBlocks struct {
	CIDRBlocks []string `json:"cidrBlocks,omitempty"`
}

// Endpoint is controlPlaneConfiguration.endpoint.
type Endpoint struct {
	Host string `json:"host,omitempty"`
}

// RegistryMirror is the part of registryMirrorConfiguration read here: nodes
// pull through it, so images must exist there.
type RegistryMirror struct {
	Endpoint string `json:"endpoint"`
}

// ObjectMeta is the part of an EKS-A document's metadata read here.
type ObjectMeta struct {
	Name        string            `json:"name"`
	Namespace   string            `json:"namespace,omitempty"`
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

// Ref is EKS-A's {kind, name} reference.
type Ref struct {
	Kind string `json:"kind"`
	Name string `json:"name"`
}

// ManagementCluster names the cluster that manages this one.
type ManagementCluster struct {
	Name string `json:"name"`
}

// ControlPlaneConfiguration is the subset of the control plane settings used here.
type ControlPlaneConfiguration struct {
	Count           int `json:"count,omitempty"`
	MachineGroupRef Ref `json:"machineGroupRef,omitempty"`
	// Endpoint is where clients reach the API server (the control-plane
	// VIP): no kubelet certificate may name it.
	Endpoint Endpoint `json:"endpoint,omitempty"`
	// APIServerExtraArgs are the user's kube-apiserver flags (EKS-A v0.20+,
	// behind API_SERVER_EXTRA_ARGS_ENABLED), which EKS-A renders into the
	// KubeadmControlPlane's apiServer.extraArgs. EKS-A has no such field for
	// the other components.
	APIServerExtraArgs map[string]string `json:"apiServerExtraArgs,omitempty"`
	// Taints replace kubeadm's default control-plane taint when set (even
	// empty); Labels are added to the nodes' own.
	Taints []corev1.Taint    `json:"taints,omitempty"`
	Labels map[string]string `json:"labels,omitempty"`
	// KubeletConfiguration is the group's KubeletConfiguration (EKS-A
	// v0.20+), read for serverTLSBootstrap (tls.kubeletServingCertificates).
	KubeletConfiguration map[string]any `json:"kubeletConfiguration,omitempty"`
}

// WorkerNodeGroup is the subset of a worker node group used here.
type WorkerNodeGroup struct {
	Name            string            `json:"name"`
	MachineGroupRef Ref               `json:"machineGroupRef,omitempty"`
	Taints          []corev1.Taint    `json:"taints,omitempty"`
	Labels          map[string]string `json:"labels,omitempty"`
	// KubeletConfiguration: as ControlPlaneConfiguration's.
	KubeletConfiguration map[string]any `json:"kubeletConfiguration,omitempty"`
}

// ExternalEtcdConfiguration marks an unstacked (etcdadm) etcd.
type ExternalEtcdConfiguration struct {
	Count           int `json:"count"`
	MachineGroupRef Ref `json:"machineGroupRef,omitempty"`
}

// MachineConfig is any provider's *MachineConfig; only osFamily is read.
type MachineConfig struct {
	APIVersion string            `json:"apiVersion"`
	Kind       string            `json:"kind"`
	Metadata   ObjectMeta        `json:"metadata"`
	Spec       MachineConfigSpec `json:"spec"`
}

// MachineConfigSpec is the subset of a MachineConfig's spec used here.
type MachineConfigSpec struct {
	OSFamily string `json:"osFamily,omitempty"`
}

// Provider is an EKS-A infrastructure provider, derived from datacenterRef.kind.
type Provider string

const (
	ProviderVSphere    Provider = "vsphere"
	ProviderDocker     Provider = "docker"
	ProviderTinkerbell Provider = "tinkerbell"
	ProviderNutanix    Provider = "nutanix"
	ProviderSnow       Provider = "snow"
	ProviderCloudStack Provider = "cloudstack"
)

// providerByDatacenterKind maps datacenterRef.kind to the provider.
var providerByDatacenterKind = map[string]Provider{
	"VSphereDatacenterConfig":    ProviderVSphere,
	"DockerDatacenterConfig":     ProviderDocker,
	"TinkerbellDatacenterConfig": ProviderTinkerbell,
	"NutanixDatacenterConfig":    ProviderNutanix,
	"SnowDatacenterConfig":       ProviderSnow,
	"CloudStackDatacenterConfig": ProviderCloudStack,
}

// OS families as EKS-A spells them.
const (
	OSUbuntu       = "ubuntu"
	OSRedHat       = "redhat"
	OSBottlerocket = "bottlerocket"
)

// SelfManaged says whether the Cluster is its own management cluster
// (managementCluster.name empty or its own name): a workload cluster's
// Cluster API objects are in its management cluster.
func (c *Cluster) SelfManaged() bool {
	return c.Spec.ManagementCluster.Name == "" || c.Spec.ManagementCluster.Name == c.Metadata.Name
}
