package spec

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Warning is something valid but worth an operator's attention.
type Warning struct {
	Problem
}

// Validate checks the defaulted configuration against the file. It returns an
// *InvalidError listing every problem, and the warnings.
func Validate(f *File, c *Config) ([]Warning, error) {
	root := field.NewPath("spec")
	if f.Form == FormInline {
		root = root.Child("metrics")
	}
	var mErrs, cErrs field.ErrorList
	var warns []Warning
	warn := func(lines lineIndex, p *field.Path, format string, args ...any) {
		warns = append(warns, Warning{Problem{File: f.Path, Line: lines.lineOf(p.String()), Field: p.String(), Detail: fmt.Sprintf(format, args...)}})
	}
	m := &f.Metrics

	// The Cluster: only what eksa-metrics depends on.
	cs := field.NewPath("spec")
	cl := &f.Cluster
	if cl.Metadata.Name == "" {
		cErrs = append(cErrs, field.Required(field.NewPath("metadata", "name"), "the Cluster needs a name"))
	}
	if cl.Spec.KubernetesVersion == "" {
		cErrs = append(cErrs, field.Required(cs.Child("kubernetesVersion"), "eksa-metrics renders per Kubernetes version"))
	} else if v, err := ParseKubeVersion(cl.Spec.KubernetesVersion); err != nil {
		cErrs = append(cErrs, field.Invalid(cs.Child("kubernetesVersion"), cl.Spec.KubernetesVersion, err.Error()+"; quote it"))
	} else if v.Major != 1 || v.Minor < MinKube.Minor || v.Minor > MaxKube.Minor {
		cErrs = append(cErrs, field.Invalid(cs.Child("kubernetesVersion"), cl.Spec.KubernetesVersion, fmt.Sprintf("eksa-metrics supports Kubernetes %s to %s", MinKube, MaxKube)))
	}
	if cl.Spec.EksaVersion != "" {
		if v, err := ParseEKSAVersion(cl.Spec.EksaVersion); err != nil {
			cErrs = append(cErrs, field.Invalid(cs.Child("eksaVersion"), cl.Spec.EksaVersion, err.Error()))
		} else if v.Less(MinEKSA) {
			cErrs = append(cErrs, field.Invalid(cs.Child("eksaVersion"), cl.Spec.EksaVersion, fmt.Sprintf("eksa-metrics supports EKS Anywhere %s and later", MinEKSA)))
		}
	}
	if c.Provider == "" {
		cErrs = append(cErrs, field.NotSupported(cs.Child("datacenterRef", "kind"), cl.Spec.DatacenterRef.Kind, slices.Sorted(maps.Keys(providerByDatacenterKind))))
	}

	// The metrics section.
	if f.Form == FormInline && m.ClusterRef != nil {
		mErrs = append(mErrs, field.Forbidden(root.Child("clusterRef"), "clusterRef is only for a "+Kind+" document; inline, the section belongs to its Cluster"))
	}
	if f.Form == FormDocument {
		if m.ClusterRef != nil && m.ClusterRef.Kind != "Cluster" {
			mErrs = append(mErrs, field.NotSupported(root.Child("clusterRef", "kind"), m.ClusterRef.Kind, []string{"Cluster"}))
		}
		if m.ClusterRef != nil && f.MetricsName != m.ClusterRef.Name {
			mErrs = append(mErrs, field.Invalid(field.NewPath("metadata", "name"), f.MetricsName, fmt.Sprintf("must equal spec.clusterRef.name %q", m.ClusterRef.Name)))
		}
	}
	mErrs = append(mErrs, validateScrapers(m.Scrapers, root.Child("scrapers"))...)
	if m.Exposure != "" && m.Exposure != ExposureProxy && m.Exposure != ExposureBindAddress {
		mErrs = append(mErrs, field.NotSupported(root.Child("exposure"), m.Exposure, []Exposure{ExposureProxy, ExposureBindAddress}))
	}
	if l := m.Components.Etcd.MetricsLevel; l != "" && l != EtcdMetricsBasic && l != EtcdMetricsExtensive {
		mErrs = append(mErrs, field.NotSupported(root.Child("components", "etcd", "metricsLevel"), l, []EtcdMetricsLevel{EtcdMetricsBasic, EtcdMetricsExtensive}))
	}
	if v := m.TLS.MinVersion; v != "" && v != TLS12 && v != TLS13 {
		mErrs = append(mErrs, field.NotSupported(root.Child("tls", "minVersion"), v, []string{TLS12, TLS13}))
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
	for name, img := range map[string]string{"kubeRBACProxy": m.Images.KubeRBACProxy, "haproxy": m.Images.HAProxy} {
		if img != "" && (strings.ContainsAny(img, " \t\n") || strings.HasPrefix(img, "-")) {
			mErrs = append(mErrs, field.Invalid(root.Child("images", name), img, "must be an image reference such as registry/repository:tag"))
		}
	}

	// Version-dependent rules.
	kv := c.KubeVersion
	if kv.Major == 1 && !kv.AtLeast(ZPagesMinMinor) {
		for name, p := range map[string]*bool{"statusz": m.ZPages.Statusz, "flagz": m.ZPages.Flagz} {
			if p != nil && *p {
				mErrs = append(mErrs, field.Invalid(root.Child("zPages", name), true,
					fmt.Sprintf("z-pages need Kubernetes 1.%d or later (the Cluster runs %s); set it to false or upgrade first", ZPagesMinMinor, kv)))
			}
		}
	}

	// Plain-HTTP endpoints must not leave loopback by accident.
	if c.Exposure == ExposureBindAddress && !c.AllowInsecure {
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
	if c.Exposure == ExposureBindAddress {
		if c.ControllerManager || c.Scheduler {
			warn(f.lineIndex(), root.Child("exposure"), "bindAddress sets bind-address=0.0.0.0 on kube-controller-manager and kube-scheduler (a CIS 1.3.7/1.4.2 deviation) and rolls every control-plane machine once")
		}
		if c.AllowInsecure && (c.Etcd || c.KubeProxy) {
			warn(f.lineIndex(), root.Child("allowInsecure"), "etcd and kube-proxy metrics will be served as plain HTTP without authentication on every node address; restrict them with a host firewall")
		}
	}
	if c.ExternalEtcdScrape {
		warn(f.lineIndex(), root.Child("components", "etcd"), "the Cluster uses external etcd: nothing is patched; its metrics are on https://<etcd IP>:2379/metrics and need an etcd client certificate (the scrape configuration says so)")
	}
	if c.Provider == ProviderCloudStack {
		warn(f.clusterDoc.lines, cs.Child("datacenterRef", "kind"), "CloudStack was removed from EKS Anywhere in v0.26.0")
	}

	probs := f.lineIndex().problems(f.Path, mErrs)
	probs = append(probs, f.clusterDoc.lines.problems(f.Path, cErrs)...)
	if len(probs) > 0 {
		return warns, &InvalidError{Problems: probs}
	}
	return warns, nil
}

// lineIndex is the line index of the document holding the metrics section.
func (f *File) lineIndex() lineIndex {
	if f.metricsDoc != nil {
		return f.metricsDoc.lines
	}
	return f.clusterDoc.lines
}

func validateScrapers(scrapers []Scraper, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(scrapers) == 0 {
		return append(errs, field.Required(p, "at least one identity that may read metrics, e.g. {kind: ServiceAccount, name: prometheus-k8s, namespace: monitoring}"))
	}
	seen := map[Scraper]int{}
	for i, s := range scrapers {
		ip := p.Index(i)
		if j, dup := seen[s]; dup {
			errs = append(errs, field.Duplicate(ip, fmt.Sprintf("same as scrapers[%d]", j)))
			continue
		}
		seen[s] = i
		switch s.Kind {
		case ScraperServiceAccount:
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
		case ScraperUser, ScraperGroup:
			if s.Name == "" {
				errs = append(errs, field.Required(ip.Child("name"), "the user or group name"))
			}
			if s.Namespace != "" {
				errs = append(errs, field.Forbidden(ip.Child("namespace"), fmt.Sprintf("only a ServiceAccount has a namespace, not a %s", s.Kind)))
			}
			if strings.HasPrefix(s.Name, "system:serviceaccount:") {
				errs = append(errs, field.Invalid(ip.Child("name"), s.Name, "write a ServiceAccount as {kind: ServiceAccount, name, namespace}"))
			}
		default:
			errs = append(errs, field.NotSupported(ip.Child("kind"), s.Kind, []ScraperKind{ScraperServiceAccount, ScraperUser, ScraperGroup}))
		}
	}
	return errs
}

// MetricsWarning builds a warning located at a field of the metrics section;
// path is relative to the section, e.g. "zPages".
func (f *File) MetricsWarning(path, detail string) Warning {
	full := "spec." + path
	if f.Form == FormInline {
		full = "spec.metrics." + path
	}
	return Warning{Problem{File: f.Path, Line: f.lineIndex().lineOf(full), Field: full, Detail: detail}}
}
