package cluster

import (
	"crypto/sha256"
	"encoding/json"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"
	"weak"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/restmapper"
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
	"KubeadmControlPlane", "Cluster", "MetricsConfig", "MetricsConfigBinding",
}

var mappedGroups = []string{
	"", "apps", "rbac.authorization.k8s.io",
	"monitoring.coreos.com", "cert-manager.io", "packages.eks.amazonaws.com",
	"controlplane.cluster.x-k8s.io", "cluster.x-k8s.io",
	"anywhere.eks.amazonaws.com", "metrics.anywhere.eks.amazonaws.com",
}

// mappedDiscovery is the discovery a connection's mapper is built from: the
// server's groups and resources for mappedGroups only.
type mappedDiscovery struct {
	discovery.DiscoveryInterface
}

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

// rediscoverAfter is how long a connection's mapping stands before a kind
// it does not have sends it to the server again: a CRD installed after the
// controller connected (prometheus-operator's, cert-manager's) is seen
// within that time, and a kind a cluster does not serve costs at most one
// discovery per interval.
const rediscoverAfter = time.Minute

// mapper is a connection's RESTMapper. It reads the server's discovery
// (mappedGroups and mappedKinds only) on first use, and again when a kind
// is missing and the mapping is older than rediscoverAfter. Connections
// whose discovery reads the same share one mapping: a fleet's clusters of
// one EKS Anywhere release serve the same kinds, and the controller holds a
// connection per workload cluster.
type mapper struct {
	discovery discovery.DiscoveryInterface
	now       func() time.Time

	mu     sync.Mutex
	shared *mapping
	read   time.Time
}

// mapping is a RESTMapper built from one discovery, shared.
type mapping struct{ meta.RESTMapper }

func newMapper(dc discovery.DiscoveryInterface) *mapper {
	return &mapper{discovery: &mappedDiscovery{DiscoveryInterface: dc}, now: time.Now}
}

// mappings are the mappings in use, by a hash of the discovery they were
// built from; a handful in any fleet. Each is held weakly: once no
// connection uses one (its clusters released, or rediscovered to another),
// the garbage collector frees it and its entry goes, so a workload API
// server that serves another discovery every minute cannot grow it.
var mappings sync.Map // [32]byte -> weak.Pointer[mapping]

// intern returns the mapping in use for a discovery's hash, or the one
// build makes, registered.
func intern(sum [32]byte, build func() *mapping) *mapping {
	for {
		old, loaded := mappings.Load(sum)
		if loaded {
			if m := old.(weak.Pointer[mapping]).Value(); m != nil {
				return m
			}
		}
		m := build()
		wp := weak.Make(m)
		if loaded {
			if !mappings.CompareAndSwap(sum, old, wp) {
				continue
			}
		} else if _, raced := mappings.LoadOrStore(sum, wp); raced {
			continue
		}
		runtime.AddCleanup(m, func(k [32]byte) { mappings.CompareAndDelete(k, wp) }, sum)
		return m
	}
}

// RESTMapping is meta.RESTMapper's.
func (m *mapper) RESTMapping(gk schema.GroupKind, versions ...string) (*meta.RESTMapping, error) {
	delegate, err := m.get(false)
	if err != nil {
		return nil, err
	}
	mapping, err := delegate.RESTMapping(gk, versions...)
	if meta.IsNoMatchError(err) {
		m.mu.Lock()
		stale := m.now().Sub(m.read) >= rediscoverAfter
		m.mu.Unlock()
		if stale {
			if delegate, err = m.get(true); err != nil {
				return nil, err
			}
			mapping, err = delegate.RESTMapping(gk, versions...)
		}
	}
	return mapping, err
}

func (m *mapper) get(again bool) (*mapping, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.shared != nil && !again {
		return m.shared, nil
	}
	resources, err := restmapper.GetAPIGroupResources(m.discovery)
	if err != nil {
		return nil, err
	}
	raw, err := json.Marshal(resources)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(raw)
	m.shared = intern(sum, func() *mapping { return &mapping{restmapper.NewDiscoveryRESTMapper(resources)} })
	m.read = m.now()
	return m.shared, nil
}
