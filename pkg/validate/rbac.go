package validate

import (
	"strings"
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
