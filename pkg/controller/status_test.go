package controller

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	metricsv1alpha1 "github.com/eksa-metrics/eksa-metrics/pkg/apis/metrics/v1alpha1"
)

// What the Cluster controller keeps in memory: failures back off on their
// own, a success resets them, a released Cluster is known as released,
// drift repairs wait for the binding's next write, and a MetricsConfig's
// status is written at most once per interval.
func TestResults(t *testing.T) {
	r := newResults()
	mc := types.NamespacedName{Namespace: "default", Name: "fleet"}
	k := bindingKey{mc, "w1"}
	if _, known := r.state(k); known {
		t.Error("a Cluster never seen is known")
	}
	if d := r.done(k, true); d != 10*time.Second {
		t.Errorf("first failure: retry after %s", d)
	}
	if d := r.done(k, true); d != 20*time.Second {
		t.Errorf("second failure: retry after %s", d)
	}
	if d := r.done(k, false); d != 0 {
		t.Errorf("success: retry after %s", d)
	}
	if d := r.done(k, true); d != 10*time.Second {
		t.Errorf("a failure after a success starts again: %s", d)
	}
	if applied, known := r.state(k); !applied || !known {
		t.Error("applied Cluster not known as applied")
	}
	r.release(k)
	if applied, known := r.state(k); applied || !known {
		t.Error("released Cluster not known as released")
	}
	cluster := types.NamespacedName{Namespace: "default", Name: "w1"}
	r.drifted(cluster)
	r.drifted(cluster)
	if n := r.pendingDrifts(cluster); n != 2 {
		t.Errorf("pending drift repairs: %d", n)
	}
	r.recordedDrifts(cluster, 2)
	if n := r.pendingDrifts(cluster); n != 0 {
		t.Errorf("pending drift repairs after they were recorded: %d", n)
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
	if _, known := r.state(k); known {
		t.Error("forgotten MetricsConfig has states")
	}
}

// The binding's reason column: the first condition that is not True, in
// the order of a pass, or Verified.
func TestSummaryReason(t *testing.T) {
	c := func(typ string, ok bool, reason string) metav1.Condition {
		s := metav1.ConditionFalse
		if ok {
			s = metav1.ConditionTrue
		}
		return metav1.Condition{Type: typ, Status: s, Reason: reason}
	}
	for _, tc := range []struct {
		conds []metav1.Condition
		want  string
	}{
		{nil, ""},
		{[]metav1.Condition{c("Verified", true, "Verified"), c("Applied", true, "Applied"), c("Rendered", true, "Rendered")}, "Verified"},
		{[]metav1.Condition{c("Verified", false, "CheckFailed"), c("Applied", false, "Unreachable"), c("Rendered", true, "Rendered")}, "Unreachable"},
		{[]metav1.Condition{c("Applied", true, "Applied"), c("Rendered", false, metricsv1alpha1.ReasonSelectedTwice)}, metricsv1alpha1.ReasonSelectedTwice},
	} {
		if got := summaryReason(tc.conds); got != tc.want {
			t.Errorf("summaryReason(%v) = %q, want %q", tc.conds, got, tc.want)
		}
	}
}

// A binding is named after its Cluster first.
func TestBindingName(t *testing.T) {
	if got := BindingName("fleet", "prod-17"); got != "prod-17.fleet" {
		t.Errorf("BindingName = %q", got)
	}
}
