package controller

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"

	metricsv1alpha1 "github.com/eksa-metrics/eksa-metrics/pkg/apis/metrics/v1alpha1"
	"github.com/eksa-metrics/eksa-metrics/pkg/render"
	"github.com/eksa-metrics/eksa-metrics/pkg/spec"
)

// Policy is what the operator who installs the controller decides (its
// flags), and what no MetricsConfig can change: the controller acts for
// whoever writes a MetricsConfig, so it must never let that person do more
// than they could do themselves.
//
// The model is Cluster API's ClusterResourceSet and Sveltos' Profile: a
// MetricsConfig only ever selects Clusters in its own namespace, and an
// empty selector selects nothing. Namespaces come in two tiers:
//
//   - privileged (the management Cluster's namespace and those named by
//     --privileged-namespace): whoever may write there is a platform
//     administrator; a MetricsConfig there may select the management
//     cluster and use every field.
//   - every other namespace is a tenant's: a MetricsConfig there gets
//     metrics of its own Clusters and nothing else: no management cluster,
//     no bindAddress exposure, no allowInsecure, no control-plane rollout, no
//     z-pages (they roll the control plane on 1.33 to 1.35 and /flagz shows
//     every flag), and scrapers that are ServiceAccounts only.
//
// Images never come from a MetricsConfig, in any tier: they run next to
// serving keys and scraper tokens, and on a management cluster inside the
// pods of cert-manager and the packages controller. They come from Images (flags), else from
// EKS Anywhere's Bundles by digest (ImagesFromBundles), else the pinned
// defaults.
type Policy struct {
	// ManagementCluster is the EKS-A Cluster object of the management
	// cluster the controller runs in (--management-cluster). A Cluster is
	// treated as the management cluster (reached with the controller's own
	// identity, its management controllers edited) only when it is this one;
	// a Cluster that claims to manage itself and is not this one is refused.
	ManagementCluster types.NamespacedName
	// PrivilegedNamespaces are the namespaces whose MetricsConfigs may use
	// every field, besides the management Cluster's.
	PrivilegedNamespaces []string
	// Images are the proxy images (--kube-rbac-proxy-image, --haproxy-image)
	// and the kubelet approver's (--eksa-metrics-image).
	Images metricsv1alpha1.Images
	// MonitoringNamespaces are where, on the management cluster, the
	// controller may write scrape configuration (it holds Roles there).
	MonitoringNamespaces []string
	// Namespaces are where, on the management cluster, the controller
	// holds Roles (nil: it has cluster-wide rights).
	Namespaces []string
	// ImagesFromBundles takes the images, where Images names none, from the
	// EKS Anywhere Bundles of each Cluster, pinned by digest.
	ImagesFromBundles bool
}

// Privileged reports whether MetricsConfigs in namespace ns are a platform
// administrator's.
func (p Policy) Privileged(ns string) bool {
	return (p.ManagementCluster.Name != "" && ns == p.ManagementCluster.Namespace) || slices.Contains(p.PrivilegedNamespaces, ns)
}

// IsManagement reports whether the Cluster is the management cluster the
// controller runs in.
func (p Policy) IsManagement(namespace, name string) bool {
	return p.ManagementCluster.Name != "" && p.ManagementCluster == types.NamespacedName{Namespace: namespace, Name: name}
}

// NotAllowedError lists what a MetricsConfig asks for that its author may
// not have the controller do.
type NotAllowedError struct {
	Problems field.ErrorList
}

func (e *NotAllowedError) Error() string {
	var b strings.Builder
	for i, p := range e.Problems {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(p.Field + ": " + p.Detail)
	}
	return b.String()
}

// admit checks a MetricsConfig and one Cluster it selects against the
// policy; it returns a *NotAllowedError, or nil.
func (p Policy) admit(mc *metricsv1alpha1.MetricsConfig, obj *unstructured.Unstructured) error {
	var errs field.ErrorList
	s := field.NewPath("spec")
	if mc.Spec.Images != (metricsv1alpha1.Images{}) {
		errs = append(errs, field.Forbidden(s.Child("images"), "images are the controller's to choose (its --kube-rbac-proxy-image, --haproxy-image and --images-from-bundles flags), never a MetricsConfig's: remove spec.images"))
	}
	claimsManagement := selfManaged(obj)
	management := p.IsManagement(obj.GetNamespace(), obj.GetName())
	switch {
	case claimsManagement && !management && p.ManagementCluster.Name == "":
		errs = append(errs, field.Forbidden(field.NewPath("Cluster", obj.GetName(), "spec", "managementCluster"),
			"the Cluster says it manages itself, and the controller was not told which Cluster is its own management cluster: start it with --management-cluster="+obj.GetNamespace()+"/"+obj.GetName()+" if this is the one it runs in"))
	case claimsManagement && !management:
		errs = append(errs, field.Forbidden(field.NewPath("Cluster", obj.GetName(), "spec", "managementCluster"),
			fmt.Sprintf("the Cluster says it manages itself, but the controller runs in the management cluster %s: a Cluster is the management cluster only when it is that one", p.ManagementCluster)))
	case management && !claimsManagement:
		errs = append(errs, field.Forbidden(field.NewPath("Cluster", obj.GetName(), "spec", "managementCluster"),
			fmt.Sprintf("--management-cluster names this Cluster, but it says it is managed by %q: fix the flag", managedBy(obj))))
	}
	if on(mc.Spec.TLS.KubeletServingCertificates) && management {
		errs = append(errs, field.Forbidden(s.Child("tls", "kubeletServingCertificates"),
			"the controller runs no kubelet approver on the management cluster it runs in (its admission policy lets it create no Deployment and grant no approval there): apply the management cluster's own spec with eksa-metrics apply"))
	}
	if !p.Privileged(mc.Namespace) {
		tenant := func(path *field.Path, what string) {
			errs = append(errs, field.Forbidden(path, what+" only a MetricsConfig in a privileged namespace may ask for (the management Cluster's namespace, or one the controller names with --privileged-namespace); namespace "+mc.Namespace+" is not one"))
		}
		if management {
			tenant(field.NewPath("Cluster", obj.GetName()), "the management cluster is a Cluster")
		}
		if mc.Spec.Exposure == metricsv1alpha1.ExposureBindAddress {
			tenant(s.Child("exposure"), "bindAddress (it rolls the control plane and binds the components beyond loopback) is what")
		}
		if mc.Spec.AllowInsecure {
			tenant(s.Child("allowInsecure"), "plain-HTTP endpoints beyond loopback are what")
		}
		if on(mc.Spec.TLS.KubeletServingCertificates) {
			tenant(s.Child("tls", "kubeletServingCertificates"), "an approver of the kubelets' serving certificates (it rolls every node) is what")
		}
		if mc.Spec.AllowControlPlaneRollout {
			tenant(s.Child("allowControlPlaneRollout"), "a control-plane rollout is what")
		}
		if on(mc.Spec.ZPages.Statusz) || on(mc.Spec.ZPages.Flagz) {
			tenant(s.Child("zPages"), "z-pages (/flagz shows every flag of a component; on 1.33 to 1.35 they roll the control plane) are what")
		}
		for i, sc := range mc.Spec.Scrapers {
			if sc.Kind != metricsv1alpha1.ScraperServiceAccount {
				tenant(s.Child("scrapers").Index(i).Child("kind"), "a scraper that is a "+string(sc.Kind)+" rather than a ServiceAccount is what")
			}
			// The controller writes a token Secret (a token that never
			// expires) for a ServiceAccount scraper, with the workload
			// cluster's admin kubeconfig: in a system namespace that is a
			// token of a controller's or an operator's identity.
			if sc.Kind == metricsv1alpha1.ScraperServiceAccount && SystemNamespace(sc.Namespace) {
				tenant(s.Child("scrapers").Index(i).Child("namespace"), "a scraper ServiceAccount in system namespace "+sc.Namespace+" (the controller would mint a never-expiring token of that identity) is what")
			}
		}
		if ns := mc.Spec.ScrapeConfig.Namespace; SystemNamespace(ns) {
			tenant(s.Child("scrapeConfig", "namespace"), "scrape configuration and a scraper token in system namespace "+ns+" are what")
		}
	}
	if len(errs) == 0 {
		return nil
	}
	return &NotAllowedError{Problems: errs}
}

func on(b *bool) bool { return b != nil && *b }

// tenantManagementObjects holds what a tenant's MetricsConfig has written
// in the management cluster to what concerns its own Cluster alone: the
// prometheus Package of the eks-anywhere stack in EKS-A's namespace for
// that Cluster (eksa-packages-<cluster>), and the Cluster's own
// KubeadmControlPlane items (which admit keeps from rolling). Anything else
// a render may one day put there is refused, not written.
func tenantManagementObjects(res *render.Result) error {
	var errs field.ErrorList
	for _, o := range res.Objects {
		if o.Destination != render.Management {
			continue
		}
		ownPackage := o.Kind() == "Package" && o.Namespace() == "eksa-packages-"+res.Config.ClusterName
		ownKCP := o.Kind() == "KubeadmControlPlane" && o.Namespace() == EKSASystemNamespace && o.Name() == res.Config.ClusterName
		if !ownPackage && !ownKCP {
			errs = append(errs, field.Forbidden(field.NewPath("spec"), fmt.Sprintf(
				"the render puts %s in the management cluster; a MetricsConfig outside the privileged namespaces may have written there only its Cluster's prometheus Package (eksa-packages-%s) and its KubeadmControlPlane items", o, res.Config.ClusterName)))
		}
	}
	if len(errs) == 0 {
		return nil
	}
	return &NotAllowedError{Problems: errs}
}

// systemPrefixes are the namespaces of Kubernetes, EKS Anywhere, Cluster API
// and its providers, etcdadm and cert-manager (docs/controller.md).
var systemPrefixes = []string{"kube-", "eksa-", "capi-", "capd-", "capv-", "capx-", "capt-", "capc-", "capas-", "etcdadm-", "cert-manager", "tinkerbell-", "flux-system"}

// SystemNamespace: ns is a namespace of the platform's own controllers,
// whose ServiceAccounts a tenant's MetricsConfig may not name.
func SystemNamespace(ns string) bool {
	return slices.ContainsFunc(systemPrefixes, func(p string) bool { return strings.HasPrefix(ns, p) })
}

// selfManaged: the Cluster says it is a management cluster (no
// managementCluster, or itself).
func selfManaged(obj *unstructured.Unstructured) bool {
	m := managedBy(obj)
	return m == "" || m == obj.GetName()
}

func managedBy(obj *unstructured.Unstructured) string {
	name, _, _ := unstructured.NestedString(obj.Object, "spec", "managementCluster", "name")
	return name
}

// images are the images a render uses: the controller's flags, else
// (when ImagesFromBundles) the Cluster's Bundles, else the defaults.
func (p Policy) images(in *spec.Input) { in.Metrics.Images = p.Images }

// holds checks that the controller holds a Role in every namespace where a
// render puts namespaced objects in its own management cluster (the Roles
// of `controller manifests`; the Package goes to EKS-A's per-Cluster
// namespace, which its ClusterRole covers).
func (p Policy) holds(res *render.Result) error {
	namespaces := p.Namespaces
	if namespaces == nil {
		return nil // an identity with cluster-wide rights (tests, a kubeconfig)
	}
	missing := map[string]bool{}
	for _, o := range res.Objects {
		if ns := o.Namespace(); ns != "" && o.Kind() != "Package" && !slices.Contains(namespaces, ns) {
			missing[ns] = true
		}
	}
	if len(missing) == 0 {
		return nil
	}
	return &NotAllowedError{Problems: field.ErrorList{field.Forbidden(field.NewPath("spec", "scrapeConfig", "namespace"),
		fmt.Sprintf("the controller holds no rights in namespace %s of the management cluster: install it with `eksa-metrics controller manifests --monitoring-namespace %s`, or choose one of %s",
			strings.Join(slices.Sorted(maps.Keys(missing)), ", "), strings.Join(slices.Sorted(maps.Keys(missing)), " --monitoring-namespace "), strings.Join(p.MonitoringNamespaces, ", ")))}}
}
