package validate

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/eksa-metrics/eksa-metrics/internal/testutil"
	"github.com/eksa-metrics/eksa-metrics/pkg/templates"
)

func asList(v any) []any { l, _ := v.([]any); return l }

func TestForbiddenGrantCatchesBadRules(t *testing.T) {
	for _, bad := range []map[string]any{
		{"verbs": []any{"get"}, "nonResourceURLs": []any{"/metrics*"}},
		{"verbs": []any{"*"}, "nonResourceURLs": []any{"/metrics"}},
		{"verbs": []any{"get"}, "apiGroups": []any{""}, "resources": []any{"nodes/proxy"}},
		{"verbs": []any{"get"}, "apiGroups": []any{""}, "resources": []any{"secrets"}},
		{"verbs": []any{"impersonate"}, "apiGroups": []any{""}, "resources": []any{"users"}},
		{"verbs": []any{"bind", "escalate"}, "apiGroups": []any{"rbac.authorization.k8s.io"}, "resources": []any{"clusterroles"}},
	} {
		if ForbiddenGrant(bad) == "" {
			t.Errorf("rule %v was not flagged", bad)
		}
	}
}

// No rendered Role or ClusterRole, in any golden file, grants a wildcard,
// nodes/proxy, secrets, escalate, bind or impersonate.
func TestGoldenRolesAreLeastPrivilege(t *testing.T) {
	root := testutil.RepoRoot()
	var files []string
	for _, pattern := range []string{"pkg/*/testdata/golden/*.yaml", "internal/*/testdata/golden/*.yaml"} {
		m, _ := filepath.Glob(filepath.Join(root, pattern))
		files = append(files, m...)
	}
	if len(files) < 10 {
		t.Fatalf("expected the golden files, found %d", len(files))
	}
	roles := 0
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		dec := yaml.NewDecoder(bytes.NewReader(raw))
		for {
			var doc map[string]any
			if err := dec.Decode(&doc); errors.Is(err, io.EOF) {
				break
			} else if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			if doc["kind"] != "ClusterRole" && doc["kind"] != "Role" {
				continue
			}
			roles++
			for _, r := range asList(doc["rules"]) {
				if why := ForbiddenGrant(r.(map[string]any)); why != "" {
					t.Errorf("%s: %s %v: %s", filepath.Base(f), doc["kind"], doc["metadata"], why)
				}
			}
		}
	}
	if roles == 0 {
		t.Fatal("no roles found in the golden files")
	}
	t.Logf("checked %d roles in %d golden files", roles, len(files))
}

// The kubelet approver's role is allowed only for the approver's own
// ServiceAccount; a role eksa-metrics never renders is refused.
func TestForbiddenBindingOfTheApproverRole(t *testing.T) {
	binding := func(role, kind, ns, name string) map[string]any {
		return map[string]any{"roleRef": map[string]any{"name": role},
			"subjects": []any{map[string]any{"kind": kind, "namespace": ns, "name": name}}}
	}
	if got := ForbiddenBinding(binding(templates.KubeletApprover, "ServiceAccount", templates.SystemNS, templates.KubeletApprover)); len(got) != 0 {
		t.Errorf("the rendered approver binding is refused: %v", got)
	}
	for _, b := range []map[string]any{
		binding(templates.KubeletApprover, "ServiceAccount", "monitoring", "prometheus"),
		binding(templates.KubeletApprover, "Group", "", templates.KubeletApprover),
		binding("cluster-admin", "ServiceAccount", templates.SystemNS, templates.KubeletApprover),
	} {
		if got := ForbiddenBinding(b); len(got) == 0 || !strings.Contains(strings.Join(got, ";"), "grants") {
			t.Errorf("%v: allowed", b)
		}
	}
}
