package config

import (
	"fmt"
	"maps"
	"slices"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/eksa-metrics/eksa-metrics/pkg/components"
	"github.com/eksa-metrics/eksa-metrics/pkg/kubeproxy"
	"github.com/eksa-metrics/eksa-metrics/pkg/spec"
	"github.com/eksa-metrics/eksa-metrics/pkg/templates"
)

// ControllerName names the controller's ServiceAccount, roles and bindings.
const ControllerName = "eksa-metrics-controller"

// The controller's rights, as narrow as RBAC can make them: one
// ClusterRole that reads what it must find anywhere and writes only kinds
// that cannot run a pod or read a Secret, and namespaced Roles, with
// resourceNames where the names are known, for everything else; a
// ValidatingAdmissionPolicy closes what RBAC cannot (create takes no
// resourceNames): a DaemonSet it creates runs as the proxies' ServiceAccount
// only, a Deployment it edits keeps its ServiceAccount, a Package it writes
// is the prometheus package. Built from the catalogs (pkg/components,
// pkg/templates), so that the namespaces and names are the ones the renderer
// uses.
func rbacObjects(o Options) []any {
	sa := rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: ControllerName, Namespace: o.Namespace}
	label := map[string]string{"app.kubernetes.io/name": ControllerName}
	read := []string{"get", "list", "watch"}
	crud := []string{"get", "list", "watch", "create", "update", "patch", "delete"}
	cluster := &rbacv1.ClusterRole{
		TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole"},
		ObjectMeta: metav1.ObjectMeta{Name: ControllerName, Labels: label},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{"metrics.anywhere.eks.amazonaws.com"}, Resources: []string{"metricsconfigs"}, Verbs: []string{"get", "list", "watch", "update", "patch"}},
			{APIGroups: []string{"metrics.anywhere.eks.amazonaws.com"}, Resources: []string{"metricsconfigs/status"}, Verbs: []string{"get", "update", "patch"}},
			{APIGroups: []string{"metrics.anywhere.eks.amazonaws.com"}, Resources: []string{"metricsconfigs/finalizers"}, Verbs: []string{"update"}},
			// Each Cluster's state, one object per (MetricsConfig, Cluster):
			// written when it changes (server-side apply), deleted when the
			// Cluster is released.
			{APIGroups: []string{"metrics.anywhere.eks.amazonaws.com"}, Resources: []string{"metricsconfigbindings"}, Verbs: []string{"get", "list", "watch", "create", "patch", "delete"}},
			// The EKS-A objects it renders from, the Bundles it may take
			// images from, and the Cluster API objects that say whose
			// eksa-system objects are whose.
			{APIGroups: []string{"anywhere.eks.amazonaws.com"}, Resources: []string{"clusters", "bundles", "eksareleases", "vspheremachineconfigs", "cloudstackmachineconfigs", "nutanixmachineconfigs", "tinkerbellmachineconfigs", "snowmachineconfigs"}, Verbs: read},
			{APIGroups: []string{"cluster.x-k8s.io"}, Resources: []string{"clusters"}, Verbs: read},
			// The Machines whose addresses vouch for the nodes' serving
			// certificates (tls.kubeletServingCertificates): published to a
			// workload cluster's approver; a self-managed cluster's approver
			// is granted to read its own, which it may grant only as it
			// holds that itself.
			{APIGroups: []string{"cluster.x-k8s.io"}, Resources: []string{"machines"}, Verbs: read},
			// Its own admission policy, read to check that it holds it
			// (CheckAdmissionPolicy): nothing else of admission.
			{APIGroups: []string{"admissionregistration.k8s.io"}, Resources: []string{"validatingadmissionpolicies", "validatingadmissionpolicybindings"}, ResourceNames: []string{ControllerName}, Verbs: []string{"get"}},
			{APIGroups: []string{"controlplane.cluster.x-k8s.io"}, Resources: []string{"kubeadmcontrolplanes"}, Verbs: read},
			// Roles and bindings it renders (the reader roles, their
			// bindings, the discovery roles some stacks lack). It holds no
			// escalate and no bind, so the API server lets it grant only
			// rules it holds itself (below).
			{APIGroups: []string{"rbac.authorization.k8s.io"}, Resources: []string{"clusterroles", "clusterrolebindings", "roles", "rolebindings"}, Verbs: crud},
			// The Package of the eks-anywhere stack goes to the namespace
			// EKS-A keeps per Cluster (eksa-packages-<cluster>); the policy
			// below holds it to the prometheus package.
			{APIGroups: []string{"packages.eks.amazonaws.com"}, Resources: []string{"packages"}, Verbs: crud},
			// tls.certificates: cert-manager: its Issuers and Certificates,
			// in the namespaces of the served Secrets; the ClusterIssuers of
			// earlier releases only to prune them.
			{APIGroups: []string{"cert-manager.io"}, Resources: []string{"certificates", "issuers"}, Verbs: crud},
			{APIGroups: []string{"cert-manager.io"}, Resources: []string{"clusterissuers"}, Verbs: read},
			{APIGroups: []string{"cert-manager.io"}, Resources: []string{"clusterissuers"}, Verbs: []string{"delete"}, ResourceNames: []string{templates.Prefix + "-selfsigned", templates.Prefix + "-ca"}},
			// The Prometheus that should select the ServiceMonitors (the
			// Verified condition).
			{APIGroups: []string{"monitoring.coreos.com"}, Resources: []string{"prometheuses"}, Verbs: []string{"get", "list"}},
			{APIGroups: []string{"monitoring.coreos.com"}, Resources: []string{"servicemonitors", "prometheusrules"}, Verbs: read},
			{APIGroups: []string{""}, Resources: []string{"namespaces"}, Verbs: []string{"get"}},
			{APIGroups: []string{"events.k8s.io"}, Resources: []string{"events"}, Verbs: []string{"create", "patch"}},
			// Held so that the roles and bindings it applies grant nothing it
			// lacks: system:auth-delegator (and its own metrics endpoint's
			// reviews), the reader roles, and the discovery roles.
			{APIGroups: []string{"authentication.k8s.io"}, Resources: []string{"tokenreviews"}, Verbs: []string{"create"}},
			{APIGroups: []string{"authorization.k8s.io"}, Resources: []string{"subjectaccessreviews"}, Verbs: []string{"create"}},
			{APIGroups: []string{""}, Resources: []string{"nodes/metrics", "nodes/statusz", "nodes/configz"}, Verbs: []string{"get"}},
			{NonResourceURLs: []string{"/metrics", "/metrics/slis", "/metrics/resources", "/statusz", "/flagz"}, Verbs: []string{"get"}},
			{APIGroups: []string{"discovery.k8s.io"}, Resources: []string{"endpointslices"}, Verbs: read},
			{APIGroups: []string{""}, Resources: []string{"services", "pods"}, Verbs: read},
		},
	}
	out := []any{cluster, &rbacv1.ClusterRoleBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRoleBinding"},
		ObjectMeta: metav1.ObjectMeta{Name: ControllerName, Labels: label},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: ControllerName},
		Subjects:   []rbacv1.Subject{sa},
	}}

	rules := namespacedRules(o)
	out = append(out, roles(o, rules, sa, label)...)
	out = append(out, kubeconfigRole(o, sa, label)...)
	if o.WithoutAdmissionPolicy {
		return out
	}
	return append(out, admissionPolicy(o, label)...)
}

// Namespaces are the namespaces where the controller holds a Role.
func Namespaces(o Options) []string {
	return slices.Sorted(maps.Keys(namespacedRules(o.withDefaults())))
}

// Listable says, for each resource ("group/resource") the controller may
// list only in some namespaces, which: where it may create it, and so where
// what it created can be.
func Listable(o Options) map[string][]string {
	o = o.withDefaults()
	clusterWide := map[string]bool{}
	for _, obj := range rbacObjects(o) {
		if cr, ok := obj.(*rbacv1.ClusterRole); ok {
			for _, r := range cr.Rules {
				if slices.Contains(r.Verbs, "list") {
					for _, g := range r.APIGroups {
						for _, res := range r.Resources {
							clusterWide[g+"/"+res] = true
						}
					}
				}
			}
		}
	}
	out := map[string][]string{}
	rules := namespacedRules(o)
	for _, ns := range slices.Sorted(maps.Keys(rules)) {
		for _, r := range rules[ns] {
			if !slices.Contains(r.Verbs, "list") {
				continue
			}
			for _, g := range r.APIGroups {
				for _, res := range r.Resources {
					if key := g + "/" + res; !clusterWide[key] && !slices.Contains(out[key], ns) {
						out[key] = append(out[key], ns)
					}
				}
			}
		}
	}
	return out
}

// Named says, for each resource ("group/resource") and namespace where the
// controller may list only objects of given names, which names: a list or
// a watch there is one per name (fieldSelector metadata.name).
func Named(o Options) map[string]map[string][]string {
	o = o.withDefaults()
	out := map[string]map[string][]string{}
	rules := namespacedRules(o)
	whole := map[string]bool{} // group/resource namespace: listable whole
	for ns, rs := range rules {
		for _, r := range rs {
			if slices.Contains(r.Verbs, "list") && len(r.ResourceNames) == 0 {
				for _, g := range r.APIGroups {
					for _, res := range r.Resources {
						whole[g+"/"+res+" "+ns] = true
					}
				}
			}
		}
	}
	for _, ns := range slices.Sorted(maps.Keys(rules)) {
		for _, r := range rules[ns] {
			if !slices.Contains(r.Verbs, "list") || len(r.ResourceNames) == 0 {
				continue
			}
			for _, g := range r.APIGroups {
				for _, res := range r.Resources {
					key := g + "/" + res
					if whole[key+" "+ns] {
						continue
					}
					if out[key] == nil {
						out[key] = map[string][]string{}
					}
					out[key][ns] = slices.Compact(slices.Sorted(slices.Values(append(out[key][ns], r.ResourceNames...))))
				}
			}
		}
	}
	return out
}

func (o Options) withDefaults() Options {
	if o.MonitoringNamespaces == nil {
		o.MonitoringNamespaces = []string{"monitoring"}
	}
	if o.Namespace == "" {
		o.Namespace = DefaultNamespace
	}
	return o
}

func namespacedRules(o Options) map[string][]rbacv1.PolicyRule {
	read := []string{"get", "list", "watch"}
	crud := []string{"get", "list", "watch", "create", "update", "patch", "delete"}
	// A list or watch by name (fieldSelector metadata.name) is authorized
	// as a request for that name (k8s.io/apiserver v0.37.2
	// pkg/endpoints/request/requestinfo.go, NewRequestInfo).
	crudNamed := []string{"get", "list", "watch", "update", "patch", "delete"}
	rules := map[string][]rbacv1.PolicyRule{}
	add := func(ns string, r ...rbacv1.PolicyRule) { rules[ns] = append(rules[ns], r...) }
	// Namespaced objects it renders, where it renders them: core objects
	// (Services, ServiceAccounts, ConfigMaps, the serving certificates'
	// Secrets) of the proxies in kube-system, the management sidecars in
	// their controllers' namespaces, the scrape configuration in the
	// monitoring namespaces.
	core := rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"services", "serviceaccounts", "configmaps"}, Verbs: crud}
	// Secrets by name only, never a whole namespace's: the names the
	// renderer gives them there (templates.SecretNames). eksa-system holds
	// every Cluster's admin kubeconfig and CA keys, kube-system the
	// bootstrap tokens, the providers' namespaces their webhook keys, a
	// monitoring namespace the operators' credentials; a list or a watch is
	// a read of them all. create takes no resourceNames: the admission
	// policy holds it to the same names.
	secretNames := templates.SecretNames(o.MonitoringNamespaces)
	coreIn := func(ns string) []rbacv1.PolicyRule {
		return []rbacv1.PolicyRule{core,
			{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"create"}},
			{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: crudNamed, ResourceNames: secretNames[ns]},
		}
	}
	// Leader election: the Lease, and the events client-go records in the
	// core API.
	add(o.Namespace,
		rbacv1.PolicyRule{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: crud},
		rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"events"}, Verbs: []string{"create", "patch"}})
	// eksa-system: the KubeadmControlPlanes it patches (the workload
	// kubeconfigs it reads are granted by name, kubeconfigRole).
	add("eksa-system",
		rbacv1.PolicyRule{APIGroups: []string{"controlplane.cluster.x-k8s.io"}, Resources: []string{"kubeadmcontrolplanes"}, Verbs: []string{"patch"}})
	add(templates.SystemNS, coreIn(templates.SystemNS)...)
	add(templates.SystemNS,
		rbacv1.PolicyRule{APIGroups: []string{"apps"}, Resources: []string{"daemonsets"}, Verbs: []string{"get", "list", "watch", "create"}},
		rbacv1.PolicyRule{APIGroups: []string{"apps"}, Resources: []string{"daemonsets"}, Verbs: []string{"update", "patch", "delete"}, ResourceNames: []string{templates.ControlPlaneDS, templates.NodeDS}},
		// bindAddress restarts kube-proxy after editing its configuration;
		// the admission policy lets that patch change only annotations.
		rbacv1.PolicyRule{APIGroups: []string{"apps"}, Resources: []string{"daemonsets"}, Verbs: []string{"patch"}, ResourceNames: []string{kubeproxy.Name}})
	deployments := map[string][]string{}
	for _, m := range components.ManagementCatalog {
		deployments[m.Namespace] = append(deployments[m.Namespace], m.Deployment)
	}
	for _, ns := range slices.Sorted(maps.Keys(deployments)) {
		names := slices.Compact(slices.Sorted(slices.Values(deployments[ns])))
		add(ns, coreIn(ns)...)
		add(ns,
			rbacv1.PolicyRule{APIGroups: []string{"apps"}, Resources: []string{"deployments"}, Verbs: read},
			rbacv1.PolicyRule{APIGroups: []string{"apps"}, Resources: []string{"deployments"}, Verbs: []string{"update", "patch"}, ResourceNames: names})
	}
	for _, ns := range o.MonitoringNamespaces {
		add(ns, coreIn(ns)...)
		add(ns, rbacv1.PolicyRule{APIGroups: []string{"monitoring.coreos.com"}, Resources: []string{"servicemonitors", "prometheusrules"}, Verbs: crud})
	}
	return rules
}

func roles(o Options, rules map[string][]rbacv1.PolicyRule, sa rbacv1.Subject, label map[string]string) []any {
	var out []any
	for _, ns := range Namespaces(o) {
		name := ControllerName
		if ns == o.Namespace {
			name += "-leader-election"
		}
		out = append(out, &rbacv1.Role{
			TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "Role"},
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: label},
			Rules:      mergeRules(rules[ns]),
		}, &rbacv1.RoleBinding{
			TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "RoleBinding"},
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: label},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name},
			Subjects:   []rbacv1.Subject{sa},
		})
	}
	return out
}

// KubeconfigRole is the Role in eksa-system that lets the controller read
// the admin kubeconfig Secrets of the workload clusters it was given
// (Options.WorkloadClusters), by name: never the management cluster's own
// (it reaches that one with its own identity), nor the CA keys beside them.
const KubeconfigRole = ControllerName + "-kubeconfigs"

// kubeconfigRole grants get of the workload clusters' kubeconfig Secrets, by
// name. With no workload cluster it has no rule at all: a rule without
// resourceNames would be every Secret of eksa-system.
func kubeconfigRole(o Options, sa rbacv1.Subject, label map[string]string) []any {
	role := &rbacv1.Role{
		TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "Role"},
		ObjectMeta: metav1.ObjectMeta{Name: KubeconfigRole, Namespace: "eksa-system", Labels: label},
		Rules:      []rbacv1.PolicyRule{},
	}
	var names []string
	for _, c := range o.WorkloadClusters {
		names = append(names, spec.KubeconfigSecret(c))
	}
	if names = slices.Compact(slices.Sorted(slices.Values(names))); len(names) > 0 {
		role.Rules = append(role.Rules, rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get"}, ResourceNames: names})
	}
	return []any{role, &rbacv1.RoleBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "RoleBinding"},
		ObjectMeta: metav1.ObjectMeta{Name: KubeconfigRole, Namespace: "eksa-system", Labels: label},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: KubeconfigRole},
		Subjects:   []rbacv1.Subject{sa},
	}}
}

// mergeRules drops rules repeated for a namespace (the same core rule for a
// namespace that is both a catalog and a monitoring namespace).
func mergeRules(in []rbacv1.PolicyRule) []rbacv1.PolicyRule {
	var out []rbacv1.PolicyRule
	seen := map[string]bool{}
	for _, r := range in {
		key := fmt.Sprint(r)
		if !seen[key] {
			seen[key] = true
			out = append(out, r)
		}
	}
	return out
}

// toYAML renders objects as YAML documents, without the empty fields typed
// objects carry (creationTimestamp, status).
func toYAML(objs []any) ([]byte, error) {
	var out []byte
	for _, o := range objs {
		u, ok := o.(map[string]any) // already unstructured
		if !ok {
			var err error
			if u, err = runtime.DefaultUnstructuredConverter.ToUnstructured(o); err != nil {
				return nil, err
			}
		}
		delete(u, "status")
		if md, ok := u["metadata"].(map[string]any); ok {
			delete(md, "creationTimestamp")
		}
		b, err := yaml.Marshal(u)
		if err != nil {
			return nil, err
		}
		out = append(out, "---\n"...)
		out = append(out, b...)
	}
	return out, nil
}
