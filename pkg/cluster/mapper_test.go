package cluster

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	fakediscovery "k8s.io/client-go/discovery/fake"
	kubetesting "k8s.io/client-go/testing"
)

func fakeDiscovery(lists ...*metav1.APIResourceList) *fakediscovery.FakeDiscovery {
	return &fakediscovery.FakeDiscovery{Fake: &kubetesting.Fake{Resources: lists}}
}

var (
	coreList    = &metav1.APIResourceList{GroupVersion: "v1", APIResources: []metav1.APIResource{{Name: "services", Namespaced: true, Kind: "Service"}}}
	monitorList = &metav1.APIResourceList{GroupVersion: "monitoring.coreos.com/v1", APIResources: []metav1.APIResource{{Name: "servicemonitors", Namespaced: true, Kind: "ServiceMonitor"}}}
)

// Two connections whose servers serve the same kinds share one mapping; a
// kind missing from it sends the connection to the server again, at most
// once per rediscoverAfter, so that a CRD installed later is seen.
func TestMapperIsSharedAndRediscoversAMissingKind(t *testing.T) {
	now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	a, b := newMapper(fakeDiscovery(coreList)), newMapper(fakeDiscovery(coreList))
	a.now, b.now = clock, clock
	if _, err := a.RESTMapping(schema.GroupKind{Kind: "Service"}, "v1"); err != nil {
		t.Fatal(err)
	}
	if _, err := b.RESTMapping(schema.GroupKind{Kind: "Service"}, "v1"); err != nil {
		t.Fatal(err)
	}
	if a.shared != b.shared {
		t.Error("two connections with the same discovery hold two mappings")
	}
	sm := schema.GroupKind{Group: "monitoring.coreos.com", Kind: "ServiceMonitor"}
	fake := a.discovery.(*mappedDiscovery).DiscoveryInterface.(*fakediscovery.FakeDiscovery)
	fake.Resources = append(fake.Resources, monitorList) // the CRD is installed
	if _, err := a.RESTMapping(sm, "v1"); !meta.IsNoMatchError(err) {
		t.Errorf("within a minute of the last discovery: %v, want no match", err)
	}
	now = now.Add(rediscoverAfter)
	if m, err := a.RESTMapping(sm, "v1"); err != nil || m.Resource.Resource != "servicemonitors" {
		t.Errorf("a minute later: %v, %v; want servicemonitors", m, err)
	}
	if a.shared == b.shared {
		t.Error("the connection that now serves ServiceMonitors still shares the other's mapping")
	}
	if _, err := b.RESTMapping(sm, "v1"); !meta.IsNoMatchError(err) {
		t.Errorf("the other connection: %v, want no match", err)
	}
}

// A mapping no connection uses is freed with its entry: a workload API
// server that serves another discovery on every rediscovery does not grow
// the process.
func TestUnusedMappingsAreFreed(t *testing.T) {
	count := func() (n int) {
		mappings.Range(func(any, any) bool { n++; return true })
		return n
	}
	start := count()
	now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	m := newMapper(fakeDiscovery(coreList))
	m.now = func() time.Time { return now }
	fake := m.discovery.(*mappedDiscovery).DiscoveryInterface.(*fakediscovery.FakeDiscovery)
	for i := range 200 {
		// Another version each time: another discovery, another mapping.
		fake.Resources = []*metav1.APIResourceList{coreList, {GroupVersion: fmt.Sprintf("monitoring.coreos.com/v%d", i+1),
			APIResources: []metav1.APIResource{{Name: "servicemonitors", Namespaced: true, Kind: "ServiceMonitor"}}}}
		now = now.Add(rediscoverAfter)
		if _, err := m.RESTMapping(schema.GroupKind{Group: "monitoring.coreos.com", Kind: "Prometheus"}); !meta.IsNoMatchError(err) {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for count() > start+1 && time.Now().Before(deadline) {
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
	if n := count() - start; n > 1 {
		t.Errorf("%d mappings kept after 200 rediscoveries; one is in use", n)
	}
	runtime.KeepAlive(m)
	if _, err := m.RESTMapping(schema.GroupKind{Kind: "Service"}, "v1"); err != nil {
		t.Errorf("the mapping in use was freed: %v", err)
	}
}
