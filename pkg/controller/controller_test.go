package controller

import (
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/eksa-metrics/eksa-metrics/pkg/render"
	"github.com/eksa-metrics/eksa-metrics/pkg/spec"
)

// The controller comes back for the earliest certificate renewal of the
// Clusters it applied, and only then: at rest it sends nothing.
func TestUntilRenewal(t *testing.T) {
	now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	day := 24 * time.Hour
	for _, tc := range []struct {
		name     string
		renewals []time.Time
		want     time.Duration
	}{
		{"no certificates: no requeue", []time.Time{{}, {}}, 0},
		{"the earliest of the Clusters", []time.Time{now.Add(240 * day), {}, now.Add(100 * day)}, 100 * day},
		{"overdue: soon, not at once", []time.Time{now.Add(-time.Hour)}, time.Minute},
	} {
		if got := untilRenewal(tc.renewals, now); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
	}
}

// A long message (every failing check with its details) is cut to a size
// the API server accepts, at a character boundary; control characters are
// escaped.
func TestTruncate(t *testing.T) {
	if got := truncate("short"); got != "short" {
		t.Errorf("short message changed: %q", got)
	}
	// A workload API server's text with terminal escape sequences: escaped.
	if got := truncate("denied \x1b]0;owned\x07\x1b[2J"); strings.ContainsAny(got, "\x1b\x07") {
		t.Errorf("control characters reach the status: %q", got)
	}
	long := strings.Repeat("é", 40000)
	got := truncate(long)
	if len(got) > maxMessage || !utf8.ValidString(got) || !strings.HasSuffix(got, "(truncated)") {
		t.Errorf("truncated to %d bytes, valid UTF-8 %t, suffix %q", len(got), utf8.ValidString(got), got[len(got)-12:])
	}
}

// The event after an apply names every image that runs and every subject
// granted a role, with control characters escaped.
func TestRunsNamesImagesAndSubjects(t *testing.T) {
	res := &render.Result{Config: &spec.Config{ClusterName: "prod\n# forged"}, Objects: []render.Object{
		{Object: map[string]any{"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": map[string]any{"name": "p", "namespace": "kube-system"},
			"spec": map[string]any{"template": map[string]any{"spec": map[string]any{"containers": []any{map[string]any{"name": "c", "image": "registry.example/x:1\u202e"}}}}}}},
		{Object: map[string]any{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": map[string]any{"name": "b"},
			"roleRef": map[string]any{"kind": "ClusterRole", "name": "eksa-metrics-reader"}, "subjects": []any{map[string]any{"kind": "Group", "name": "readers"}}}},
	}}
	got := strings.Join(runs(res), "\n")
	for _, want := range []string{`registry.example/x:1\u202e`, "DaemonSet kube-system/p", "to Group readers", `prod\n# forged`} {
		if !strings.Contains(got, want) {
			t.Errorf("%q lacks %q", got, want)
		}
	}
	if strings.ContainsAny(strings.Join(runs(res), ""), "\n\u202e") {
		t.Errorf("unescaped control characters in %q", got)
	}
}

// Every note fits the API server's limit on events, and together they hold
// every item: a fleet's Cluster runs a dozen images.
func TestNotesFitAnEvent(t *testing.T) {
	var items []string
	for i := range 40 {
		items = append(items, fmt.Sprintf("registry.example/eks-anywhere/kube-rbac-proxy:v0.19.%d (DaemonSet kube-system/p%d, container c)", i, i))
	}
	items = append(items, strings.Repeat("é", 800))
	got := notes("Cluster prod runs", items)
	if len(got) < 2 {
		t.Fatalf("%d notes for %d items", len(got), len(items))
	}
	all := strings.Join(got, "\n")
	for i, n := range got {
		if len(n) > maxNote || !utf8.ValidString(n) || !strings.HasPrefix(n, fmt.Sprintf("Cluster prod runs (%d of %d): ", i+1, len(got))) {
			t.Errorf("note %d: %d bytes, valid UTF-8 %t: %.60q", i, len(n), utf8.ValidString(n), n)
		}
	}
	for _, it := range items[:40] {
		if !strings.Contains(all, it) {
			t.Errorf("no note names %q", it)
		}
	}
	if one := notes("Cluster prod runs", items[:2]); len(one) != 1 || !strings.HasPrefix(one[0], "Cluster prod runs: ") {
		t.Errorf("two short items: %q", one)
	}
}
