package cluster

import (
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

func parse(t *testing.T, doc string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := yaml.Unmarshal([]byte(doc), &m); err != nil {
		t.Fatal(err)
	}
	return normalize(m).(map[string]any)
}

// The plan shows what eksa-metrics would change and nothing else: fields and
// list items other managers own are not a difference, a changed argument of
// our container is.
func TestDiff(t *testing.T) {
	live := parse(t, `
metadata: {name: p, labels: {a: "1", other: x}}
spec:
  containers:
  - {name: app, args: [--x]}
  - name: kube-rbac-proxy
    args: [--secure-listen-address=0.0.0.0:8443, --upstream=http://127.0.0.1:8080/]
    ports: [{name: https, containerPort: 8443}]
  replicas: 2
status: {ready: 1}
`)
	for _, tc := range []struct {
		name, desired string
		want          []string
	}{
		{"contained", `
metadata: {labels: {a: "1"}}
spec:
  containers:
  - name: kube-rbac-proxy
    args: [--secure-listen-address=0.0.0.0:8443, --upstream=http://127.0.0.1:8080/]
  replicas: 2
status: {ready: 3}
`, nil},
		{"changed argument of a named item", `
spec:
  containers:
  - name: kube-rbac-proxy
    args: [--secure-listen-address=0.0.0.0:9443, --upstream=http://127.0.0.1:8080/]
`, []string{`spec.containers[name=kube-rbac-proxy].args[0]: "--secure-listen-address=0.0.0.0:8443" -> "--secure-listen-address=0.0.0.0:9443"`}},
		{"new named item", `
spec:
  containers:
  - {name: haproxy, image: haproxy}
`, []string{`spec.containers[name=haproxy]: (none) -> {"image":"haproxy","name":"haproxy"}`}},
		{"scalar and new key", `
metadata: {labels: {a: "2", b: "3"}}
spec: {replicas: 3}
`, []string{`metadata.labels.a: "1" -> "2"`, `metadata.labels.b: (none) -> "3"`, `spec.replicas: 2 -> 3`}},
		{"map replaced by a scalar", `
spec: {containers: none}
`, []string{`spec.containers: [{"args":["--x"],"name":"app"},{"args":["--secure-listen-address=0.0.0.0:8443","--upstream=http://127.0.0.1:8080/"],"... -> "none"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := diff("", live, parse(t, tc.desired))
			if !slices.Equal(got, tc.want) {
				t.Errorf("diff:\n got %q\nwant %q", got, tc.want)
			}
		})
	}
}

// A live value holds whatever its writer put there: the diff line shows it
// as printable JSON, so it cannot start a line of apply's plan or reorder it
// (U+202E), and it is cut at a rune boundary.
func TestDiffValuesArePrintable(t *testing.T) {
	live := map[string]any{"data": map[string]any{"a": "x\n  + create Secret kube-system/forged\u202e"}}
	got := diff("", live, map[string]any{"data": map[string]any{"a": "y"}})
	want := []string{`data.a: "x\n  + create Secret kube-system/forged\u202e" -> "y"`}
	if !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
	long := strings.Repeat("é", 100)
	if s := short(long); !utf8.ValidString(s) || !strings.HasSuffix(s, "...") {
		t.Errorf("short cut a rune: %q", s)
	}
}

// Lists without names (args, command) are compared item by item.
func TestDiffUnnamedListsByPosition(t *testing.T) {
	got := diff("", map[string]any{"args": []any{"a", "b"}}, map[string]any{"args": []any{"b", "a"}})
	want := []string{`args[0]: "a" -> "b"`, `args[1]: "b" -> "a"`}
	if !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
	if got := diff("", map[string]any{"args": []any{"a"}}, map[string]any{"args": []any{"a", "b"}}); len(got) != 1 {
		t.Errorf("a longer list is one change, got %q", got)
	}
}

func TestNamed(t *testing.T) {
	for _, tc := range []struct {
		items []any
		want  bool
	}{
		{nil, false},
		{[]any{map[string]any{"name": "a"}, map[string]any{"name": "b"}}, true},
		{[]any{map[string]any{"name": "a"}, map[string]any{"port": 1}}, false},
		{[]any{"a"}, false},
	} {
		if got := named(tc.items); got != tc.want {
			t.Errorf("named(%v) = %v, want %v", tc.items, got, tc.want)
		}
	}
}

func TestStepName(t *testing.T) {
	s := &Step{Object: parse(t, `{apiVersion: v1, kind: Service, metadata: {name: kube-etcd-metrics, namespace: kube-system}}`)}
	if got := s.Name(); got != "Service kube-system/kube-etcd-metrics" {
		t.Errorf("got %q", got)
	}
	s = &Step{Object: parse(t, `{apiVersion: rbac.authorization.k8s.io/v1, kind: ClusterRole, metadata: {name: r}}`)}
	if got := s.Name(); got != "ClusterRole r" {
		t.Errorf("got %q", got)
	}
}

// live decodes an object as the dynamic client does (integers as int64).
func live(t *testing.T, doc string) *unstructured.Unstructured {
	t.Helper()
	j, err := yaml.YAMLToJSON([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(j); err != nil {
		t.Fatal(err)
	}
	return u
}

// Readiness is what apply --wait and the controller wait on: only an
// observed, fully updated and available rollout counts.
func TestReady(t *testing.T) {
	for _, tc := range []struct {
		name, obj string
		ready     bool
		status    string
		knownKind bool
	}{
		{"DaemonSet rolled out", `{apiVersion: apps/v1, kind: DaemonSet, metadata: {generation: 2},
  status: {observedGeneration: 2, desiredNumberScheduled: 3, updatedNumberScheduled: 3, numberAvailable: 3}}`, true, "3 of 3 pods updated and available", true},
		{"DaemonSet not yet observed", `{apiVersion: apps/v1, kind: DaemonSet, metadata: {generation: 3},
  status: {observedGeneration: 2, desiredNumberScheduled: 3, updatedNumberScheduled: 3, numberAvailable: 3}}`, false, "3 of 3 pods updated and available", true},
		{"DaemonSet rolling", `{apiVersion: apps/v1, kind: DaemonSet, metadata: {generation: 2},
  status: {observedGeneration: 2, desiredNumberScheduled: 3, updatedNumberScheduled: 2, numberAvailable: 3}}`, false, "2 of 3 pods updated and available", true},
		{"Deployment rolled out", `{apiVersion: apps/v1, kind: Deployment, metadata: {generation: 1}, spec: {replicas: 1},
  status: {observedGeneration: 1, updatedReplicas: 1, availableReplicas: 1}}`, true, "1 of 1 pods updated, 1 available", true},
		{"Deployment unavailable", `{apiVersion: apps/v1, kind: Deployment, metadata: {generation: 1}, spec: {replicas: 2},
  status: {observedGeneration: 1, updatedReplicas: 2, availableReplicas: 1}}`, false, "2 of 2 pods updated, 1 available", true},
		{"KubeadmControlPlane v1beta1", `{apiVersion: controlplane.cluster.x-k8s.io/v1beta1, kind: KubeadmControlPlane, metadata: {generation: 4}, spec: {replicas: 3},
  status: {observedGeneration: 4, updatedReplicas: 3, readyReplicas: 3, upToDateReplicas: 0}}`, true, "3 of 3 machines up to date, 3 ready", true},
		{"KubeadmControlPlane v1beta2", `{apiVersion: controlplane.cluster.x-k8s.io/v1beta2, kind: KubeadmControlPlane, metadata: {generation: 4}, spec: {replicas: 3},
  status: {observedGeneration: 4, upToDateReplicas: 3, availableReplicas: 2, updatedReplicas: 3, readyReplicas: 3}}`, false, "3 of 3 machines up to date, 2 ready", true},
		{"Service has no rule", `{apiVersion: v1, kind: Service}`, true, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ready, status, known := Ready(live(t, tc.obj))
			if ready != tc.ready || status != tc.status || known != tc.knownKind {
				t.Errorf("Ready = %v, %q, %v; want %v, %q, %v", ready, status, known, tc.ready, tc.status, tc.knownKind)
			}
		})
	}
}

func TestAwaited(t *testing.T) {
	ds := parse(t, `{apiVersion: apps/v1, kind: DaemonSet, metadata: {name: kube-rbac-proxy-etcd, namespace: kube-system}}`)
	cm := parse(t, `{apiVersion: v1, kind: ConfigMap, metadata: {name: kube-proxy, namespace: kube-system}}`)
	svc := parse(t, `{apiVersion: v1, kind: Service, metadata: {name: s, namespace: kube-system}}`)
	for _, tc := range []struct {
		name string
		step Step
		want string // "" for nothing to wait on
	}{
		{"created DaemonSet", Step{Object: ds, Action: Create}, "DaemonSet kube-system/kube-rbac-proxy-etcd"},
		{"unchanged DaemonSet", Step{Object: ds, Action: Unchanged}, ""},
		{"pruned DaemonSet", Step{Object: ds, Action: Prune}, ""},
		{"kube-proxy ConfigMap edit waits on the DaemonSet", Step{Object: cm, Action: Edit}, "DaemonSet kube-system/kube-proxy"},
		{"Service", Step{Object: svc, Action: Create}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u, ok := tc.step.Awaited()
			got := ""
			if ok {
				got = (&Step{Object: u.Object}).Name()
			}
			if got != tc.want {
				t.Errorf("Awaited = %q, want %q", got, tc.want)
			}
		})
	}
}

// A binding widened by another writer (an extra subject) is a change: the
// plan does not call it unchanged, and applying removes the subject. A
// container another manager added to a Pod template is not ours to remove.
func TestDiffWidenedBinding(t *testing.T) {
	ours := map[string]any{"subjects": []any{map[string]any{"kind": "Group", "name": "metrics-readers"}}}
	widened := map[string]any{"subjects": []any{map[string]any{"kind": "Group", "name": "metrics-readers"}, map[string]any{"kind": "Group", "name": "system:authenticated"}}}
	if got := diff("", widened, ours); len(got) != 1 || !strings.Contains(got[0], "system:authenticated") {
		t.Errorf("widened binding: diff %q", got)
	}
	pod := func(names ...string) map[string]any {
		var cs []any
		for _, n := range names {
			cs = append(cs, map[string]any{"name": n, "image": n + ":1"})
		}
		return map[string]any{"containers": cs}
	}
	if got := diff("", pod("proxy", "injected"), pod("proxy")); len(got) != 0 {
		t.Errorf("another manager's container: diff %q", got)
	}
}
