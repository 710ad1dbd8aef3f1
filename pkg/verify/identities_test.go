package verify

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/eksa-metrics/eksa-metrics/pkg/templates"
)

// Which objects a run deletes before it starts: another run's temporary
// objects once they are older than the cutoff, those of versions before
// RunLabel by their name; never its own, a younger run's, or a rendered
// object (which carries managed-by too).
func TestLeftover(t *testing.T) {
	cutoff := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	old, young := metav1.NewTime(cutoff.Add(-time.Minute)), metav1.NewTime(cutoff.Add(time.Minute))
	managed := map[string]string{templates.ManagedByLabel: templates.Prefix}
	run := func(id string) map[string]string {
		return map[string]string{templates.ManagedByLabel: templates.Prefix, RunLabel: id}
	}
	for _, tc := range []struct {
		name string
		md   metav1.ObjectMeta
		want bool
	}{
		{"another run's, old", metav1.ObjectMeta{Name: "eksa-metrics-verify-unbound-aaaaaa", Labels: run("aaaaaa"), CreationTimestamp: old}, true},
		{"another run's, young", metav1.ObjectMeta{Name: "eksa-metrics-verify-unbound-aaaaaa", Labels: run("aaaaaa"), CreationTimestamp: young}, false},
		{"this run's", metav1.ObjectMeta{Name: "eksa-metrics-verify-unbound-bbbbbb", Labels: run("bbbbbb"), CreationTimestamp: old}, false},
		{"before the run label, old", metav1.ObjectMeta{Name: "eksa-metrics-verify-cccccc-eksa-metrics-verify-unbound-cccccc", Labels: managed, CreationTimestamp: old}, true},
		{"before the run label, young", metav1.ObjectMeta{Name: "eksa-metrics-verify-scraper-cccccc", Labels: managed, CreationTimestamp: young}, false},
		{"rendered", metav1.ObjectMeta{Name: templates.ProxySA, Labels: managed, CreationTimestamp: old}, false},
	} {
		if got := leftover(&tc.md, "bbbbbb", cutoff); got != tc.want {
			t.Errorf("%s: leftover = %t, want %t", tc.name, got, tc.want)
		}
	}
}
