package cluster

import (
	"slices"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/eksa-metrics/eksa-metrics/pkg/render"
)

// What the drift watch reports: another writer's change, never our own
// write or a status update.
func TestDriftIsAnotherWritersChange(t *testing.T) {
	at := func(s int) *metav1.Time { t := metav1.NewTime(time.Date(2026, 12, 1, 0, 0, s, 0, time.UTC)); return &t }
	obj := func(gen int64, rv string, labels map[string]string, managers ...metav1.ManagedFieldsEntry) *metav1.ObjectMeta {
		return &metav1.ObjectMeta{Generation: gen, ResourceVersion: rv, Labels: labels, ManagedFields: managers}
	}
	ours := metav1.ManagedFieldsEntry{Manager: FieldManager, Time: at(1)}
	kubectl := metav1.ManagedFieldsEntry{Manager: "kubectl-edit", Time: at(2)}
	status := metav1.ManagedFieldsEntry{Manager: "kube-controller-manager", Subresource: "status", Time: at(3)}
	for _, tc := range []struct {
		name     string
		old, new *metav1.ObjectMeta
		want     bool
	}{
		{"our own apply", obj(1, "1", nil, ours), obj(2, "2", nil, metav1.ManagedFieldsEntry{Manager: FieldManager, Time: at(5)}), false},
		{"kubectl edit of the spec", obj(1, "1", nil, ours), obj(2, "2", nil, ours, kubectl), true},
		{"a status update", obj(2, "2", nil, ours), obj(2, "3", nil, ours, status), false},
		{"a label taken away", obj(2, "2", map[string]string{"a": "b"}, ours), obj(2, "3", nil, ours, kubectl), true},
		{"RBAC (no generation) edited", obj(0, "1", nil, ours), obj(0, "2", nil, ours, kubectl), true},
		{"a resync", obj(0, "1", nil, ours, kubectl), obj(0, "1", nil, ours, kubectl), false},
		{"ours and another's in the same second", obj(0, "1", nil, ours), obj(0, "2", nil, metav1.ManagedFieldsEntry{Manager: FieldManager, Time: at(2)}, kubectl), true},
	} {
		var drifts []Drift
		s := &driftStore{kind: "ClusterRole", ours: func(metav1.Object) bool { return true }, drifted: func(d Drift) { drifts = append(drifts, d) }}
		tc.old.Name, tc.new.Name = "reader", "reader"
		_ = s.Replace([]any{tc.old}, "1") // the first list is not drift
		_ = s.Update(tc.new)
		if got := len(drifts) == 1; got != tc.want || len(drifts) > 1 {
			t.Errorf("%s: drift %v, want %t", tc.name, drifts, tc.want)
		}
	}
}

// A watch lost and listed again reports what changed or went meanwhile,
// and a creation by another writer; the first list reports nothing.
func TestDriftAcrossARelist(t *testing.T) {
	var drifts []Drift
	s := &driftStore{kind: "Service", ours: func(o metav1.Object) bool { return o.GetLabels()["c"] == "w1" }, drifted: func(d Drift) { drifts = append(drifts, d) }}
	kubectl := []metav1.ManagedFieldsEntry{{Manager: "kubectl", Time: &metav1.Time{Time: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)}}}
	obj := func(name, rv, cluster string) *metav1.PartialObjectMetadata {
		return &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: name, ResourceVersion: rv, Labels: map[string]string{"c": cluster}, ManagedFields: kubectl}}
	}
	_ = s.Replace([]any{obj("a", "1", "w1"), obj("b", "1", "w1"), obj("other", "1", "w2")}, "1")
	if len(drifts) != 0 {
		t.Fatalf("the first list reported %v", drifts)
	}
	_ = s.Replace([]any{obj("a", "2", "w1"), obj("new", "3", "w1")}, "3")
	want := []Drift{{"Service kube-system/a", "edited"}, {"Service kube-system/new", "created"}, {"Service kube-system/b", "deleted"}}
	if !slices.Equal(drifts, want) {
		t.Errorf("after the relist: %v, want %v", drifts, want)
	}
}

// The watches of a cluster are of the kinds rendered into it, each once.
func TestInventoryKindsAreWhatIsRenderedThere(t *testing.T) {
	obj := func(d render.Destination, kind string) render.Object {
		return render.Object{Destination: d, Object: map[string]any{"kind": kind}}
	}
	res := &render.Result{Objects: []render.Object{
		obj(render.Workload, "Service"), obj(render.Workload, "DaemonSet"), obj(render.Workload, "Service"),
		obj(render.Management, "Secret"), obj(render.Workload, "ClusterRole"),
	}}
	if got, want := InventoryKinds(res, render.Workload), []string{"ClusterRole", "DaemonSet", "Service"}; !slices.Equal(got, want) {
		t.Errorf("workload: %v, want %v", got, want)
	}
	if got, want := InventoryKinds(res, render.Management), []string{"Secret"}; !slices.Equal(got, want) {
		t.Errorf("management: %v, want %v", got, want)
	}
	if got, want := InventoryKinds(res, render.Management, render.Workload), []string{"ClusterRole", "DaemonSet", "Secret", "Service"}; !slices.Equal(got, want) {
		t.Errorf("the management Cluster itself: %v, want %v", got, want)
	}
	// What is applied to the workload cluster is what its watches cover:
	// the scrape configuration's ServiceMonitors too.
	a := &Applier{Management: &Cluster{Role: "management"}, Workload: &Cluster{Role: "workload"}}
	for _, d := range render.Destinations {
		if got := a.clusterFor(d) == a.Workload; got != slices.Contains(WorkloadDestinations, d) {
			t.Errorf("destination %s: applied to the workload cluster %v, in WorkloadDestinations %v", d, got, !got)
		}
	}
	res.Objects = append(res.Objects, obj(render.Prometheus, "ServiceMonitor"))
	if got := InventoryKinds(res, WorkloadDestinations...); !slices.Contains(got, "ServiceMonitor") {
		t.Errorf("the workload cluster's watches leave out its ServiceMonitors: %v", got)
	}
}

// A watch reports an object that left its selection (another Cluster on
// the same API server took it) as deleted, with its old labels: that is not
// drift, or the two Clusters would take it from each other without end. An
// object really gone is.
func TestDriftIgnoresAnObjectAnotherClusterTook(t *testing.T) {
	now := map[string]*metav1.ObjectMeta{"taken": {Name: "taken", Labels: map[string]string{"c": "w2"}}}
	var drifts []Drift
	s := &driftStore{kind: "Service", ours: func(o metav1.Object) bool { return o.GetLabels()["c"] == "w1" }, drifted: func(d Drift) { drifts = append(drifts, d) },
		current: func(_, name string) (metav1.Object, error) {
			if o, ok := now[name]; ok {
				return o, nil
			}
			return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "services"}, name)
		}}
	obj := func(name string) *metav1.PartialObjectMetadata {
		return &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: name, ResourceVersion: "1", Labels: map[string]string{"c": "w1"}}}
	}
	_ = s.Replace([]any{obj("taken"), obj("gone"), obj("relisted-taken"), obj("relisted-gone")}, "1")
	_ = s.Delete(obj("taken"))
	_ = s.Delete(obj("gone"))
	now["relisted-taken"] = &metav1.ObjectMeta{Name: "relisted-taken", Labels: map[string]string{"c": "w2"}}
	_ = s.Replace(nil, "2")
	want := []Drift{{"Service kube-system/gone", "deleted"}, {"Service kube-system/relisted-gone", "deleted"}}
	if !slices.Equal(drifts, want) {
		t.Errorf("drift %v, want %v", drifts, want)
	}
}

// A watch the API server refuses (its rights taken away, its credentials no
// longer accepted) leaves its store unsynced: plans read the API server
// instead of trusting what the store held, until a list succeeds again.
func TestARefusedWatchIsNotTrusted(t *testing.T) {
	s := &driftStore{kind: "Service", ours: func(metav1.Object) bool { return true }, drifted: func(Drift) {}, listed: make(chan struct{})}
	if s.synced() {
		t.Fatal("synced before the first list")
	}
	_ = s.Replace(nil, "1")
	if !s.synced() {
		t.Fatal("not synced after the first list")
	}
	s.failed(apierrors.NewServiceUnavailable("restarting"))
	if !s.synced() {
		t.Error("a transient error made the store untrusted")
	}
	gr := schema.GroupResource{Resource: "services"}
	for _, err := range []error{apierrors.NewForbidden(gr, "", nil), apierrors.NewUnauthorized("token expired")} {
		s.failed(err)
		if s.synced() {
			t.Errorf("still trusted after %v", err)
		}
		_ = s.Replace(nil, "2")
		if !s.synced() {
			t.Errorf("not trusted again after a list that succeeded (after %v)", err)
		}
	}
}
