package validate

import (
	"strings"

	"github.com/eksa-metrics/eksa-metrics/pkg/spec"
	"github.com/eksa-metrics/eksa-metrics/pkg/templates"
)

// ForbiddenGrant reports why a Role or ClusterRole rule (as rendered: plain
// maps) is not least privilege, or "" when it is: no wildcard anywhere, no
// nodes/proxy (it allows exec through the kubelet), no secrets, and none of
// the verbs escalate, bind, impersonate.
func ForbiddenGrant(rule map[string]any) string {
	strs := func(k string) []string {
		var out []string
		list, _ := rule[k].([]any)
		for _, v := range list {
			s, _ := v.(string)
			out = append(out, s)
		}
		return out
	}
	for _, k := range []string{"verbs", "resources", "apiGroups", "nonResourceURLs", "resourceNames"} {
		for _, v := range strs(k) {
			if strings.Contains(v, "*") {
				return k + " has a wildcard " + v
			}
		}
	}
	for _, r := range strs("resources") {
		if r == "nodes/proxy" || r == "secrets" || strings.HasPrefix(r, "secrets/") {
			return "grants " + r
		}
	}
	for _, v := range strs("verbs") {
		if v == "escalate" || v == "bind" || v == "impersonate" {
			return "grants the verb " + v
		}
	}
	return ""
}

// allowedRoles are the roles a rendered binding may grant: eksa-metrics'
// own, and the bootstrap role that lets a proxy review tokens and access.
var allowedRoles = map[string]bool{templates.ReaderRole: true, templates.ZPageReaderRole: true, templates.DiscoveryRole: true, templates.AuthDelegator: true,
	templates.KubeletApprover: true}

// ForbiddenBinding says why a rendered ClusterRoleBinding or RoleBinding
// (plain maps) grants too widely: a subject that stands for everybody
// (system:anonymous, system:authenticated, all ServiceAccounts, ...), or a
// role that is not one eksa-metrics renders or needs.
func ForbiddenBinding(binding map[string]any) []string {
	var out []string
	if ref, _ := binding["roleRef"].(map[string]any); ref != nil {
		if name, _ := ref["name"].(string); !allowedRoles[name] {
			out = append(out, "grants role "+name+", which eksa-metrics never needs")
		}
	}
	subjects, _ := binding["subjects"].([]any)
	ref, _ := binding["roleRef"].(map[string]any)
	for _, s := range subjects {
		m, _ := s.(map[string]any)
		name, _ := m["name"].(string)
		if who := spec.Everyone(name); who != "" {
			out = append(out, "binds "+name+", which is "+who)
		}
		// The approver's role (it approves kubelet-serving requests) goes
		// to the approver's own ServiceAccount only.
		if ref["name"] == templates.KubeletApprover && (m["kind"] != "ServiceAccount" || name != templates.KubeletApprover || m["namespace"] != templates.SystemNS) {
			out = append(out, "grants the kubelet approver's role to "+name+", not to ServiceAccount "+templates.SystemNS+"/"+templates.KubeletApprover)
		}
	}
	return out
}
