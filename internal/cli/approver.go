package cli

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/kubernetes"

	"github.com/eksa-metrics/eksa-metrics/pkg/engine"
	"github.com/eksa-metrics/eksa-metrics/pkg/kubeletcsr"
	"github.com/eksa-metrics/eksa-metrics/pkg/templates"
)

// NewCmdKubeletApprover is the approver of the kubelets' serving
// certificates that tls.kubeletServingCertificates runs in the cluster.
func NewCmdKubeletApprover(f *Factory) *cobra.Command {
	var kubeconfig string
	var resync time.Duration
	cmd := &cobra.Command{
		Use:   templates.KubeletApproverCommand,
		Short: "Approve the kubelets' serving-certificate requests that are theirs, deny the others, until stopped",
		Long: `Runs in the cluster as the Deployment ` + templates.KubeletApprover + ` that tls.kubeletServingCertificates
renders. A kubelet with serverTLSBootstrap: true files a kubernetes.io/kubelet-serving
CertificateSigningRequest; kube-controller-manager signs it with the cluster CA once it is approved,
and approves none itself. This command approves a request only when the node itself filed it
(system:node:<name>), its subject is that node, it asks for server auth only, and every name and
address in it is one of that Node's; it denies the others, and leaves pending those whose Node does
not exist yet. In a pod it uses its ServiceAccount; outside, --kubeconfig.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			c, err := engine.ConnectManagement(ctx, engine.ClusterSource{Kubeconfig: kubeconfig})
			if err != nil {
				return err
			}
			cfg := c.RESTConfig()
			cfg.Timeout = 0 // its watch is a long one
			client, err := kubernetes.NewForConfig(cfg)
			if err != nil {
				return fmt.Errorf("a client for the cluster: %w", err)
			}
			return kubeletcsr.Run(ctx, client, resync, f.IOStreams.ErrOut)
		},
	}
	cmd.Flags().StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig of the cluster (default: in-cluster, then $KUBECONFIG)")
	cmd.Flags().DurationVar(&resync, "resync", 30*time.Second, "how often the requests left waiting for their Node are looked at again")
	return cmd
}
