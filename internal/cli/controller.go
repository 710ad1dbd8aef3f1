package cli

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
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
	"github.com/eksa-metrics/eksa-metrics/pkg/components"
	"github.com/eksa-metrics/eksa-metrics/pkg/controller"
	"github.com/eksa-metrics/eksa-metrics/pkg/engine"
	"github.com/eksa-metrics/eksa-metrics/pkg/spec"
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
	// Shard is the value of the shard label on the Clusters this replica
	// keeps (controller.ShardLabel); empty: those without it.
	Shard string
	// ImagePrefixes are the --allowed-image-prefix values.
	ImagePrefixes []string
	// WithoutAdmissionPolicy runs without the admission policy (a
	// management cluster below 1.30, which serves none): its writes are
	// then held by its RBAC only.
	WithoutAdmissionPolicy bool
	// PolicyRecheck is how often the admission policy is checked again
	// (default a minute).
	PolicyRecheck time.Duration
	// ScraperRecheck is how often a scraper ServiceAccount's rights are
	// asked again once its token Secret exists.
	ScraperRecheck time.Duration
	// The policy (controller.Policy): the management cluster it runs in
	// (namespace/name), the namespaces whose MetricsConfigs are an
	// administrator's, the proxy images.
	ManagementCluster    string
	PrivilegedNamespaces []string
	KubeRBACProxyImage   string
	HAProxyImage         string
	EKSAMetricsImage     string
	ImagesFromBundles    bool
	MonitoringNamespaces []string
	// InsecureKubeconfigSecrets trusts the workload kubeconfig Secrets like
	// the operator's own kubeconfigs.
	InsecureKubeconfigSecrets bool
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
	fl.IntVar(&o.Concurrency, "cluster-concurrency", 16, "Clusters planned and applied at once (each Cluster is its own unit of work)")
	fl.IntVar(&o.Workers, "workers", 2, "MetricsConfig statuses written at once")
	fl.DurationVar(&o.ScraperRecheck, "scraper-recheck", controller.ScraperRecheck, "how often to ask again whether a scraper ServiceAccount's token can do harm (its token Secret is withdrawn when it can)")
	fl.StringVar(&o.Shard, "shard", "", "keep only the Clusters labelled "+controller.ShardLabel+"=<this value>, with a Lease of its own (eksa-metrics-controller-<shard>); empty: the Clusters without that label. Run one replica set per shard")
	fl.BoolVar(&o.InsecureKubeconfigSecrets, "insecure-kubeconfig-secrets", false, secretsFlagHelp)
	fl.BoolVar(&o.WithoutAdmissionPolicy, "without-admission-policy", false, "run although the management cluster holds no admission policy of the controller's (below Kubernetes 1.30, which serves none; controller manifests --kubernetes-version sets it): its writes are then held by its RBAC only. Without it, run refuses to start, and stops writing, while the policy is missing or not the one these flags give")
	policyFlags(fl, o)
	return cmd
}

// policyFlags are the flags of the controller's policy, which
// `controller manifests` passes on to `controller run`.
func policyFlags(fl *pflag.FlagSet, o *ControllerOptions) {
	fl.StringVar(&o.ManagementCluster, "management-cluster", "", "the EKS Anywhere Cluster (namespace/name) of the management cluster the controller runs in: only that Cluster is reached with the controller's own identity and has its management controllers edited; empty: no Cluster is")
	fl.StringSliceVar(&o.PrivilegedNamespaces, "privileged-namespace", nil, "a namespace whose MetricsConfigs may use every field (the management cluster, bindAddress, allowInsecure, rollouts, z-pages, User and Group scrapers), besides the management Cluster's; repeatable. Elsewhere a MetricsConfig gets metrics of its own namespace's Clusters only")
	fl.StringVar(&o.KubeRBACProxyImage, "kube-rbac-proxy-image", "", "the kube-rbac-proxy image of every Cluster (pin a digest); a MetricsConfig cannot choose it (default: from the Bundles with --images-from-bundles, else "+spec.DefaultKubeRBACProxyImage+")")
	fl.StringVar(&o.HAProxyImage, "haproxy-image", "", "the HAProxy image of every Cluster (pin a digest); a MetricsConfig cannot choose it (default: from the Bundles with --images-from-bundles, else "+spec.DefaultHAProxyImage+")")
	fl.StringVar(&o.EKSAMetricsImage, "eksa-metrics-image", "", "the image the kubelet serving-certificate approver runs in a workload cluster whose MetricsConfig asks for tls.kubeletServingCertificates (controller manifests sets it to --image, the controller's own)")
	fl.StringSliceVar(&o.MonitoringNamespaces, "monitoring-namespace", []string{"monitoring"}, "namespaces of the management cluster where the controller may write scrape configuration (a management Cluster's scrapeConfig.namespace must be one); repeatable")
	fl.StringSliceVar(&o.ImagePrefixes, "allowed-image-prefix", nil, "a registry or repository prefix (e.g. registry.example.com/mirror/) the admission policy lets the controller run proxies and sidecars from, beyond "+strings.Join(config.DefaultImagePrefixes, ", ")+"; repeatable (controller run compares its live admission policy with the one these flags give)")
	fl.BoolVar(&o.ImagesFromBundles, "images-from-bundles", false, "take the proxy images, pinned by digest, from the EKS Anywhere Bundles each Cluster runs (its EKSARelease, or spec.bundlesRef)")
}

// checkImagePrefixes refuses an --allowed-image-prefix that is no prefix.
func (o *ControllerOptions) checkImagePrefixes() error {
	for _, p := range o.ImagePrefixes {
		if strings.ContainsAny(p, " \t\n:@") || !strings.Contains(p, "/") {
			return usageErrorf("--allowed-image-prefix %q is neither a registry or path ending in / (registry.example.com/mirror/) nor a repository (registry.example.com/kube-rbac-proxy)", p)
		}
	}
	return nil
}

// admissionOptions are the options of the admission policy the policy
// flags give, for a controller in namespace: what manifests prints, and
// what run compares the live policy with. The images the controller is
// told to run are allowed by it: their repositories.
func (o *ControllerOptions) admissionOptions(namespace string) config.Options {
	prefixes := slices.Clone(o.ImagePrefixes)
	for _, img := range []string{o.KubeRBACProxyImage, o.HAProxyImage} {
		if img != "" {
			prefixes = append(prefixes, config.Repository(img))
		}
	}
	return config.Options{Namespace: namespace, MonitoringNamespaces: o.MonitoringNamespaces, ImagePrefixes: prefixes}
}

// policy checks the policy flags and returns the controller's policy.
func (o *ControllerOptions) policy() (controller.Policy, error) {
	for _, ns := range o.MonitoringNamespaces {
		if errs := validation.IsDNS1123Label(ns); len(errs) > 0 {
			return controller.Policy{}, usageErrorf("--monitoring-namespace %q is not a namespace name: %s", ns, strings.Join(errs, "; "))
		}
	}
	p := controller.Policy{PrivilegedNamespaces: o.PrivilegedNamespaces, ImagesFromBundles: o.ImagesFromBundles, MonitoringNamespaces: o.MonitoringNamespaces,
		Images: metricsv1alpha1.Images{KubeRBACProxy: o.KubeRBACProxyImage, HAProxy: o.HAProxyImage, EKSAMetrics: o.EKSAMetricsImage}}
	if o.ManagementCluster != "" {
		ns, name, ok := strings.Cut(o.ManagementCluster, "/")
		if !ok || ns == "" || name == "" || len(validation.IsDNS1123Label(ns)) > 0 || len(validation.IsDNS1123Subdomain(name)) > 0 {
			return p, usageErrorf("--management-cluster %q is not namespace/name of an EKS Anywhere Cluster (for example default/mgmt)", o.ManagementCluster)
		}
		p.ManagementCluster = types.NamespacedName{Namespace: ns, Name: name}
	}
	for _, ns := range o.PrivilegedNamespaces {
		if errs := validation.IsDNS1123Label(ns); len(errs) > 0 {
			return p, usageErrorf("--privileged-namespace %q is not a namespace name: %s", ns, strings.Join(errs, "; "))
		}
	}
	for flag, img := range map[string]string{"--kube-rbac-proxy-image": o.KubeRBACProxyImage, "--haproxy-image": o.HAProxyImage, "--eksa-metrics-image": o.EKSAMetricsImage} {
		if img == "" {
			continue
		}
		if problem, _ := spec.ImageProblems(img); problem != "" {
			return p, usageErrorf("%s %q %s", flag, img, problem)
		}
	}
	return p, nil
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
	policy, err := o.policy()
	if err != nil {
		return err
	}
	ctrl.SetLogger(zap.New(zap.WriteTo(f.IOStreams.ErrOut)))
	// The cache holds only what the controller watches: Secrets of
	// eksa-system (the workload kubeconfigs), Deployments of the
	// management controllers' namespaces.
	deploymentNamespaces := map[string]cache.Config{}
	for _, m := range components.ManagementCatalog {
		deploymentNamespaces[m.Namespace] = cache.Config{}
	}
	shardSelector, err := shardLabelSelector(o.Shard)
	if err != nil {
		return err
	}
	// Its own kubeconfig as the CLI reads one (engine.ConnectManagement):
	// a missing or malformed one is invalid input (exit 3), an API server
	// that does not answer is unreachable (exit 1), each saying what to do.
	mgmt, err := engine.ConnectManagement(ctx, engine.ClusterSource{Kubeconfig: o.Kubeconfig, WrapTransport: o.WrapTransport})
	if err != nil {
		return err
	}
	// The manager's: no deadline per request (its watches are long ones),
	// and API Priority and Fairness rather than a client-side rate limit, as
	// controller-runtime's GetConfig has it.
	cfg := mgmt.RESTConfig()
	cfg.Timeout = 0
	if cfg.QPS == 0 {
		cfg.QPS = -1
	}
	if err := controller.Preflight(mgmt); err != nil {
		return err
	}
	// Its writes are held by its admission policy: it starts only when the
	// policy is there as shipped, and stops writing when it no longer is.
	var guard *controller.PolicyGuard
	if o.WithoutAdmissionPolicy {
		fmt.Fprintln(f.IOStreams.ErrOut, "warning: --without-admission-policy: no admission policy holds the controller's writes, only its RBAC (it could change objects it did not create in the namespaces its Roles name, run images from anywhere and bind roles it holds)")
	} else {
		admission, err := kubernetes.NewForConfig(mgmt.RESTConfig())
		if err != nil {
			return err
		}
		ns, err := config.ControllerNamespace(ctx, admission)
		if err != nil {
			return err
		}
		want := o.admissionOptions(ns)
		guard = &controller.PolicyGuard{Log: f.IOStreams.ErrOut, Check: func(ctx context.Context) error { return config.CheckAdmissionPolicy(ctx, admission, want) }}
		if err := guard.Once(ctx); err != nil {
			return err
		}
		every := o.PolicyRecheck
		if every <= 0 {
			every = time.Minute
		}
		go guard.Run(ctx, every)
	}
	eksaClusters := &unstructured.Unstructured{}
	eksaClusters.SetGroupVersionKind(controller.ClusterGVK)
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme: Scheme(),
		Cache: cache.Options{ByObject: map[client.Object]cache.ByObject{
			&appsv1.Deployment{}: {Namespaces: deploymentNamespaces},
			// The shard's Clusters only: one that leaves the shard is gone
			// from this replica's view, and let go of.
			eksaClusters: {Label: shardSelector},
			// The shard's bindings only (they carry their Cluster's label).
			&metricsv1alpha1.MetricsConfigBinding{}: {Label: shardSelector},
		}},
		Metrics: metricsserver.Options{BindAddress: o.MetricsAddress, SecureServing: true,
			FilterProvider: filters.WithAuthenticationAndAuthorization},
		HealthProbeBindAddress:  o.ProbeAddress,
		LeaderElection:          o.LeaderElect,
		LeaderElectionID:        leaseName(o.Shard),
		LeaderElectionNamespace: o.LeaderNamespace,
		// A stopped controller hands the lease over at once.
		LeaderElectionReleaseOnCancel: true,
		// Within the pod's 30 s grace: a reconcile cut short is the next
		// leader's to redo, and the events still queued (a first pass of a
		// fleet records more than the event client's rate sends) are dropped.
		GracefulShutdownTimeout: ptr.To(10 * time.Second),
		Controller:              ctrlConfig(o.Workers),
	})
	if err != nil {
		return fmt.Errorf("starting the controller manager: %w", err)
	}
	// Where its Roles are: what it may not list cluster-wide, it lists
	// there.
	mgmt.Namespaced = config.Listable(config.Options{Namespace: o.namespace(), MonitoringNamespaces: o.MonitoringNamespaces})
	mgmt.Named = config.Named(config.Options{Namespace: o.namespace(), MonitoringNamespaces: o.MonitoringNamespaces})
	policy.Namespaces = config.Namespaces(config.Options{Namespace: o.namespace(), MonitoringNamespaces: o.MonitoringNamespaces})
	// Every Cluster's plan prunes in the management cluster: from watches,
	// not a list per kind and namespace each time.
	if err := mgmt.CacheInventory(ctx); err != nil {
		return err
	}
	r := &controller.Reconciler{Client: mgr.GetClient(), Management: mgmt, Concurrency: o.Concurrency, Workers: o.Workers, Shard: o.Shard, ScraperRecheck: o.ScraperRecheck, Guard: guard,
		Recorder: mgr.GetEventRecorder("eksa-metrics-controller"), TrustKubeconfigSecrets: o.InsecureKubeconfigSecrets, Policy: policy}
	if err := r.SetupWithManager(mgr); err != nil {
		return err
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return err
	}
	if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
		return err
	}
	fmt.Fprintf(f.IOStreams.ErrOut, "eksa-metrics controller %s starting\n", buildVersion())
	return mgr.Start(ctx)
}

// leaseName is the leader-election Lease of a shard.
func leaseName(shard string) string {
	if shard == "" {
		return "eksa-metrics-controller"
	}
	return "eksa-metrics-controller-" + shard
}

// shardLabelSelector selects the Clusters of a shard: labelled with its
// value, or, without --shard, not labelled.
func shardLabelSelector(shard string) (labels.Selector, error) {
	op := selection.Equals
	values := []string{shard}
	if shard == "" {
		op, values = selection.DoesNotExist, nil
	} else if errs := validation.IsValidLabelValue(shard); len(errs) > 0 {
		return nil, usageErrorf("--shard %q is not a label value: %s", shard, strings.Join(errs, "; "))
	} else if errs := validation.IsDNS1123Subdomain(leaseName(shard)); len(errs) > 0 {
		return nil, usageErrorf("--shard %q does not make a Lease name: %s", shard, strings.Join(errs, "; "))
	}
	req, err := labels.NewRequirement(controller.ShardLabel, op, values)
	if err != nil {
		return nil, usageErrorf("--shard %q: %v", shard, err)
	}
	return labels.NewSelector().Add(*req), nil
}

func ctrlConfig(workers int) ctrlconfig.Controller {
	// SkipNameValidation: a second manager in one process (a restart in the
	// tests) registers the same controller name again.
	return ctrlconfig.Controller{MaxConcurrentReconciles: workers, CacheSyncTimeout: 2 * time.Minute, SkipNameValidation: ptr.To(true)}
}

func newCmdControllerManifests(f *Factory) *cobra.Command {
	var image, namespace, kubeVersion, metricsCertificates string
	var shards, workloadClusters []string
	var serviceMonitor bool
	var serviceMonitorLabels map[string]string
	o := &ControllerOptions{}
	cmd := &cobra.Command{
		Use:   "manifests",
		Short: "Print the controller's installation: CRD, namespace, RBAC, admission policy, Deployment and its egress NetworkPolicy",
		Long: `Builds the kustomize base in config/ (embedded) with the image and namespace given, adds the
controller's RBAC (a ClusterRole and namespaced Roles, built from the component catalogs) and the
ValidatingAdmissionPolicy that holds its writes to what it renders (Kubernetes 1.30 and later), and
prints it as YAML for kubectl apply --server-side -f -, a Flux Kustomization, or a package. The
policy flags are passed on to the controller's arguments.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if errs := validation.IsDNS1123Label(namespace); len(errs) > 0 {
				return usageErrorf("--namespace %q is not a namespace name: %s", namespace, strings.Join(errs, "; "))
			}
			if image == "" {
				return usageErrorf("--image is required: %s", noImage())
			}
			problem, imageWarning := spec.ImageProblems(image)
			if problem != "" {
				return usageErrorf("--image %q %s", image, problem)
			}
			if _, err := o.policy(); err != nil {
				return err
			}
			for _, shard := range shards {
				if shard == "" {
					return usageErrorf("--shard needs a value: the first Deployment already keeps the Clusters without the shard label")
				}
				if _, err := shardLabelSelector(shard); err != nil {
					return err
				}
			}
			if err := o.checkImagePrefixes(); err != nil {
				return err
			}
			if err := checkWorkloadClusters(workloadClusters, o.ManagementCluster); err != nil {
				return err
			}
			withoutPolicy := false
			if kubeVersion != "" {
				kv, err := spec.ParseKubeVersion(kubeVersion)
				if err != nil || kv.Major != 1 {
					return usageErrorf("--kubernetes-version %q is not a Kubernetes version (1.30, v1.29.4)", kubeVersion)
				}
				withoutPolicy = kv.Minor < admissionPolicyGA
			}
			if !slices.Contains(config.MetricsCertificatesValues, metricsCertificates) {
				return usageErrorf("--metrics-certificates %q: want %s", metricsCertificates, strings.Join(config.MetricsCertificatesValues, " or "))
			}
			for k, v := range serviceMonitorLabels {
				if errs := append(validation.IsQualifiedName(k), validation.IsValidLabelValue(v)...); len(errs) > 0 {
					return usageErrorf("--service-monitor-label %s=%s: %s", k, v, strings.Join(errs, "; "))
				}
			}
			if len(serviceMonitorLabels) > 0 && !serviceMonitor {
				return usageErrorf("--service-monitor-label goes with --service-monitor")
			}
			opts := o.admissionOptions(namespace)
			opts.Image, opts.Shards, opts.WithoutAdmissionPolicy = image, shards, withoutPolicy
			opts.WorkloadClusters = workloadClusters
			opts.MetricsCertificates, opts.ServiceMonitor, opts.ServiceMonitorLabels = metricsCertificates, serviceMonitor, serviceMonitorLabels
			cmd.Flags().Visit(func(fl *pflag.Flag) {
				if policyFlag[fl.Name] {
					if sv, ok := fl.Value.(pflag.SliceValue); ok {
						for _, v := range sv.GetSlice() {
							opts.Args = append(opts.Args, "--"+fl.Name+"="+v)
						}
					} else {
						opts.Args = append(opts.Args, "--"+fl.Name+"="+fl.Value.String())
					}
				}
			})
			if o.EKSAMetricsImage == "" {
				// The kubelet approver of a workload cluster runs the controller's own image.
				opts.Args = append(opts.Args, "--eksa-metrics-image="+image)
			}
			if withoutPolicy {
				opts.Args = append(opts.Args, "--without-admission-policy")
			}
			out, err := config.BuildWith(opts)
			if err != nil {
				return err
			}
			if _, err = f.IOStreams.Out.Write(out); err != nil {
				return err
			}
			if imageWarning != "" {
				// As the spec's images get: the controller and every kubelet approver run it.
				if _, err = fmt.Fprintf(f.IOStreams.ErrOut, "warning: --image %q %s\n", image, imageWarning); err != nil {
					return err
				}
			}
			if withoutPolicy {
				if _, err = fmt.Fprintf(f.IOStreams.ErrOut, "warning: Kubernetes %s serves no admissionregistration.k8s.io/v1 ValidatingAdmissionPolicy (1.30 and later do), so the admission policy is left out: the controller's writes are held by its RBAC only (it could then change objects it did not create in the namespaces its Roles name, run images from anywhere and bind roles it holds); upgrade the management cluster to 1.30 or later and print the manifests again\n", kubeVersion); err != nil {
					return err
				}
			}
			if o.ManagementCluster == "" {
				_, err = fmt.Fprintln(f.IOStreams.ErrOut, "note: without --management-cluster, no Cluster is the management cluster: the controller keeps workload clusters only, never edits or scrapes the management controllers (eksa-controller-manager, Cluster API, the provider, etcdadm, curated packages, cert-manager), and refuses a MetricsConfig that selects a Cluster managing itself (NotAllowed); pass --management-cluster NAMESPACE/NAME to include them")
			}
			return err
		},
	}
	cmd.Flags().StringVar(&image, "image", defaultControllerImage(), "the controller's image, pinned by digest (required unless this is a release build, which installs its own release's image; eksa-metrics version shows it; make image builds one)")
	cmd.Flags().StringVar(&namespace, "namespace", config.DefaultNamespace, "namespace of the controller")
	cmd.Flags().StringVar(&kubeVersion, "kubernetes-version", "", "the management cluster's Kubernetes version; below 1.30 the admission policy, which such an API server does not serve, is left out (with a warning)")
	cmd.Flags().StringSliceVar(&workloadClusters, "workload-cluster", nil, "an EKS-A workload Cluster the controller keeps: it may read that Cluster's admin kubeconfig, Secret eksa-system/<name>-kubeconfig, and no other Secret of eksa-system (never the management cluster's, which it reaches with its own identity); repeatable or comma-separated. Print and apply the manifests again when the fleet gains a Cluster; a Cluster left out gets KubeconfigNotGranted")
	cmd.Flags().StringSliceVar(&shards, "shard", nil, "add a Deployment eksa-metrics-controller-<shard> that keeps the Clusters labelled "+controller.ShardLabel+"=<shard>, with its own Lease; repeatable (the first Deployment keeps the Clusters without the label)")
	cmd.Flags().StringVar(&metricsCertificates, "metrics-certificates", config.CertificatesCertManager, "who issues the certificate of the controller's own metrics endpoint: cert-manager (an Issuer, a CA and a Certificate in the controller's namespace; every EKS Anywhere management cluster runs cert-manager) or none (a self-signed certificate, which scrapes cannot verify)")
	cmd.Flags().BoolVar(&serviceMonitor, "service-monitor", false, "add a ServiceMonitor of the controller's metrics (prometheus-operator's CRDs must be installed), verifying its certificate with the CA cert-manager issued")
	cmd.Flags().StringToStringVar(&serviceMonitorLabels, "service-monitor-label", nil, "a label of the ServiceMonitor, such as release=kps for kube-prometheus-stack's default serviceMonitorSelector; repeatable")
	policyFlags(cmd.Flags(), o)
	return cmd
}

// checkWorkloadClusters refuses a --workload-cluster that is no Cluster
// name, or that is the management cluster (--management-cluster
// NAMESPACE/NAME): its admin kubeconfig would let the controller's token
// do what no admission policy holds.
func checkWorkloadClusters(names []string, management string) error {
	_, mgmt, _ := strings.Cut(management, "/")
	for _, n := range names {
		if errs := validation.IsDNS1123Subdomain(spec.KubeconfigSecret(n)); n == "" || len(errs) > 0 {
			return usageErrorf("--workload-cluster %q is not an EKS-A Cluster name: %s", n, strings.Join(errs, "; "))
		}
		if mgmt != "" && n == mgmt {
			return usageErrorf("--workload-cluster %s is the management cluster (--management-cluster %s): the controller reaches it with its own identity and never reads its admin kubeconfig; leave it out", n, management)
		}
	}
	return nil
}

// admissionPolicyGA is the Kubernetes minor from which ValidatingAdmissionPolicy
// is served as admissionregistration.k8s.io/v1, on by default.
const admissionPolicyGA = 30

// policyFlag names the flags of `controller manifests` that are the
// controller's own.
var policyFlag = map[string]bool{"allowed-image-prefix": true, "management-cluster": true, "monitoring-namespace": true, "privileged-namespace": true, "kube-rbac-proxy-image": true, "haproxy-image": true, "eksa-metrics-image": true, "images-from-bundles": true}

// namespace is the controller's own namespace: the Lease's when given, else
// the pod's, else the default.
func (o *ControllerOptions) namespace() string {
	if o.LeaderNamespace != "" {
		return o.LeaderNamespace
	}
	if b, err := os.ReadFile("/var/run/secrets/kubernetes.io/serviceaccount/namespace"); err == nil && len(b) > 0 {
		return strings.TrimSpace(string(b))
	}
	return config.DefaultNamespace
}
