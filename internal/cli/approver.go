package cli

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/eksa-metrics/eksa-metrics/pkg/engine"
	"github.com/eksa-metrics/eksa-metrics/pkg/kubeletcsr"
	"github.com/eksa-metrics/eksa-metrics/pkg/spec"
	"github.com/eksa-metrics/eksa-metrics/pkg/templates"
)

// NewCmdKubeletApprover is the approver of the kubelets' serving
// certificates that tls.kubeletServingCertificates runs in the cluster.
func NewCmdKubeletApprover(f *Factory) *cobra.Command {
	var kubeconfig, endpoint, domain, caCert, caKey, metricsAddr string
	var clusterName, machinesNS, machinesKubeconfig, machinesCM, metricsName string
	var resync, grace time.Duration
	var serviceCIDRs []string
	cmd := &cobra.Command{
		Use:   templates.KubeletApproverCommand,
		Short: "Approve the kubelets' serving-certificate requests that are theirs, deny the others, until stopped",
		Long: `Runs in the cluster as the Deployment ` + templates.KubeletApprover + ` that tls.kubeletServingCertificates
renders. A kubelet with serverTLSBootstrap: true files a kubernetes.io/kubelet-serving
CertificateSigningRequest. With --ca-cert-file and --ca-key-file (what the Deployment passes: the
Secret ` + templates.KubeletServingCA + `) this command signs the requests it approves with that CA, which
only the kubelet scrapes trust, and kube-controller-manager signs none of them (the rendered
KubeadmControlPlane takes the signer from it); without them kube-controller-manager signs approved
requests with the cluster CA. This command approves a request only when the node itself filed it
(system:node:<name>), its subject is that node, it asks for server auth only, every name and
address in it is the node's name or one its Cluster API Machine lists (the Machine whose
status.nodeRef names the Node; status.addresses, which the infrastructure provider writes: a Node's
own status is never read) and no older Machine lists it, and none is a name that is never
approved: a wildcard, kubernetes or kubernetes.*, a name with a svc label or under the
cluster domain, localhost, a loopback, link-local or multicast address, an address in a Service
range (--service-cidr) or of the kubernetes Service, the control-plane endpoint
(--control-plane-endpoint); nor a request larger than a kubelet's or naming more names than a
kubelet asks for. It denies the others, and leaves pending those whose Node does not exist yet
and, for --no-machine-grace from their creation, those whose Machine does not list what they ask
for (or whose node has no Machine), then denies them. The Machines are read either in the cluster
itself (--cluster-name: the Machines labelled cluster.x-k8s.io/cluster-name=<name> in
--machines-namespace, a self-managed cluster's own; --machines-kubeconfig reads them elsewhere)
or from the ConfigMap the controller publishes them in for a workload cluster
(--machines-configmap ` + templates.SystemNS + `/` + templates.KubeletMachines + `). Each decision is a log line (values quoted), an event on the request and a count in
eksa_metrics_kubelet_serving_decisions_total, served with the requests waiting and whether approvals
are held on --metrics-bind-address (HTTPS with a certificate the --ca-cert-file CA issues for
--metrics-server-name; a bearer token the cluster authenticates and authorizes for get on /metrics,
as controller-runtime's secure metrics server checks it). In a pod it uses its
ServiceAccount; outside, --kubeconfig.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) (err error) {
			if (caCert == "") != (caKey == "") {
				return usageErrorf("--ca-cert-file and --ca-key-file go together")
			}
			if (clusterName == "") == (machinesCM == "") {
				return usageErrorf("give where the Machines that vouch for the nodes are: --cluster-name (the cluster's own, in --machines-namespace) or --machines-configmap NAMESPACE/NAME (published by the controller), one of them")
			}
			cmNS, cmName, ok := strings.Cut(machinesCM, "/")
			if machinesCM != "" && (!ok || cmNS == "" || cmName == "") {
				return usageErrorf("--machines-configmap %q: want NAMESPACE/NAME", machinesCM)
			}
			if machinesCM != "" && machinesKubeconfig != "" {
				return usageErrorf("--machines-kubeconfig goes with --cluster-name: the ConfigMap is in the cluster itself")
			}
			policy := kubeletcsr.Policy{ClusterDomain: domain, ControlPlaneEndpoint: endpoint}
			for _, b := range serviceCIDRs {
				_, n, err := net.ParseCIDR(b)
				if err != nil {
					return usageErrorf("--service-cidr %q: %v", b, err)
				}
				policy.ServiceCIDRs = append(policy.ServiceCIDRs, n)
			}
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
			policy.ServiceIPs = kubeletcsr.KubernetesServiceIPs(ctx, client)
			if len(policy.ServiceIPs) == 0 && len(policy.ServiceCIDRs) == 0 {
				fmt.Fprintln(f.IOStreams.ErrOut, "warning: no --service-cidr and the kubernetes Service could not be read: only loopback, link-local and the names are refused as Service addresses")
			}
			var machines kubeletcsr.MachineSource = &kubeletcsr.PublishedMachines{Client: client, Namespace: cmNS, Name: cmName, Key: templates.KubeletMachinesKey}
			if clusterName != "" {
				mcfg := cfg
				if machinesKubeconfig != "" {
					mc, err := engine.ConnectManagement(ctx, engine.ClusterSource{Kubeconfig: machinesKubeconfig})
					if err != nil {
						return err
					}
					mcfg = mc.RESTConfig()
					mcfg.Timeout = 0
				}
				mclient, err := kubernetes.NewForConfig(mcfg)
				if err != nil {
					return fmt.Errorf("a client for the Machines' cluster: %w", err)
				}
				gvr, err := kubeletcsr.MachineResource(mclient.Discovery())
				if err != nil {
					return err
				}
				dyn, err := dynamic.NewForConfig(mcfg)
				if err != nil {
					return fmt.Errorf("a client for the Machines' cluster: %w", err)
				}
				machines = &kubeletcsr.ClusterMachines{Client: dyn, Resource: gvr, Namespace: machinesNS, Cluster: clusterName}
			}
			recorder, stopEvents := kubeletcsr.NewEvents(client)
			defer stopEvents()
			a := &kubeletcsr.Approver{Client: client, Policy: policy, Machines: machines, Grace: grace, Log: f.IOStreams.ErrOut, Events: recorder}
			if caCert != "" {
				a.CA = &kubeletcsr.CAFiles{Cert: caCert, Key: caKey}
				if _, err := a.CA.Load(); err != nil {
					return err
				}
			}
			if metricsAddr != "0" {
				if a.Metrics, err = kubeletcsr.NewMetrics(ctrlmetrics.Registry); err != nil {
					return err
				}
				var serving *kubeletcsr.Serving
				if a.CA != nil {
					serving = &kubeletcsr.Serving{CA: a.CA, Name: metricsName}
				}
				serve, merr := approverMetrics(cfg, metricsAddr, serving)
				if merr != nil {
					return merr
				}
				// An endpoint that stops serving stops the approver: the pod
				// restarts, rather than approving unseen.
				var cancel context.CancelCauseFunc
				ctx, cancel = context.WithCancelCause(ctx)
				done := make(chan struct{})
				go func() {
					defer close(done)
					if err := serve(ctx); err != nil {
						cancel(fmt.Errorf("the metrics endpoint %s: %w", metricsAddr, err))
					}
				}()
				defer func() { cancel(nil); <-done }()
				defer func() {
					if cause := context.Cause(ctx); err == nil && cause != nil && !errors.Is(cause, context.Canceled) {
						err = cause
					}
				}()
			}
			return a.Run(ctx, resync)
		},
	}
	cmd.Flags().StringArrayVar(&serviceCIDRs, "service-cidr", nil, "a Service range of the cluster, whose addresses are never approved (repeat for each)")
	cmd.Flags().StringVar(&endpoint, "control-plane-endpoint", "", "the host (name or address) of the cluster's control-plane endpoint, never approved")
	cmd.Flags().StringVar(&domain, "cluster-domain", "cluster.local", "the cluster's DNS domain, under which no name is approved")
	cmd.Flags().StringVar(&caCert, "ca-cert-file", "", "PEM certificate of the CA that signs the approved requests (read at each signature)")
	cmd.Flags().StringVar(&caKey, "ca-key-file", "", "PEM private key of that CA")
	cmd.Flags().StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig of the cluster (default: in-cluster, then $KUBECONFIG)")
	cmd.Flags().StringVar(&clusterName, "cluster-name", "", "the Cluster API Cluster whose Machines vouch for the nodes (label "+spec.MachineClusterLabel+")")
	cmd.Flags().StringVar(&machinesNS, "machines-namespace", spec.MachinesNamespace, "the namespace of those Machines")
	cmd.Flags().StringVar(&machinesKubeconfig, "machines-kubeconfig", "", "kubeconfig of the cluster holding those Machines (default: the cluster itself)")
	cmd.Flags().StringVar(&machinesCM, "machines-configmap", "", "NAMESPACE/NAME of the ConfigMap the controller publishes the Machines in (instead of --cluster-name)")
	cmd.Flags().DurationVar(&grace, "no-machine-grace", kubeletcsr.NoMachineGrace, "how long a request its node's Machine does not vouch for waits before it is denied")
	cmd.Flags().StringVar(&metricsAddr, "metrics-bind-address", ":"+fmt.Sprint(templates.KubeletApproverMetricsPort), "address of the approver's metrics (HTTPS, authenticated and authorized); 0 turns them off")
	cmd.Flags().StringVar(&metricsName, "metrics-server-name", templates.KubeletApproverServingName, "the DNS name of the metrics endpoint's certificate, issued by the --ca-cert-file CA (without that CA the certificate is self-signed)")
	cmd.Flags().DurationVar(&resync, "resync", 30*time.Second, "how often the requests left waiting for their Node or Machine are looked at again")
	return cmd
}

// approverMetrics is the approver's metrics endpoint: controller-runtime's
// secure metrics server (each request's bearer token checked with a
// TokenReview and get on its path with a SubjectAccessReview), as the
// controller serves its own, with serving's certificate (without one,
// a self-signed certificate).
func approverMetrics(cfg *rest.Config, addr string, serving *kubeletcsr.Serving) (func(context.Context) error, error) {
	ctrl.SetLogger(zap.New(zap.WriteTo(io.Discard)))
	httpClient, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("a client for the metrics endpoint's reviews: %w", err)
	}
	opts := metricsserver.Options{BindAddress: addr, SecureServing: true, FilterProvider: filters.WithAuthenticationAndAuthorization}
	if serving != nil {
		opts.TLSOpts = []func(*tls.Config){func(c *tls.Config) { c.GetCertificate, c.MinVersion = serving.GetCertificate, tls.VersionTLS12 }}
	}
	srv, err := metricsserver.NewServer(opts, cfg, httpClient)
	if err != nil {
		return nil, fmt.Errorf("the metrics endpoint %s: %w", addr, err)
	}
	return srv.Start, nil
}
