package engine

import (
	"context"
	"errors"
	"io/fs"
	"net/http"
	"os"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/eksa-metrics/eksa-metrics/pkg/cluster"
	"github.com/eksa-metrics/eksa-metrics/pkg/spec"
)

// ClusterSource says how to reach the management cluster and, for a workload
// cluster, the workload cluster.
type ClusterSource struct {
	// Kubeconfig of the management cluster; empty: $KUBECONFIG, else
	// ~/.kube/config, as kubectl reads them.
	Kubeconfig string
	Context    string
	// WorkloadKubeconfig overrides the kubeconfig EKS-A keeps in the
	// management cluster (Secret eksa-system/<cluster>-kubeconfig).
	WorkloadKubeconfig string
	// TrustKubeconfigSecrets accepts, in the kubeconfig read from that
	// Secret, exec and auth-provider plugins, tokenFile and local file paths,
	// which are refused by default (cluster.CheckSecretKubeconfig): whoever
	// can write the Secret would run commands or use local credentials here.
	TrustKubeconfigSecrets bool
	// WrapTransport wraps every request to both clusters (request logs, tests).
	WrapTransport func(http.RoundTripper) http.RoundTripper
}

// Clusters are the two clusters of a render: the KubeadmControlPlane and the
// management components live in Management, the rest in Workload (the same
// cluster for a management cluster).
type Clusters struct {
	Management *cluster.Cluster
	Workload   *cluster.Cluster
}

// Connect reaches the management cluster and the workload cluster of the
// Cluster called name: the same one for a management cluster, else
// WorkloadKubeconfig, else the kubeconfig EKS-A keeps in the management
// cluster.
func Connect(ctx context.Context, src ClusterSource, name string, management bool) (*Clusters, error) {
	mgmt, err := ConnectManagement(ctx, src)
	if err != nil {
		return nil, err
	}
	switch {
	case src.WorkloadKubeconfig != "":
		workload, err := cluster.Connect(ctx, "workload", cluster.ConnectOptions{Kubeconfig: src.WorkloadKubeconfig, WrapTransport: src.WrapTransport})
		return &Clusters{mgmt, workload}, err
	case !management:
		workload, err := WorkloadOf(ctx, mgmt, name, src.WrapTransport, src.TrustKubeconfigSecrets)
		return &Clusters{mgmt, workload}, err
	}
	return &Clusters{mgmt, mgmt}, nil
}

// ConnectManagement reaches the management cluster: through
// src.Kubeconfig, else $KUBECONFIG, else ~/.kube/config, as kubectl reads
// them, and, in a pod with none of these (the controller), through the
// pod's ServiceAccount. A kubeconfig that cannot be used is a
// *cluster.KubeconfigInvalidError (nothing was sent), a cluster that does
// not answer a *cluster.UnreachableError.
func ConnectManagement(ctx context.Context, src ClusterSource) (*cluster.Cluster, error) {
	if src.Kubeconfig == "" && src.Context == "" && os.Getenv(clientcmd.RecommendedConfigPathEnvVar) == "" {
		if _, err := os.Stat(clientcmd.RecommendedHomeFile); errors.Is(err, fs.ErrNotExist) {
			if cfg, err := rest.InClusterConfig(); err == nil {
				const source = "the pod's ServiceAccount (in-cluster)"
				if src.WrapTransport != nil {
					cfg.Wrap(src.WrapTransport)
				}
				c, err := cluster.FromRESTConfig(ctx, "management", source, cfg)
				if err != nil {
					return nil, &cluster.UnreachableError{Role: "management", Kubeconfig: source, Server: cfg.Host, Err: err}
				}
				return c, nil
			}
		}
	}
	return cluster.Connect(ctx, "management", cluster.ConnectOptions{Kubeconfig: src.Kubeconfig, Context: src.Context, WrapTransport: src.WrapTransport})
}

// WorkloadOf reaches a workload cluster through the kubeconfig EKS-A keeps
// for it in its management cluster. Unless trust is set, a kubeconfig that
// asks for a credential plugin or a local file is refused with a
// *cluster.KubeconfigRefusedError.
func WorkloadOf(ctx context.Context, mgmt *cluster.Cluster, name string, wrap func(http.RoundTripper) http.RoundTripper, trust bool) (*cluster.Cluster, error) {
	data, err := mgmt.WorkloadKubeconfig(ctx, name)
	if err != nil {
		return nil, err
	}
	return ConnectWorkload(ctx, name, data, wrap, trust)
}

// ConnectWorkload reaches a workload cluster through data, the kubeconfig
// read from Secret eksa-system/<name>-kubeconfig (WorkloadOf; the
// controller, which keeps a connection while the Secret's content stays
// the same).
func ConnectWorkload(ctx context.Context, name string, data []byte, wrap func(http.RoundTripper) http.RoundTripper, trust bool) (*cluster.Cluster, error) {
	secret := spec.MachinesNamespace + "/" + spec.KubeconfigSecret(name)
	return cluster.Connect(ctx, "workload", cluster.ConnectOptions{Kubeconfig: "Secret " + secret + " on the management cluster", KubeconfigData: data, Secret: secret,
		TrustKubeconfigData: trust, WrapTransport: wrap, Timeout: 30 * time.Second})
}
