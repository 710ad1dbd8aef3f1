package config

import (
	"fmt"
	"regexp"
	"strings"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/eksa-metrics/eksa-metrics/pkg/kubeadm"
	"github.com/eksa-metrics/eksa-metrics/pkg/spec"
)

// DefaultImagePrefixes are where the images the controller runs may come
// from by default: kube-rbac-proxy's and HAProxy's upstream repositories
// (spec.images' defaults) and EKS Anywhere's, which its Bundles name
// (--images-from-bundles).
var DefaultImagePrefixes = []string{
	Repository(spec.DefaultKubeRBACProxyImage), Repository(spec.DefaultHAProxyImage), "public.ecr.aws/eks-anywhere/",
}

// ImageRegexp matches the image references under the prefixes: a prefix
// that ends in "/" (a registry or a path) allows any repository below it; a
// repository allows its own tags and digests only.
func ImageRegexp(prefixes []string) string {
	var alts []string
	for _, p := range prefixes {
		if strings.HasSuffix(p, "/") {
			alts = append(alts, regexp.QuoteMeta(p)+"[^:@\\s]+[:@][^/\\s]+")
		} else {
			alts = append(alts, regexp.QuoteMeta(p)+"[:@][^/\\s]+")
		}
	}
	return "^(" + strings.Join(alts, "|") + ")$"
}

// Repository is an image reference without its tag or digest.
func Repository(image string) string {
	if i := strings.Index(image, "@"); i >= 0 {
		image = image[:i]
	}
	if i := strings.LastIndex(image, ":"); i > strings.LastIndex(image, "/") {
		image = image[:i]
	}
	return image
}

// owned are the resources whose every object the controller writes is its
// own, labelled managed-by eksa-metrics: it creates them with the label, and
// changes or deletes only those that carry it (a Package, Issuer or binding
// of the platform's is not eksa-metrics' to take over or delete).
var owned = []string{"clusterroles", "clusterrolebindings", "roles", "rolebindings", "services", "serviceaccounts", "configmaps", "secrets",
	"daemonsets", "servicemonitors", "prometheusrules", "packages", "certificates", "issuers", "clusterissuers"}

// admissionPolicy holds the controller's writes to what it renders, where
// RBAC cannot: create takes no resourceNames, a name says nothing of the
// content, and update covers the whole object. For the controller's
// ServiceAccount only:
//   - an object of an owned kind is created with eksa-metrics' label, and
//     changed or deleted only when it carries it; kube-proxy's ConfigMap
//     (its configuration only) and DaemonSet (a restart) are the exceptions;
//   - a DaemonSet is one of the two proxies, runs as the proxies'
//     ServiceAccount, from an allowed image, with no privilege, host
//     namespace but the network, init container or host path;
//   - a management Deployment it edits keeps its ServiceAccount, host
//     settings, init containers and every container's image and command;
//     it may add only the sidecar (an allowed image, no privilege) and
//     Secret, ConfigMap or projected volumes;
//   - a KubeadmControlPlane changes only the extraArgs items eksa-metrics
//     renders (kubeadm.Flags) and its own and the GitOps tools' annotations;
//   - a role is one of eksa-metrics' reader and discovery roles, read-only;
//     a binding binds one of them or system:auth-delegator, never to a
//     group that stands for everyone;
//   - an Issuer is self-signed or signs from eksa-metrics' own CA Secret; a
//     Certificate is issued by eksa-metrics' Issuers;
//   - a Package is the prometheus package; a ServiceAccount token Secret is
//     the sidecar's, or the scraper's in a monitoring namespace.
//
// ValidatingAdmissionPolicy is served as admissionregistration.k8s.io/v1
// from Kubernetes 1.30.
func admissionPolicy(o Options, label map[string]string) []any {
	name := ControllerName
	user := fmt.Sprintf("system:serviceaccount:%s:%s", o.Namespace, ControllerName)
	rule := func(group string, resources []string) admissionv1.NamedRuleWithOperations {
		return admissionv1.NamedRuleWithOperations{RuleWithOperations: admissionv1.RuleWithOperations{
			Operations: []admissionv1.OperationType{admissionv1.Create, admissionv1.Update, admissionv1.Delete},
			Rule:       admissionv1.Rule{APIGroups: []string{group}, APIVersions: []string{"*"}, Resources: resources}}}
	}
	policy := &admissionv1.ValidatingAdmissionPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "ValidatingAdmissionPolicy"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: label},
		Spec: admissionv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr.To(admissionv1.Fail),
			MatchConstraints: &admissionv1.MatchResources{ResourceRules: []admissionv1.NamedRuleWithOperations{
				rule("", []string{"services", "serviceaccounts", "configmaps", "secrets"}),
				rule("apps", []string{"daemonsets", "deployments"}),
				rule("rbac.authorization.k8s.io", []string{"clusterroles", "clusterrolebindings", "roles", "rolebindings"}),
				rule("monitoring.coreos.com", []string{"servicemonitors", "prometheusrules"}),
				rule("packages.eks.amazonaws.com", []string{"packages"}),
				rule("cert-manager.io", []string{"certificates", "issuers", "clusterissuers"}),
				rule(kubeadm.Group, []string{"kubeadmcontrolplanes"}),
				rule("events.k8s.io", []string{"events"}),
			}},
			MatchConditions: []admissionv1.MatchCondition{{Name: "the-controller", Expression: fmt.Sprintf("request.userInfo.username == %q", user)}},
			Validations:     rules(o),
		},
	}
	binding := &admissionv1.ValidatingAdmissionPolicyBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "ValidatingAdmissionPolicyBinding"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: label},
		Spec:       admissionv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: name, ValidationActions: []admissionv1.ValidationAction{admissionv1.Deny}},
	}
	return []any{policy, binding}
}

// hasPath: every step of a path is set.
func hasPath(root string, path []string) string {
	var parts []string
	for i := range path {
		parts = append(parts, "has("+root+"."+strings.Join(path[:i+1], ".")+")")
	}
	return "(" + strings.Join(parts, " && ") + ")"
}

func celList(items []string) string {
	var q []string
	for _, s := range items {
		q = append(q, fmt.Sprintf("%q", s))
	}
	return "[" + strings.Join(q, ", ") + "]"
}
