package controller

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/event"
)

// A failing Cluster is retried with a backoff of its own: 10 s, doubling,
// at most 5 minutes.
func TestBackoff(t *testing.T) {
	want := []time.Duration{10 * time.Second, 20 * time.Second, 40 * time.Second, 80 * time.Second, 160 * time.Second, 5 * time.Minute, 5 * time.Minute}
	for i, w := range want {
		if got := backoff(i + 1); got != w {
			t.Errorf("failure %d: %s, want %s", i+1, got, w)
		}
	}
}

// EKS-A's status churn on a Cluster is no re-plan; a spec, label, pause or
// busy change is.
func TestClusterChanged(t *testing.T) {
	base := func() *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "anywhere.eks.amazonaws.com/v1alpha1", "kind": "Cluster",
			"metadata": map[string]any{"name": "w1", "namespace": "default", "generation": int64(2), "labels": map[string]any{"metrics": "on"}},
			"status":   map[string]any{"reconciledGeneration": int64(2), "conditions": []any{map[string]any{"type": "Ready", "status": "True"}}}}}
		return u
	}
	for _, tc := range []struct {
		name string
		edit func(*unstructured.Unstructured)
		want bool
	}{
		{"status churn", func(u *unstructured.Unstructured) {
			_ = unstructured.SetNestedField(u.Object, int64(7), "status", "childrenReconciledGeneration")
		}, false},
		{"a spec change", func(u *unstructured.Unstructured) { u.SetGeneration(3) }, true},
		{"a label", func(u *unstructured.Unstructured) { u.SetLabels(map[string]string{"metrics": "off"}) }, true},
		{"paused", func(u *unstructured.Unstructured) { u.SetAnnotations(map[string]string{PausedAnnotation: "true"}) }, true},
		{"another annotation", func(u *unstructured.Unstructured) { u.SetAnnotations(map[string]string{"x": "y"}) }, false},
		{"EKS-A busy", func(u *unstructured.Unstructured) {
			_ = unstructured.SetNestedSlice(u.Object, []any{map[string]any{"type": "Ready", "status": "False"}}, "status", "conditions")
		}, true},
	} {
		n := base()
		tc.edit(n)
		if got := (clusterChanged{}).Update(event.UpdateEvent{ObjectOld: base(), ObjectNew: n}); got != tc.want {
			t.Errorf("%s: re-plan %t, want %t", tc.name, got, tc.want)
		}
	}
}
