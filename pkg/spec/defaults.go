package spec

import (
	metricsv1alpha1 "github.com/eksa-metrics/eksa-metrics/pkg/apis/metrics/v1alpha1"
)

// Options are the inputs to defaulting that come from flags, not the file.
type Options struct {
	// CAPIAPIVersion is used when the Cluster has no eksaVersion
	// (--capi-api-version); empty means v1beta2.
	CAPIAPIVersion string
	// Bundles is the EKS Anywhere Bundles manifest (--bundles-override): its
	// images are used where spec.images names none.
	Bundles *Bundles
	// EKSAMetricsImage is the image of this eksa-metrics release, the
	// default of images.eksaMetrics ("" for a build that is not a release).
	EKSAMetricsImage string
}

func boolOr(p *bool, def bool) bool {
	if p == nil {
		return def
	}
	return *p
}

// Default resolves the metrics section against the Cluster. It does not
// validate; call Validate on the result. Values it cannot parse are left at
// safe zero values for Validate to report.
func Default(in *Input, opts Options) *Config {
	m, cl := &in.Metrics, &in.Cluster
	c := &Config{
		ClusterName:    cl.Metadata.Name,
		Provider:       providerByDatacenterKind[cl.Spec.DatacenterRef.Kind],
		Management:     cl.SelfManaged(),
		ExternalEtcd:   cl.Spec.ExternalEtcdConfiguration != nil,
		EtcdEncryption: len(cl.Spec.EtcdEncryption) > 0,
		Exposure:       m.Exposure,
		Scrapers:       m.Scrapers,
		AllowInsecure:  m.AllowInsecure,
	}
	c.APIServerExtraArgs = cl.Spec.ControlPlaneConfiguration.APIServerExtraArgs
	c.ServiceCIDRs = cl.Spec.ClusterNetwork.Services.CIDRBlocks
	c.ControlPlaneEndpoint = cl.Spec.ControlPlaneConfiguration.Endpoint.Host
	c.KubeVersion, _ = ParseKubeVersion(cl.Spec.KubernetesVersion)
	c.CAPIVersion, c.CAPIReason = CAPIv1beta2, "default (no spec.eksaVersion and no --capi-api-version; EKS Anywhere v0.25 and later use v1beta2)"
	if opts.CAPIAPIVersion != "" {
		c.CAPIVersion, c.CAPIReason = opts.CAPIAPIVersion, "--capi-api-version"
	}
	if cl.Spec.EksaVersion != "" {
		if v, err := ParseEKSAVersion(cl.Spec.EksaVersion); err == nil {
			c.EKSAVersion = &v
			c.CAPIVersion, c.CAPIReason = CAPIv1beta2, "spec.eksaVersion "+v.String()+" (v0.25 and later use v1beta2)"
			if v.Less(EKSAv1beta2) {
				c.CAPIVersion, c.CAPIReason = CAPIv1beta1, "spec.eksaVersion "+v.String()+" (v0.24 and earlier use v1beta1)"
			}
		}
	}
	c.OSFamily = in.controlPlaneOS()
	if rm := cl.Spec.RegistryMirrorConfiguration; rm != nil {
		c.RegistryMirror = rm.Endpoint
	}
	if c.Exposure == "" {
		c.Exposure = metricsv1alpha1.ExposureProxy
	}

	comp := m.Components
	c.APIServer = comp.KubeAPIServer.On()
	c.ControllerManager = comp.KubeControllerManager.On()
	c.Scheduler = comp.KubeScheduler.On()
	c.Etcd = comp.Etcd.On() && !c.ExternalEtcd
	c.ExternalEtcdScrape = comp.Etcd.On() && c.ExternalEtcd
	c.EtcdMetricsLevel = comp.Etcd.MetricsLevel
	if c.EtcdMetricsLevel == "" {
		c.EtcdMetricsLevel = metricsv1alpha1.EtcdMetricsBasic
	}
	c.KubeProxy = comp.KubeProxy.On()
	c.Kubelet = comp.Kubelet.On()

	c.ManagementComponents = boolOr(m.ManagementComponents.Enabled, c.Management)
	c.ManagementExclude = m.ManagementComponents.Exclude

	// Scrapers get z-pages only when asked: /flagz shows every flag of a
	// component, more than metrics need.
	c.Statusz = boolOr(m.ZPages.Statusz, false)
	c.Flagz = boolOr(m.ZPages.Flagz, false)

	// The curated prometheus package is not told to mount the CA bundle, so
	// its scrapes keep skipping verification unless asked (validate refuses
	// that combination).
	c.ServingCertificates = m.TLS.Certificates == metricsv1alpha1.CertificatesEKSAMetrics || m.TLS.Certificates == metricsv1alpha1.CertificatesCertManager ||
		m.TLS.Certificates == "" && !Stacks[m.ScrapeConfig.Stack].NoCABundle
	c.CertManager = m.TLS.Certificates == metricsv1alpha1.CertificatesCertManager
	c.KubeletServingCertificates = boolOr(m.TLS.KubeletServingCertificates, false)
	if c.KubeletServingCertificates && !c.Management && in.Resource {
		c.PublishMachines, c.Machines = true, in.Machines
	}
	c.TLSMinVersion = m.TLS.MinVersion
	if c.TLSMinVersion == "" {
		c.TLSMinVersion = metricsv1alpha1.TLS12
	}
	sc := m.ScrapeConfig
	c.Stack, c.Release = sc.Stack, sc.Release
	stack, ok := Stacks[sc.Stack]
	if !ok {
		stack = Stacks[metricsv1alpha1.StackGeneric] // refused by validate
	}
	if c.Release == "" {
		c.Release = stack.DefaultRelease
	}
	c.ServiceMonitors = boolOr(sc.ServiceMonitors, stack.ServiceMonitors)
	c.PrometheusConfig = boolOr(sc.Prometheus, stack.File)
	c.MonitoringNamespace = sc.Namespace
	if c.MonitoringNamespace == "" {
		c.MonitoringNamespace = stack.Namespace
	}
	c.MonitorLabels = sc.Labels
	c.DropHighCardinality = boolOr(sc.DropHighCardinality, true)
	if len(c.Scrapers) == 0 {
		if sa := StackScraper(c.Stack, c.Release, c.MonitoringNamespace); sa != nil {
			c.Scrapers, c.DefaultScraper = []metricsv1alpha1.Scraper{*sa}, true
		}
	}
	// By reference where the scraper's ServiceAccount is known (validate
	// warns where it is not).
	c.TokenServiceAccount = TokenServiceAccount(c.Scrapers, c.MonitoringNamespace)
	c.CredentialsFile = sc.Credentials == metricsv1alpha1.CredentialsFile || sc.Credentials == "" && c.TokenServiceAccount == ""
	c.Images = m.Images
	c.ImageSources = [2]string{"spec.images", "spec.images"}
	if c.Images.EKSAMetrics == "" {
		c.Images.EKSAMetrics = opts.EKSAMetricsImage
	}
	var vb VersionsBundle
	if opts.Bundles != nil {
		vb, _ = opts.Bundles.For(c.KubeVersion)
	}
	for i, img := range []struct {
		ref    *string
		bundle BundleImage
		def    string
	}{{&c.Images.KubeRBACProxy, vb.KubeRBACProxy, DefaultKubeRBACProxyImage}, {&c.Images.HAProxy, vb.HAProxy, DefaultHAProxyImage}} {
		switch {
		case *img.ref != "":
		case img.bundle.URI != "":
			*img.ref, c.ImageSources[i] = img.bundle.Ref(), opts.Bundles.Path
		default:
			*img.ref, c.ImageSources[i] = img.def, "default"
		}
	}
	return c
}

// TokenServiceAccount is the first scraper that is a ServiceAccount in the
// monitoring namespace, whose token Secret the ServiceMonitors reference (a
// ServiceMonitor reads Secrets of its own namespace only); "" when none is.
func TokenServiceAccount(scrapers []metricsv1alpha1.Scraper, namespace string) string {
	for _, s := range scrapers {
		if s.Kind == metricsv1alpha1.ScraperServiceAccount && s.Namespace == namespace {
			return s.Name
		}
	}
	return ""
}
