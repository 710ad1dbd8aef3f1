package spec

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"unicode"

	metricsv1alpha1 "github.com/eksa-metrics/eksa-metrics/pkg/apis/metrics/v1alpha1"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Validate checks the input and its defaulted configuration. Every problem
// and warning is an Issue with the field path in its document; the file
// adapter (File.Locate) adds lines.
func Validate(in *Input, c *Config, opts Options) Issues {
	root := in.MetricsRoot()
	var mErrs, cErrs field.ErrorList
	var issues Issues
	warn := func(doc Doc, p *field.Path, format string, args ...any) {
		issues = append(issues, Issue{Doc: doc, Field: p.String(), Detail: fmt.Sprintf(format, args...), Warning: true})
	}
	m := &in.Metrics

	// The Cluster: only what eksa-metrics depends on.
	cs := field.NewPath("spec")
	cl := &in.Cluster
	if cl.Metadata.Name == "" {
		cErrs = append(cErrs, field.Required(field.NewPath("metadata", "name"), "the Cluster needs a name"))
	} else {
		for _, msg := range ClusterNameProblems(cl.Metadata.Name) {
			cErrs = append(cErrs, field.Invalid(field.NewPath("metadata", "name"), cl.Metadata.Name, msg))
		}
	}
	var kube *KubeVersion // a supported kubernetesVersion
	if cl.Spec.KubernetesVersion == "" {
		cErrs = append(cErrs, field.Required(cs.Child("kubernetesVersion"), "eksa-metrics renders per Kubernetes version"))
	} else if v, err := ParseKubeVersion(cl.Spec.KubernetesVersion); err != nil {
		cErrs = append(cErrs, field.Invalid(cs.Child("kubernetesVersion"), cl.Spec.KubernetesVersion, err.Error()+"; quote it"))
	} else if v.String() != cl.Spec.KubernetesVersion {
		// EKS Anywhere's KubernetesVersion is a minor release; its bundle
		// picks the patch release (aws/eks-anywhere
		// pkg/api/v1alpha1/cluster_types.go, the Kube1xx constants).
		cErrs = append(cErrs, field.Invalid(cs.Child("kubernetesVersion"), cl.Spec.KubernetesVersion, fmt.Sprintf(
			"EKS Anywhere takes a minor version here, such as %q (its bundle picks the patch release), and refuses %q: write %q", v.String(), cl.Spec.KubernetesVersion, v.String())))
	} else if v.Major != 1 || v.Minor < MinKube.Minor || v.Minor > MaxKube.Minor {
		cErrs = append(cErrs, field.Invalid(cs.Child("kubernetesVersion"), cl.Spec.KubernetesVersion, fmt.Sprintf("eksa-metrics supports Kubernetes %s to %s", MinKube, MaxKube)))
	} else {
		kube = &v
	}
	var eksa *EKSAVersion // a supported eksaVersion
	if cl.Spec.EksaVersion != "" {
		if v, err := ParseEKSAVersion(cl.Spec.EksaVersion); err != nil {
			cErrs = append(cErrs, field.Invalid(cs.Child("eksaVersion"), cl.Spec.EksaVersion, err.Error()))
		} else if v.Less(MinEKSA) {
			cErrs = append(cErrs, field.Invalid(cs.Child("eksaVersion"), cl.Spec.EksaVersion, fmt.Sprintf("eksa-metrics supports EKS Anywhere %s and later", MinEKSA)))
		} else {
			eksa = &v
		}
	}
	if kube != nil && eksa != nil {
		// EKS-A refuses a Cluster whose Kubernetes its release does not
		// ship; what eksa-metrics renders for it would never run.
		lo, hi := eksa.KubeRange()
		switch {
		case kube.Minor > hi:
			cErrs = append(cErrs, field.Invalid(cs.Child("kubernetesVersion"), cl.Spec.KubernetesVersion, fmt.Sprintf(
				"EKS Anywhere %s (spec.eksaVersion) supports Kubernetes 1.%d to 1.%d: set kubernetesVersion to 1.%d or lower, or eksaVersion to %s or later, the first release with Kubernetes %s",
				eksa, lo, hi, hi, FirstEKSAFor(kube.Minor), kube)))
		case kube.Minor < lo:
			cErrs = append(cErrs, field.Invalid(cs.Child("kubernetesVersion"), cl.Spec.KubernetesVersion, fmt.Sprintf(
				"EKS Anywhere %s (spec.eksaVersion) supports Kubernetes 1.%d to 1.%d: upgrade the Cluster to 1.%d or later, or set eksaVersion to the older release the cluster runs",
				eksa, lo, hi, lo)))
		}
	}
	if c.Provider == "" {
		cErrs = append(cErrs, field.NotSupported(cs.Child("datacenterRef", "kind"), cl.Spec.DatacenterRef.Kind, slices.Sorted(maps.Keys(providerByDatacenterKind))))
	}

	// The metrics section.
	if in.Inline && m.ClusterRef != nil {
		mErrs = append(mErrs, field.Forbidden(root.Child("clusterRef"), "clusterRef is only for a "+metricsv1alpha1.Kind+" document; inline, the section belongs to its Cluster"))
	}
	if !in.Inline {
		if m.ClusterRef != nil && m.ClusterRef.Kind != "Cluster" {
			mErrs = append(mErrs, field.NotSupported(root.Child("clusterRef", "kind"), m.ClusterRef.Kind, []string{"Cluster"}))
		}
		if m.ClusterRef != nil && !in.Resource && in.MetricsName != m.ClusterRef.Name {
			mErrs = append(mErrs, field.Invalid(field.NewPath("metadata", "name"), in.MetricsName, fmt.Sprintf("must equal spec.clusterRef.name %q", m.ClusterRef.Name)))
		}
	}
	if !in.Resource {
		// What only the custom resource of the controller carries.
		if m.ClusterSelector != nil {
			mErrs = append(mErrs, field.Forbidden(root.Child("clusterSelector"), "only the MetricsConfig custom resource selects Clusters by label; a file names its Cluster"))
		}
		if m.AllowControlPlaneRollout {
			mErrs = append(mErrs, field.Forbidden(root.Child("allowControlPlaneRollout"), "only for the MetricsConfig custom resource; with a file, pass --allow-control-plane-rollout to apply"))
		}
	}
	sc := m.ScrapeConfig
	if sc.Stack != metricsv1alpha1.StackGeneric && !slices.Contains(metricsv1alpha1.Stacks, sc.Stack) {
		mErrs = append(mErrs, field.NotSupported(root.Child("scrapeConfig", "stack"), sc.Stack, metricsv1alpha1.Stacks))
	}
	if stack := Stacks[sc.Stack]; stack.ReleaseRequired && sc.Release == "" {
		mErrs = append(mErrs, field.Required(root.Child("scrapeConfig", "release"), stack.ReleaseMeans))
	}
	if sc.Release != "" {
		if !Stacks[sc.Stack].ReleaseAllowed {
			mErrs = append(mErrs, field.Forbidden(root.Child("scrapeConfig", "release"), "only for stack "+strings.Join(releaseStacks(), " or ")))
		}
		for _, msg := range validation.IsDNS1123Label(sc.Release) {
			mErrs = append(mErrs, field.Invalid(root.Child("scrapeConfig", "release"), sc.Release, msg))
		}
	}
	for _, k := range slices.Sorted(maps.Keys(sc.Labels)) {
		lp := root.Child("scrapeConfig", "labels").Key(k)
		for _, msg := range validation.IsQualifiedName(k) {
			mErrs = append(mErrs, field.Invalid(lp, k, msg))
		}
		for _, msg := range validation.IsValidLabelValue(sc.Labels[k]) {
			mErrs = append(mErrs, field.Invalid(lp, sc.Labels[k], msg))
		}
	}
	scrapers := m.Scrapers
	if len(scrapers) == 0 && c.DefaultScraper {
		scrapers = c.Scrapers // the stack's own Prometheus identity
	}
	scraperErrs, scraperWarns := validateScrapers(scrapers, root.Child("scrapers"))
	mErrs = append(mErrs, scraperErrs...)
	for _, w := range scraperWarns {
		warn(DocMetrics, w.path, "%s", w.detail)
	}
	if Stacks[sc.Stack].ConfigFileScrapes && c.TokenServiceAccount == "" && len(scraperErrs) == 0 {
		mErrs = append(mErrs, field.Required(root.Child("scrapers"), fmt.Sprintf(
			"stack %s runs its collector as a ServiceAccount of namespace %s, and no scraper is one: list it, {kind: ServiceAccount, name: <name>, namespace: %s}, or leave scrapers out (the default is %s)",
			sc.Stack, c.MonitoringNamespace, c.MonitoringNamespace, c.Release)))
	}
	credentials := []metricsv1alpha1.Credentials{metricsv1alpha1.CredentialsSecret, metricsv1alpha1.CredentialsFile}
	noTokenSecret := fmt.Sprintf("the ServiceMonitors in namespace %[1]s can reference only the token Secret of a ServiceAccount of %[1]s (a ServiceMonitor reads Secrets of its own namespace), and no scraper is one: add the ServiceAccount your Prometheus runs as, {kind: ServiceAccount, name: <name>, namespace: %[1]s}, to scrapers", c.MonitoringNamespace)
	switch v := sc.Credentials; {
	case v != "" && !slices.Contains(credentials, v):
		mErrs = append(mErrs, field.NotSupported(root.Child("scrapeConfig", "credentials"), v, credentials))
	case v == metricsv1alpha1.CredentialsFile && Stacks[sc.Stack].NoFileCredentials:
		mErrs = append(mErrs, field.Invalid(root.Child("scrapeConfig", "credentials"), string(v), fmt.Sprintf("stack %s refuses ServiceMonitors that read files of its pod; leave credentials unset (a token Secret of the scraper)", sc.Stack)))
	case Stacks[sc.Stack].NoFileCredentials && c.ServiceMonitors && c.TokenServiceAccount == "" && len(scraperErrs) == 0:
		mErrs = append(mErrs, field.Required(root.Child("scrapers"), fmt.Sprintf(
			"stack %s accepts only ServiceMonitors that take the scraper's token from a Secret, which must be of a ServiceAccount of namespace %s: list the ServiceAccount its collector runs as, {kind: ServiceAccount, name: <name>, namespace: %s} (kubectl -n %s get serviceaccounts)",
			sc.Stack, c.MonitoringNamespace, c.MonitoringNamespace, c.MonitoringNamespace)))
	case !c.ServiceMonitors || c.TokenServiceAccount != "" || len(scrapers) == 0 || len(scraperErrs) > 0:
	case v == metricsv1alpha1.CredentialsSecret:
		mErrs = append(mErrs, field.Invalid(root.Child("scrapeConfig", "credentials"), string(v), noTokenSecret+", or set scrapeConfig.credentials: file"))
	case v == "":
		warn(DocMetrics, root.Child("scrapers"), "%s; until then they read the Prometheus pod's own token and CA files (bearerTokenFile, caFile), which prometheus-operator deprecates and Grafana Alloy 1.19 and the OpenTelemetry Target Allocator refuse by default (set scrapeConfig.credentials: file to keep that without this warning)", noTokenSecret)
	}
	if opts.CAPIAPIVersion != "" && c.EKSAVersion != nil && opts.CAPIAPIVersion != c.CAPIVersion {
		cErrs = append(cErrs, field.Invalid(cs.Child("eksaVersion"), cl.Spec.EksaVersion, fmt.Sprintf(
			"EKS Anywhere %s uses KubeadmControlPlane %s, but --capi-api-version says %s; drop the flag (eksaVersion decides) or fix eksaVersion", c.EKSAVersion, c.CAPIVersion, opts.CAPIAPIVersion)))
	}
	if m.Exposure != "" && m.Exposure != metricsv1alpha1.ExposureProxy && m.Exposure != metricsv1alpha1.ExposureBindAddress {
		mErrs = append(mErrs, field.NotSupported(root.Child("exposure"), m.Exposure, []metricsv1alpha1.Exposure{metricsv1alpha1.ExposureProxy, metricsv1alpha1.ExposureBindAddress}))
	}
	if l := m.Components.Etcd.MetricsLevel; l != "" && l != metricsv1alpha1.EtcdMetricsBasic && l != metricsv1alpha1.EtcdMetricsExtensive {
		mErrs = append(mErrs, field.NotSupported(root.Child("components", "etcd", "metricsLevel"), l, []metricsv1alpha1.EtcdMetricsLevel{metricsv1alpha1.EtcdMetricsBasic, metricsv1alpha1.EtcdMetricsExtensive}))
	}
	if v := m.TLS.MinVersion; v != "" && v != metricsv1alpha1.TLS12 && v != metricsv1alpha1.TLS13 {
		mErrs = append(mErrs, field.NotSupported(root.Child("tls", "minVersion"), v, []string{metricsv1alpha1.TLS12, metricsv1alpha1.TLS13}))
	}
	issuers := []string{metricsv1alpha1.CertificatesEKSAMetrics, metricsv1alpha1.CertificatesCertManager, metricsv1alpha1.CertificatesNone}
	if v := m.TLS.Certificates; v != "" && !slices.Contains(issuers, v) {
		mErrs = append(mErrs, field.NotSupported(root.Child("tls", "certificates"), v, issuers))
	} else if v != "" && v != metricsv1alpha1.CertificatesNone && Stacks[m.ScrapeConfig.Stack].NoCABundle {
		mErrs = append(mErrs, field.Invalid(root.Child("tls", "certificates"), v,
			"the curated prometheus package would need the CA bundle mounted, which eksa-metrics cannot set through the Package; use none with scrapeConfig.stack: eks-anywhere"))
	}
	if ns := m.ScrapeConfig.Namespace; ns != "" {
		for _, msg := range validation.IsDNS1123Label(ns) {
			mErrs = append(mErrs, field.Invalid(root.Child("scrapeConfig", "namespace"), ns, msg))
		}
	}
	if me := m.ManagementComponents; me.Enabled != nil && *me.Enabled && !c.Management {
		mErrs = append(mErrs, field.Invalid(root.Child("managementComponents", "enabled"), true,
			fmt.Sprintf("Cluster %q is a workload cluster (managementCluster.name is %q); management components run on the management cluster, so set this in that cluster's file", cl.Metadata.Name, cl.Spec.ManagementCluster.Name)))
	}
	for i, ex := range m.ManagementComponents.Exclude {
		ns, name, ok := strings.Cut(ex, "/")
		if !ok || len(validation.IsDNS1123Label(ns)) > 0 || len(validation.IsDNS1123Subdomain(name)) > 0 {
			mErrs = append(mErrs, field.Invalid(root.Child("managementComponents", "exclude").Index(i), ex, "must be a Deployment as namespace/name, e.g. capi-system/capi-controller-manager"))
		}
	}
	if c.KubeletServingCertificates {
		validateKubeletServing(in, c, root, &mErrs, &cErrs, warn)
	}
	for _, img := range []struct{ name, ref string }{{"kubeRBACProxy", m.Images.KubeRBACProxy}, {"haproxy", m.Images.HAProxy}, {"eksaMetrics", m.Images.EKSAMetrics}} {
		if img.ref == "" {
			continue
		}
		p := root.Child("images", img.name)
		problem, warning := ImageProblems(img.ref)
		if problem != "" {
			mErrs = append(mErrs, field.Invalid(p, img.ref, problem))
		} else if warning != "" {
			warn(DocMetrics, p, "%s", warning)
		}
	}

	// Version-dependent rules.
	kv := c.KubeVersion
	if kv.Major == 1 && !kv.ServesZPages() {
		for _, z := range []struct {
			name string
			on   *bool
		}{{"statusz", m.ZPages.Statusz}, {"flagz", m.ZPages.Flagz}} {
			if name, p := z.name, z.on; p != nil && *p {
				mErrs = append(mErrs, field.Invalid(root.Child("zPages", name), true,
					fmt.Sprintf("z-pages need Kubernetes 1.%d or later (the Cluster runs %s); set it to false or upgrade first", ZPagesMinMinor, kv)))
			}
		}
	}

	// Plain-HTTP endpoints must not leave loopback by accident.
	if c.Exposure == metricsv1alpha1.ExposureBindAddress && !c.AllowInsecure {
		var insecure []string
		if c.Etcd {
			insecure = append(insecure, "stacked etcd (2381)")
		}
		if c.KubeProxy {
			insecure = append(insecure, "kube-proxy (10249)")
		}
		if len(insecure) > 0 {
			mErrs = append(mErrs, field.Forbidden(root.Child("exposure"), fmt.Sprintf(
				"bindAddress would expose %s as plain HTTP with no authentication; set allowInsecure: true to accept that, disable those components, or use exposure: proxy (TLS and RBAC in front of them)", joinAnd(insecure))))
		}
	}
	if c.Exposure == metricsv1alpha1.ExposureBindAddress {
		var bound, cis []string
		if c.ControllerManager {
			bound, cis = append(bound, "kube-controller-manager"), append(cis, "1.3.7")
		}
		if c.Scheduler {
			bound, cis = append(bound, "kube-scheduler"), append(cis, "1.4.2")
		}
		if len(bound) > 0 {
			warn(DocMetrics, root.Child("exposure"), "bindAddress sets bind-address=0.0.0.0 on %s (a CIS %s deviation) and rolls every control-plane machine once", joinAnd(bound), strings.Join(cis, "/"))
		}
		if c.AllowInsecure && (c.Etcd || c.KubeProxy) {
			warn(DocMetrics, root.Child("allowInsecure"), "%s", InsecureWarning(c))
		} else if c.AllowInsecure {
			warn(DocMetrics, root.Child("allowInsecure"), "does nothing: stacked etcd and kube-proxy, the plain-HTTP endpoints it lets leave loopback, are not enabled; remove it")
		}
	} else if m.AllowInsecure {
		warn(DocMetrics, root.Child("allowInsecure"), "does nothing with exposure: %s (every endpoint is behind TLS and RBAC there); it only lets plain-HTTP endpoints leave loopback with exposure: bindAddress; remove it", c.Exposure)
	}
	if c.ExternalEtcdScrape {
		warn(DocMetrics, root.Child("components", "etcd"), "the Cluster uses external etcd: nothing is patched; its metrics are on https://<etcd IP>:2379/metrics and need an etcd client certificate (the scrape configuration says so)")
	}
	if c.EKSAVersion == nil && opts.CAPIAPIVersion == "" {
		warn(DocCluster, cs.Child("eksaVersion"), "not set, so the KubeadmControlPlane is rendered for CAPI %s by %s; set spec.eksaVersion, or pass --capi-api-version v1beta1 for a management cluster on EKS Anywhere v0.24 or earlier", c.CAPIVersion, c.CAPIReason)
	}
	if b := opts.Bundles; b != nil {
		if _, exact := b.For(c.KubeVersion); !exact && c.KubeVersion.Minor > 0 {
			warn(DocCluster, cs.Child("kubernetesVersion"), "%s has no versions bundle for Kubernetes %s; its first one (%s) is used, as EKS Anywhere does for the management components", b.Path, cl.Spec.KubernetesVersion, b.Versions[0].KubeVersion)
		}
		if c.EKSAVersion != nil && !b.covers(*c.EKSAVersion) {
			warn(DocCluster, cs.Child("eksaVersion"), "%s is the bundle of EKS Anywhere %s, but the Cluster runs %s: its images may not be the ones the cluster's registry holds", b.Path, b.release(), c.EKSAVersion)
		}
	}
	if c.Provider == ProviderCloudStack {
		switch {
		case eksa != nil && !eksa.Less(EKSACloudStackRemoved):
			cErrs = append(cErrs, field.Invalid(cs.Child("eksaVersion"), cl.Spec.EksaVersion, fmt.Sprintf(
				"CloudStack (datacenterRef.kind %s) was removed from EKS Anywhere in %s, so no CloudStack cluster runs %s: set eksaVersion to the v0.25 (or older) release the cluster runs", cl.Spec.DatacenterRef.Kind, EKSACloudStackRemoved, eksa)))
		case cl.Spec.EksaVersion == "":
			warn(DocCluster, cs.Child("datacenterRef", "kind"), "CloudStack was removed from EKS Anywhere in %s: this renders for a CloudStack cluster on v0.25 or earlier; set spec.eksaVersion to the release it runs", EKSACloudStackRemoved)
		}
	}

	for _, e := range mErrs {
		issues = append(issues, Issue{Doc: DocMetrics, Field: e.Field, Detail: e.ErrorBody() + didYouMean(e)})
	}
	for _, e := range cErrs {
		issues = append(issues, Issue{Doc: DocCluster, Field: e.Field, Detail: e.ErrorBody() + didYouMean(e)})
	}
	return issues
}

// everyone are the identities that stand for every user, every
// authenticated user or every ServiceAccount: binding the reader role to one
// of them grants metrics to everybody.
var everyone = map[string]string{
	"system:anonymous":       "every request without credentials",
	"system:unauthenticated": "every request without credentials",
	"system:authenticated":   "every authenticated user",
	"system:serviceaccounts": "every ServiceAccount of the cluster",
}

// EveryoneNames are the subject names that stand for everybody, sorted
// (with every name that starts "system:serviceaccounts:").
func EveryoneNames() []string {
	return slices.Sorted(maps.Keys(everyone))
}

// Everyone says whom an RBAC subject name stands for when it stands for a
// whole population ("" when it names a particular identity).
func Everyone(name string) string {
	if who, ok := everyone[name]; ok {
		return who
	}
	if ns, ok := strings.CutPrefix(name, "system:serviceaccounts:"); ok {
		return "every ServiceAccount of namespace " + ns
	}
	return ""
}

type located struct {
	path   *field.Path
	detail string
}

func validateScrapers(scrapers []metricsv1alpha1.Scraper, p *field.Path) (field.ErrorList, []located) {
	var errs field.ErrorList
	var warns []located
	if len(scrapers) == 0 {
		return append(errs, field.Required(p, "at least one identity that may read metrics, e.g. {kind: ServiceAccount, name: prometheus-k8s, namespace: monitoring}, or a scrapeConfig.stack whose scraper is known ("+strings.Join(knownScraperStacks(), ", ")+")")), nil
	}
	seen := map[metricsv1alpha1.Scraper]int{}
	for i, s := range scrapers {
		ip := p.Index(i)
		if j, dup := seen[s]; dup {
			errs = append(errs, field.Duplicate(ip, fmt.Sprintf("same as scrapers[%d]", j)))
			continue
		}
		seen[s] = i
		if who := Everyone(s.Name); who != "" {
			errs = append(errs, field.Forbidden(ip.Child("name"), fmt.Sprintf("%q stands for %s: binding it would serve metrics to all of them; name the identity Prometheus runs as", s.Name, who)))
			continue
		}
		switch s.Kind {
		case metricsv1alpha1.ScraperServiceAccount:
			for _, msg := range validation.IsDNS1123Subdomain(s.Name) {
				errs = append(errs, field.Invalid(ip.Child("name"), s.Name, msg))
			}
			if s.Namespace == "" {
				errs = append(errs, field.Required(ip.Child("namespace"), "a ServiceAccount scraper needs its namespace"))
			} else {
				for _, msg := range validation.IsDNS1123Label(s.Namespace) {
					errs = append(errs, field.Invalid(ip.Child("namespace"), s.Namespace, msg))
				}
			}
			if s.Name == "default" {
				warns = append(warns, located{ip.Child("name"), fmt.Sprintf("the default ServiceAccount of %q is shared by every pod of that namespace that names no other; give Prometheus a ServiceAccount of its own", s.Namespace)})
			}
		case metricsv1alpha1.ScraperUser, metricsv1alpha1.ScraperGroup:
			if s.Name == "" {
				errs = append(errs, field.Required(ip.Child("name"), "the user or group name"))
			} else if msg := subjectNameProblem(s.Name); msg != "" {
				errs = append(errs, field.Invalid(ip.Child("name"), s.Name, msg))
			}
			if s.Namespace != "" {
				errs = append(errs, field.Forbidden(ip.Child("namespace"), fmt.Sprintf("only a ServiceAccount has a namespace, not a %s", s.Kind)))
			}
			if strings.HasPrefix(s.Name, "system:serviceaccount:") {
				errs = append(errs, field.Invalid(ip.Child("name"), s.Name, "write a ServiceAccount as {kind: ServiceAccount, name, namespace}"))
			}
			if s.Kind == metricsv1alpha1.ScraperGroup && (s.Name == "system:nodes" || s.Name == "system:masters" || s.Name == "kubeadm:cluster-admins") {
				warns = append(warns, located{ip.Child("name"), fmt.Sprintf("group %q is shared by many identities that are not Prometheus; bind the identity Prometheus runs as", s.Name)})
			}
		default:
			errs = append(errs, field.NotSupported(ip.Child("kind"), s.Kind, []metricsv1alpha1.ScraperKind{metricsv1alpha1.ScraperServiceAccount, metricsv1alpha1.ScraperUser, metricsv1alpha1.ScraperGroup}))
		}
	}
	return errs, warns
}

// InsecureWarning is the warning of bindAddress with allowInsecure.
func InsecureWarning(c *Config) string {
	return InsecureExposed(c) + " will be served as plain HTTP without authentication on every node address; restrict them with a host firewall"
}

// InsecureExposed names what bindAddress with allowInsecure serves as plain
// HTTP without authentication: etcd's metrics listener (2381) and
// kube-proxy's metrics server (10249), which serves much more than metrics
// (KubeProxyMetricsServerPaths).
func InsecureExposed(c *Config) string {
	var parts []string
	if c.Etcd {
		parts = append(parts, "etcd's metrics (2381)")
	}
	if c.KubeProxy {
		parts = append(parts, "kube-proxy's metrics server (10249), which serves "+KubeProxyMetricsServerPaths(c.KubeVersion)+",")
	}
	return strings.Join(parts, " and ")
}

// KubeProxyMetricsServerPaths are the paths kube-proxy's metrics server
// serves, none of them authenticated, on metricsBindAddress: serveMetrics in
// k8s.io/kubernetes cmd/kube-proxy/app/server.go (v1.36.3 line 469, v1.34.4
// line 460, the same list) installs /healthz (healthz.InstallHandler, with
// /healthz/ping), /metrics/slis (slis.SLIMetricsWithReset, where a DELETE
// resets the SLI metrics), /proxyMode, /metrics, /configz (the whole
// KubeProxyConfiguration), /flagz and /statusz when the ComponentFlagz and
// ComponentStatusz gates are on (by default from 1.36; eksa-metrics sets no
// gate on kube-proxy), and, with enableProfiling in config.conf,
// /debug/pprof/ and /debug/flags/v (routes.Profiling, routes.DebugFlags,
// whose PUT sets the log verbosity).
func KubeProxyMetricsServerPaths(v KubeVersion) string {
	zpages := "/statusz and /flagz where the ComponentStatusz and ComponentFlagz feature gates are on"
	if v.ZPagesByDefault() {
		zpages = "/statusz, /flagz (every flag)"
	}
	return "/metrics, /metrics/slis (a DELETE resets the SLI metrics), /healthz, /proxyMode, /configz (kube-proxy's whole configuration), " + zpages +
		", and with enableProfiling in config.conf /debug/pprof/ and /debug/flags/v (a PUT sets the log verbosity)"
}

// subjectNameProblem checks a User or Group name: Kubernetes accepts any
// string, but one with control characters or surrounding spaces is never a
// real identity and would corrupt the plan and reports it appears in.
func subjectNameProblem(name string) string {
	if len(name) > 253 {
		return "must be at most 253 characters"
	}
	if strings.TrimSpace(name) != name {
		return "must not start or end with spaces"
	}
	for _, r := range name {
		if unicode.IsControl(r) || !unicode.IsPrint(r) && r != ' ' {
			return fmt.Sprintf("must not contain the control character %q", r)
		}
	}
	return ""
}

// ClusterNameProblems checks a Cluster name. It names Kubernetes objects
// (KubeadmControlPlane, the <cluster>-kubeconfig Secret) and the output
// directory of a fleet, so it must be a DNS-1123 label that starts with a
// letter, as EKS Anywhere requires.
func ClusterNameProblems(name string) []string {
	msgs := validation.IsDNS1123Label(name)
	if len(msgs) == 0 && (name[0] < 'a' || name[0] > 'z') {
		msgs = append(msgs, "must start with a letter")
	}
	return msgs
}

// MetricsIssue is a warning located at a field of the metrics section;
// path is relative to the section, e.g. "zPages".
func (in *Input) MetricsIssue(path, detail string) Issue {
	return Issue{Doc: DocMetrics, Field: in.MetricsRoot().String() + "." + path, Detail: detail, Warning: true}
}

// knownScraperStacks names the stacks that default the scrapers, and what
// they need for it.
func knownScraperStacks() []string {
	var out []string
	for _, name := range metricsv1alpha1.Stacks {
		row := Stacks[name]
		switch {
		case row.Scraper == nil:
		case row.Scraper("", row.Namespace) == nil:
			out = append(out, string(name)+" with its release")
		default:
			out = append(out, string(name))
		}
	}
	return out
}

// releaseStacks names the stacks that take scrapeConfig.release, with what
// it names.
func releaseStacks() []string {
	var out []string
	for _, name := range metricsv1alpha1.Stacks {
		if Stacks[name].ReleaseAllowed {
			out = append(out, string(name)+" ("+Stacks[name].ReleaseNames+")")
		}
	}
	return out
}
