package cluster

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
		if got := changed(tc.old, tc.new) && !ownWrite(tc.new); got != tc.want {
			t.Errorf("%s: drift %t, want %t", tc.name, got, tc.want)
		}
	}
}
