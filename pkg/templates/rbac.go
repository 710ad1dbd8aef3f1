package templates

import (
	"sort"

	metricsv1alpha1 "github.com/eksa-metrics/eksa-metrics/pkg/apis/metrics/v1alpha1"

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
// nodes/metrics. Never a wildcard, never nodes/proxy (it allows exec through
// the kubelet). The z-pages are not in it: ZPageRules grants them, only when
// the metrics section asks.
func ReaderRules(c *spec.Config) []rbacv1.PolicyRule {
	urls := map[string]bool{}
	for _, comp := range components.Enabled(c) {
		if comp.ID == components.Kubelet {
			continue // the kubelet checks nodes/* resources, not URLs
		}
		for _, p := range comp.Paths {
			urls[p] = true
		}
	}
	if len(ManagementComponents(c)) > 0 || c.KubeletServingCertificates { // and the kubelet approver's
		urls["/metrics"] = true
	}
	var rules []rbacv1.PolicyRule
	if len(urls) > 0 {
		rules = append(rules, rbacv1.PolicyRule{Verbs: []string{"get"}, NonResourceURLs: sortedKeys(urls)})
	}
	if c.Kubelet {
		rules = append(rules, rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"nodes/metrics"}})
	}
	return rules
}

// ZPageRules grant /statusz and /flagz of the enabled components that serve
// them, and the kubelet's nodes/statusz and nodes/configz (its /flagz is
// checked as nodes/configz); nil when no z-page is asked for. /flagz shows
// every flag of a component, which is why it is a role of its own.
func ZPageRules(c *spec.Config) []rbacv1.PolicyRule {
	paths := ZPagePaths(c)
	if len(paths) == 0 {
		return nil
	}
	urls := map[string]bool{}
	kubelet := false
	for _, comp := range components.Enabled(c) {
		switch {
		case !comp.ZPages:
		case comp.ID == components.Kubelet:
			kubelet = true
		default:
			for _, p := range paths {
				urls[p] = true
			}
		}
	}
	var rules []rbacv1.PolicyRule
	if len(urls) > 0 {
		rules = append(rules, rbacv1.PolicyRule{Verbs: []string{"get"}, NonResourceURLs: sortedKeys(urls)})
	}
	if kubelet {
		var res []string
		if c.Flagz {
			res = append(res, "nodes/configz")
		}
		if c.Statusz {
			res = append(res, "nodes/statusz")
		}
		rules = append(rules, rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: res})
	}
	return rules
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// subjects turns scrapers into RBAC subjects.
func subjects(scrapers []metricsv1alpha1.Scraper) []rbacv1.Subject {
	out := make([]rbacv1.Subject, 0, len(scrapers))
	for _, s := range scrapers {
		sub := rbacv1.Subject{Kind: string(s.Kind), Name: s.Name, Namespace: s.Namespace}
		if s.Kind != metricsv1alpha1.ScraperServiceAccount {
			sub.APIGroup = rbacv1.GroupName
		}
		out = append(out, sub)
	}
	return out
}

// RBAC renders the reader ClusterRole bound to every scraper, the z-page
// reader ClusterRole when z-pages are asked for, and the auth-delegator
// binding of the proxies' ServiceAccount when a kube-rbac-proxy runs (it
// reviews tokens and access; HAProxy passes bytes and needs nothing).
func RBAC(c *spec.Config) []Object {
	out := roleAndBinding(ReaderRole, ReaderRules(c), c.Scrapers)
	if rules := ZPageRules(c); len(rules) > 0 {
		out = append(out, roleAndBinding(ZPageReaderRole, rules, c.Scrapers)...)
	}
	if needsRBACProxy(c) {
		out = append(out, AuthDelegatorBinding(ProxySA+":auth-delegator", ProxySA, SystemNS))
	}
	return out
}

func roleAndBinding(name string, rules []rbacv1.PolicyRule, scrapers []metricsv1alpha1.Scraper) []Object {
	role := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels(nil)},
		Rules:      rules,
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels(nil)},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
		Subjects:   subjects(scrapers),
	}
	return []Object{
		toObject("rbac.authorization.k8s.io/v1", "ClusterRole", role),
		toObject("rbac.authorization.k8s.io/v1", "ClusterRoleBinding", binding),
	}
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
