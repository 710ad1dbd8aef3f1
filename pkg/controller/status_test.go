package controller

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	metricsv1alpha1 "github.com/eksa-metrics/eksa-metrics/pkg/apis/metrics/v1alpha1"
)

// A Cluster's state: failures back off on their own, a success resets
// them, a released Cluster is no longer had, and a MetricsConfig's status
// is written at most once per interval.
func TestResults(t *testing.T) {
	r := newResults()
	mc := types.NamespacedName{Namespace: "default", Name: "fleet"}
	st := metricsv1alpha1.ClusterStatus{Name: "w1", LastError: "unreachable"}
	if d := r.set(mc, st, true); d != 10*time.Second {
		t.Errorf("first failure: retry after %s", d)
	}
	if d := r.set(mc, st, true); d != 20*time.Second {
		t.Errorf("second failure: retry after %s", d)
	}
	if d := r.set(mc, metricsv1alpha1.ClusterStatus{Name: "w1"}, false); d != 0 {
		t.Errorf("success: retry after %s", d)
	}
	if d := r.set(mc, st, true); d != 10*time.Second {
		t.Errorf("a failure after a success starts again: %s", d)
	}
	if !r.has(mc, "w1") || !r.any(types.NamespacedName{Namespace: "default", Name: "w1"}) || r.any(types.NamespacedName{Namespace: "other", Name: "w1"}) {
		t.Error("has/any before release")
	}
	r.release(mc, "w1")
	if r.has(mc, "w1") || r.any(types.NamespacedName{Namespace: "default", Name: "w1"}) || !r.snapshot(mc)["w1"].released {
		t.Error("released Cluster still had")
	}
	now := time.Now()
	if d := r.throttle(mc, now); d != 0 {
		t.Errorf("first write waits %s", d)
	}
	if d := r.throttle(mc, now.Add(500*time.Millisecond)); d != statusInterval-500*time.Millisecond {
		t.Errorf("second write within the interval waits %s", d)
	}
	if d := r.throttle(mc, now.Add(statusInterval)); d != 0 {
		t.Errorf("write after the interval waits %s", d)
	}
	r.forget(mc)
	if len(r.snapshot(mc)) != 0 {
		t.Error("forgotten MetricsConfig has states")
	}
}
