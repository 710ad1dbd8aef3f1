package templates

import (
	"sort"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/eksa-metrics/eksa-metrics/pkg/components"
	"github.com/eksa-metrics/eksa-metrics/pkg/spec"
)

// AuthDelegator is the bootstrap ClusterRole that allows TokenReviews and
// SubjectAccessReviews, needed by anything that authenticates scrapers.
const AuthDelegator = "system:auth-delegator"

// ReaderRules are the least-privilege rules a scraper needs: get on exactly
// the metrics paths of the enabled components, and on the kubelet's
// nodes/metrics (nodes/statusz and nodes/configz for its z-pages). Never a
// wildcard, never nodes/proxy (it allows exec through the kubelet).
func ReaderRules(c *spec.Config) []rbacv1.PolicyRule {
	urls := map[string]bool{}
	for _, comp := range Enabled(c) {
		if comp.ID == components.Kubelet {
			continue // the kubelet checks nodes/* resources, not URLs
		}
		for _, p := range comp.Paths {
			urls[p] = true
		}
		if comp.ZPages {
			for _, p := range ZPagePaths(c) {
				urls[p] = true
			}
		}
	}
	if len(ManagementComponents(c)) > 0 {
		urls["/metrics"] = true
	}
	var rules []rbacv1.PolicyRule
	if len(urls) > 0 {
		list := make([]string, 0, len(urls))
		for u := range urls {
			list = append(list, u)
		}
		sort.Strings(list)
		rules = append(rules, rbacv1.PolicyRule{Verbs: []string{"get"}, NonResourceURLs: list})
	}
	if c.Kubelet {
		res := []string{"nodes/metrics"}
		if c.Flagz {
			res = append(res, "nodes/configz") // the kubelet checks /flagz as nodes/configz
		}
		if c.Statusz {
			res = append(res, "nodes/statusz")
		}
		sort.Strings(res)
		rules = append(rules, rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: res})
	}
	return rules
}

// subjects turns scrapers into RBAC subjects.
func subjects(scrapers []spec.Scraper) []rbacv1.Subject {
	out := make([]rbacv1.Subject, 0, len(scrapers))
	for _, s := range scrapers {
		sub := rbacv1.Subject{Kind: string(s.Kind), Name: s.Name, Namespace: s.Namespace}
		if s.Kind != spec.ScraperServiceAccount {
			sub.APIGroup = rbacv1.GroupName
		}
		out = append(out, sub)
	}
	return out
}

// RBAC renders the reader ClusterRole bound to every scraper, and the
// auth-delegator binding of the proxies' ServiceAccount (proxy mode).
func RBAC(c *spec.Config) []Object {
	role := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: ReaderRole, Labels: labels(nil)},
		Rules:      ReaderRules(c),
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: ReaderRole, Labels: labels(nil)},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: ReaderRole},
		Subjects:   subjects(c.Scrapers),
	}
	out := []Object{
		toObject("rbac.authorization.k8s.io/v1", "ClusterRole", role),
		toObject("rbac.authorization.k8s.io/v1", "ClusterRoleBinding", binding),
	}
	if needsProxy(c) {
		out = append(out, AuthDelegatorBinding(ProxySA+":auth-delegator", ProxySA, SystemNS))
	}
	return out
}

// AuthDelegatorBinding binds a ServiceAccount to system:auth-delegator.
func AuthDelegatorBinding(name, sa, namespace string) Object {
	b := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels(nil)},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: AuthDelegator},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: sa, Namespace: namespace}},
	}
	return toObject("rbac.authorization.k8s.io/v1", "ClusterRoleBinding", b)
}
