package cli

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlconfig "sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/eksa-metrics/eksa-metrics/config"
	metricsv1alpha1 "github.com/eksa-metrics/eksa-metrics/pkg/apis/metrics/v1alpha1"
	"github.com/eksa-metrics/eksa-metrics/pkg/cluster"
	"github.com/eksa-metrics/eksa-metrics/pkg/components"
	"github.com/eksa-metrics/eksa-metrics/pkg/controller"
)

// NewCmdController is `eksa-metrics controller`: run the controller, or
// print its installation manifests.
func NewCmdController(f *Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "controller",
		Short: "Run eksa-metrics as a controller in the management cluster, or print its manifests",
		Args:  noArgs,
	}
	cmd.AddCommand(newCmdControllerRun(f), newCmdControllerManifests(f))
	return cmd
}

// ControllerOptions are the flags of `controller run`.
type ControllerOptions struct {
	Kubeconfig      string
	MetricsAddress  string
	ProbeAddress    string
	LeaderElect     bool
	LeaderNamespace string
	Concurrency     int
	Workers         int
	// WrapTransport wraps every request to the management cluster (tests
	// count them).
	WrapTransport func(http.RoundTripper) http.RoundTripper
}

func newCmdControllerRun(f *Factory) *cobra.Command {
	o := &ControllerOptions{}
	cmd := &cobra.Command{
		Use:   "run",
		Short: "Reconcile every MetricsConfig of the management cluster until stopped",
		Long: `Runs the controller: it watches MetricsConfigs, EKS Anywhere Clusters, KubeadmControlPlanes,
the management Deployments it edits and the workload kubeconfig Secrets, and applies to every
selected Cluster what eksa-metrics apply would. In a pod it uses its ServiceAccount; outside,
--kubeconfig. Its own metrics are served over HTTPS to callers allowed to get /metrics.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			// SIGTERM (the kubelet stopping the pod) and SIGINT end the run
			// cleanly: the lease is released, so the next replica takes over
			// at once instead of after the lease duration.
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return o.Run(ctx, f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&o.Kubeconfig, "kubeconfig", "", "kubeconfig of the management cluster (default: in-cluster, then $KUBECONFIG)")
	fl.StringVar(&o.MetricsAddress, "metrics-bind-address", ":8443", "address of the controller's own metrics (HTTPS, authenticated and authorized); 0 turns them off")
	fl.StringVar(&o.ProbeAddress, "health-probe-bind-address", ":8081", "address of /healthz and /readyz")
	fl.BoolVar(&o.LeaderElect, "leader-elect", true, "elect a leader, so that only one replica reconciles")
	fl.StringVar(&o.LeaderNamespace, "leader-election-namespace", "", "namespace of the leader-election Lease (default: the pod's)")
	fl.IntVar(&o.Concurrency, "cluster-concurrency", 8, "Clusters of one MetricsConfig applied at once")
	fl.IntVar(&o.Workers, "workers", 2, "MetricsConfigs reconciled at once")
	return cmd
}

// Scheme holds the types the controller reads and writes.
func Scheme() *runtime.Scheme {
	s := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(s)
	_ = metricsv1alpha1.AddToScheme(s)
	return s
}

// Run runs the controller until ctx ends.
func (o *ControllerOptions) Run(ctx context.Context, f *Factory) error {
	cfg, err := restConfig(o.Kubeconfig)
	if err != nil {
		return err
	}
	cfg.Wrap(o.WrapTransport)
	ctrl.SetLogger(zap.New(zap.WriteTo(f.IOStreams.ErrOut)))
	// The cache holds only what the controller watches: Secrets of
	// eksa-system (the workload kubeconfigs), Deployments of the
	// management controllers' namespaces.
	deploymentNamespaces := map[string]cache.Config{}
	for _, m := range components.ManagementCatalog {
		deploymentNamespaces[m.Namespace] = cache.Config{}
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme: Scheme(),
		Cache: cache.Options{ByObject: map[client.Object]cache.ByObject{
			&corev1.Secret{}:     {Namespaces: map[string]cache.Config{"eksa-system": {}}},
			&appsv1.Deployment{}: {Namespaces: deploymentNamespaces},
		}},
		Metrics: metricsserver.Options{BindAddress: o.MetricsAddress, SecureServing: true,
			FilterProvider: filters.WithAuthenticationAndAuthorization},
		HealthProbeBindAddress:  o.ProbeAddress,
		LeaderElection:          o.LeaderElect,
		LeaderElectionID:        "eksa-metrics-controller",
		LeaderElectionNamespace: o.LeaderNamespace,
		// A stopped controller hands the lease over at once.
		LeaderElectionReleaseOnCancel: true,
		Controller:                    ctrlConfig(o.Workers),
	})
	if err != nil {
		return fmt.Errorf("starting the controller manager: %w", err)
	}
	mgmt, err := cluster.FromRESTConfig(ctx, "management", "the controller's identity", cfg)
	if err != nil {
		return err
	}
	r := &controller.Reconciler{Client: mgr.GetClient(), Management: mgmt, Concurrency: o.Concurrency,
		Recorder: mgr.GetEventRecorder("eksa-metrics-controller")}
	if err := r.SetupWithManager(mgr); err != nil {
		return err
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return err
	}
	if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
		return err
	}
	fmt.Fprintf(f.IOStreams.ErrOut, "eksa-metrics controller %s starting\n", Version)
	return mgr.Start(ctx)
}

func restConfig(kubeconfig string) (*rest.Config, error) {
	if kubeconfig != "" {
		return clientcmd.BuildConfigFromFlags("", kubeconfig)
	}
	return ctrl.GetConfig()
}

func ctrlConfig(workers int) ctrlconfig.Controller {
	// SkipNameValidation: a second manager in one process (a restart in the
	// tests) registers the same controller name again.
	return ctrlconfig.Controller{MaxConcurrentReconciles: workers, CacheSyncTimeout: 2 * time.Minute, SkipNameValidation: ptr.To(true)}
}

func newCmdControllerManifests(f *Factory) *cobra.Command {
	var image, namespace string
	cmd := &cobra.Command{
		Use:   "manifests",
		Short: "Print the controller's installation: CRD, namespace, RBAC and Deployment",
		Long: `Builds the kustomize base in config/ (embedded) with the image and namespace given, and prints
it as YAML for kubectl apply --server-side -f -, a Flux Kustomization, or a package.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			out, err := config.Build(image, namespace)
			if err != nil {
				return err
			}
			_, err = f.IOStreams.Out.Write(out)
			return err
		},
	}
	cmd.Flags().StringVar(&image, "image", config.DefaultImage, "the controller's image")
	cmd.Flags().StringVar(&namespace, "namespace", config.DefaultNamespace, "namespace of the controller")
	return cmd
}
