package cluster

import (
	"context"
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	fakedynamic "k8s.io/client-go/dynamic/fake"
	kubetesting "k8s.io/client-go/testing"

	"github.com/eksa-metrics/eksa-metrics/pkg/templates"
)

// With a Cluster's inventory watches synced, its plans read nothing the
// watches and its own last apply already tell: an object they do not hold
// is read (it may be there and not the Cluster's), one at the resourceVersion the last apply of the same
// content returned is unchanged, and prune lists no watched kind and an
// unwatched one once. Anything else is read, as without watches.
func TestPlansReadWhatTheWatchesCannotTell(t *testing.T) {
	services := schema.GroupVersionResource{Version: "v1", Resource: "services"}
	dyn := fakedynamic.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		services: "ServiceList", {Version: "v1", Resource: "serviceaccounts"}: "ServiceAccountList"})
	var requests []string
	dyn.PrependReactor("*", "*", func(a kubetesting.Action) (bool, runtime.Object, error) {
		requests = append(requests, a.GetVerb()+" "+a.GetResource().Resource)
		if a.GetVerb() == "patch" {
			out := &unstructured.Unstructured{}
			out.SetResourceVersion("5")
			return true, out, nil
		}
		return false, nil, nil
	})
	core := &metav1.APIResourceList{GroupVersion: "v1", APIResources: []metav1.APIResource{
		{Name: "services", Namespaced: true, Kind: "Service"}, {Name: "serviceaccounts", Namespaced: true, Kind: "ServiceAccount"}}}
	c := &Cluster{Role: "workload", Dynamic: dyn, mapper: newMapper(fakeDiscovery(core))}
	store := &driftStore{kind: "Service", ours: func(metav1.Object) bool { return true }, drifted: func(Drift) {}, listed: make(chan struct{})}
	_ = store.Replace(nil, "1")
	h := newHeld()
	h.stores[kindIn{"Service", "", ""}] = store
	c.hold("w1", h)

	svc := func(port int64) map[string]any {
		return map[string]any{"apiVersion": "v1", "kind": "Service", "metadata": map[string]any{"name": "eksa-metrics-etcd", "namespace": "kube-system",
			"labels": map[string]any{templates.ManagedByLabel: templates.Prefix, templates.ClusterLabel: "w1"}}, "spec": map[string]any{"ports": []any{map[string]any{"port": port}}}}
	}
	plan := func(obj map[string]any) Action {
		t.Helper()
		s, err := c.PlanObject(context.Background(), obj)
		if err != nil {
			t.Fatal(err)
		}
		return s.Action
	}
	// Not held: read (one of that name that is not the Cluster's would be
	// taken over by an apply), then created.
	if a := plan(svc(2379)); a != Create || !slices.Equal(requests, []string{"get services"}) {
		t.Fatalf("a Service the watch does not hold: %s after %v, want create after a read", a, requests)
	}
	s, _ := c.PlanObject(context.Background(), svc(2379))
	if err := c.execute(context.Background(), s, ExecuteOptions{}, map[namespaceOf]bool{{c, "kube-system"}: true}); err != nil {
		t.Fatal(err)
	}
	requests = nil
	live := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "eksa-metrics-etcd", ResourceVersion: "5", UID: "u1",
		ManagedFields: []metav1.ManagedFieldsEntry{{Manager: FieldManager, Operation: metav1.ManagedFieldsOperationApply}}}}
	_ = store.Add(live) // the watch sees the apply
	if a := plan(svc(2379)); a != Unchanged || len(requests) != 0 {
		t.Errorf("the Service as last applied: %s after %v, want unchanged after no request", a, requests)
	}
	// Another content, or another writer since: read.
	for name, edit := range map[string]func() map[string]any{
		"another port": func() map[string]any { return svc(2380) },
		"another writer since": func() map[string]any {
			edited := live.DeepCopy()
			edited.ResourceVersion = "6"
			edited.Annotations = map[string]string{"by": "kubectl"}
			_ = store.Update(edited)
			return svc(2379)
		},
	} {
		requests = nil
		plan(edit())
		if !slices.Equal(requests, []string{"get services"}) {
			t.Errorf("%s: requests %v, want one read", name, requests)
		}
	}

	// Prune: the watched Service from the watch (not one labelled for the
	// Cluster that eksa-metrics never applied), the ServiceAccounts listed
	// once.
	_ = store.Add(&metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "labelled-by-hand", ResourceVersion: "7", UID: "u2",
		ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationUpdate}}}})
	requests = nil
	for range 2 {
		steps, err := c.pruneSteps(context.Background(), "w1", map[string]bool{})
		if err != nil {
			t.Fatal(err)
		}
		if len(steps) != 1 || steps[0].Name() != "Service kube-system/eksa-metrics-etcd" || steps[0].Object["metadata"].(map[string]any)["uid"] != "u1" {
			t.Errorf("prune steps %v, want the Service, by its UID", steps)
		}
	}
	if !slices.Equal(requests, []string{"list serviceaccounts"}) {
		t.Errorf("two prunes sent %v, want one list of the kind not watched", requests)
	}
	// A Cluster without watches here reads as before.
	requests = nil
	other := svc(2379)
	other["metadata"].(map[string]any)["labels"].(map[string]any)[templates.ClusterLabel] = "w2"
	plan(other)
	if !slices.Equal(requests, []string{"get services"}) {
		t.Errorf("another Cluster's plan: %v, want one read", requests)
	}
}
