package cluster

import (
	"slices"
	"strings"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
)

// mappedGroups and mappedKinds are the API groups and kinds eksa-metrics
// writes, prunes, watches or asks about by kind (everything else it reads
// through typed clients). A connection's RESTMapper holds these alone, not
// the whole discovery of a cluster that may serve hundreds of kinds: the
// controller holds a connection per workload cluster of its fleet.
// TestMappedGroupsCoverWhatIsRendered keeps the lists whole.
var mappedKinds = []string{
	"ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding",
	"ServiceAccount", "ConfigMap", "Secret", "Service", "Namespace",
	"DaemonSet", "Deployment",
	"ServiceMonitor", "PrometheusRule", "Package", "Certificate", "Issuer", "ClusterIssuer",
	"KubeadmControlPlane", "Cluster", "MetricsConfig",
}

var mappedGroups = []string{
	"", "apps", "rbac.authorization.k8s.io",
	"monitoring.coreos.com", "cert-manager.io", "packages.eks.amazonaws.com",
	"controlplane.cluster.x-k8s.io", "cluster.x-k8s.io",
	"anywhere.eks.amazonaws.com", "metrics.anywhere.eks.amazonaws.com",
}

// mappedDiscovery is the discovery a connection's DeferredDiscoveryRESTMapper
// is built from: the server's groups and resources for mappedGroups only.
// The mapper reads them once, and again only after a Reset (which calls
// Invalidate), so they are not kept once returned.
type mappedDiscovery struct {
	discovery.DiscoveryInterface

	mu    sync.Mutex
	fresh bool
}

var _ discovery.CachedDiscoveryInterface = &mappedDiscovery{}

func (d *mappedDiscovery) ServerGroupsAndResources() ([]*metav1.APIGroup, []*metav1.APIResourceList, error) {
	gs, rs, err := d.DiscoveryInterface.ServerGroupsAndResources()
	if gs == nil || rs == nil {
		return nil, nil, err
	}
	// A group that failed (an aggregated API that is down) is missing from
	// rs; what was read stands, as a memory-cached discovery's would.
	var groups []*metav1.APIGroup
	var resources []*metav1.APIResourceList
	for _, g := range gs {
		if slices.Contains(mappedGroups, g.Name) {
			groups = append(groups, g)
		}
	}
	for _, r := range rs {
		gv, perr := schema.ParseGroupVersion(r.GroupVersion)
		if perr != nil || !slices.Contains(mappedGroups, gv.Group) {
			continue
		}
		kept := &metav1.APIResourceList{TypeMeta: r.TypeMeta, GroupVersion: r.GroupVersion}
		for _, res := range r.APIResources {
			if slices.Contains(mappedKinds, res.Kind) && !strings.Contains(res.Name, "/") {
				kept.APIResources = append(kept.APIResources, res)
			}
		}
		resources = append(resources, kept)
	}
	d.mu.Lock()
	d.fresh = true
	d.mu.Unlock()
	return groups, resources, err
}

func (d *mappedDiscovery) ServerGroups() (*metav1.APIGroupList, error) {
	gs, _, err := d.ServerGroupsAndResources()
	if gs == nil {
		return nil, err
	}
	list := &metav1.APIGroupList{}
	for _, g := range gs {
		list.Groups = append(list.Groups, *g)
	}
	return list, nil
}

func (d *mappedDiscovery) Fresh() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.fresh
}

func (d *mappedDiscovery) Invalidate() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.fresh = false
}
