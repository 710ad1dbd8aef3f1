package config

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/eksa-metrics/eksa-metrics/pkg/kubeadm"
	"github.com/eksa-metrics/eksa-metrics/pkg/kubeproxy"
	"github.com/eksa-metrics/eksa-metrics/pkg/spec"
	"github.com/eksa-metrics/eksa-metrics/pkg/templates"
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
			}},
			MatchConditions: []admissionv1.MatchCondition{{Name: "the-controller", Expression: fmt.Sprintf("request.userInfo.username == %q", user)}},
			Validations:     validations(o),
		},
	}
	binding := &admissionv1.ValidatingAdmissionPolicyBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "ValidatingAdmissionPolicyBinding"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: label},
		Spec:       admissionv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: name, ValidationActions: []admissionv1.ValidationAction{admissionv1.Deny}},
	}
	return []any{policy, binding}
}

func validations(o Options) []admissionv1.Validation {
	ours := func(obj string) string {
		return fmt.Sprintf("(has(%[1]s.metadata.labels) && %[2]q in %[1]s.metadata.labels && %[1]s.metadata.labels[%[2]q] == %[3]q)", obj, templates.ManagedByLabel, templates.Prefix)
	}
	is := func(resources ...string) string { return "request.resource.resource in " + celList(resources) }
	kubeProxy := fmt.Sprintf("request.operation == 'UPDATE' && request.namespace == %q && request.name == %q", kubeproxy.Namespace, kubeproxy.Name)
	sa := func(obj string) string {
		return fmt.Sprintf("(has(%[1]s.spec.template.spec.serviceAccountName) ? %[1]s.spec.template.spec.serviceAccountName : (has(%[1]s.spec.template.spec.serviceAccount) ? %[1]s.spec.template.spec.serviceAccount : 'default'))", obj)
	}
	pod, oldPod := "object.spec.template.spec", "oldObject.spec.template.spec"
	prefixes := append(slices.Clone(DefaultImagePrefixes), o.ImagePrefixes...)
	allowedImage := func(c string) string {
		return fmt.Sprintf("%s.image.matches(%q)", c, ImageRegexp(prefixes))
	}
	unprivileged := func(c string) string {
		return fmt.Sprintf("(!has(%[1]s.securityContext) || ((!has(%[1]s.securityContext.privileged) || !%[1]s.securityContext.privileged) && "+
			"(!has(%[1]s.securityContext.capabilities) || !has(%[1]s.securityContext.capabilities.add))))", c)
	}
	noHost := func(p string) string {
		return fmt.Sprintf("(!has(%[1]s.hostPID) || !%[1]s.hostPID) && (!has(%[1]s.hostIPC) || !%[1]s.hostIPC)", p)
	}
	benignVolume := "(has(v.secret) || has(v.configMap) || has(v.projected))"
	out := []admissionv1.Validation{
		{Expression: fmt.Sprintf("!(%s) || (request.operation == 'CREATE' ? %s : (%s || (%s && (request.operation == 'DELETE' || %s))))",
			is(owned...), ours("object"), kubeProxyException(kubeProxy, pod, oldPod), ours("oldObject"), ours("object")),
			Message: "the eksa-metrics controller creates objects labelled " + templates.ManagedByLabel + "=" + templates.Prefix + " and changes or deletes only those (kube-proxy's ConfigMap and DaemonSet in kube-system excepted)"},
		{Expression: fmt.Sprintf("!(%s) || request.operation == 'DELETE' || (request.name in %s && %s == %q && %s && (!has(%s.initContainers)) && (!has(%s.ephemeralContainers)) && %s.containers.all(c, %s && %s) && (!has(%s.volumes) || %s.volumes.all(v, %s)))",
			is("daemonsets")+" && !("+kubeProxy+")", celList([]string{templates.ControlPlaneDS, templates.NodeDS}), sa("object"), templates.ProxySA,
			noHost(pod), pod, pod, pod, allowedImage("c"), unprivileged("c"), pod, pod, benignVolume),
			Message: fmt.Sprintf("the eksa-metrics controller may write only its proxy DaemonSets (%s, %s), as the ServiceAccount %s, from an image under %s, without privilege, host PID or IPC, init containers or host paths",
				templates.ControlPlaneDS, templates.NodeDS, templates.ProxySA, strings.Join(prefixes, ", "))},
		{Expression: fmt.Sprintf("!(%s) || (request.operation == 'UPDATE' && %s == %s && %s && %s && %s && %s && %s.containers.all(c, %s.containers.exists(p, p.name == c.name && p.image == c.image && %s) || (c.name == %q && %s && %s)) && (!has(%s.volumes) || %s.volumes.all(v, %s || (has(%s.volumes) && %s.volumes.exists(w, w == v)))))",
			is("deployments"), sa("object"), sa("oldObject"), same(pod, oldPod, "hostNetwork"), same(pod, oldPod, "hostPID"), same(pod, oldPod, "hostIPC"),
			same(pod, oldPod, "initContainers")+" && "+same(pod, oldPod, "ephemeralContainers"),
			pod, oldPod, same("c", "p", "command")+" && "+same("c", "p", "env")+" && "+same("c", "p", "envFrom")+" && "+same("c", "p", "securityContext"), templates.SidecarName, allowedImage("c"), unprivileged("c"), pod, pod, benignVolume, oldPod, oldPod),
			Message: "the eksa-metrics controller creates no Deployment and edits one only by adding its " + templates.SidecarName + " sidecar (an allowed image, without privilege), Secret, ConfigMap or projected volumes, and flags: every other container keeps its image, command, environment and security context, the pod its ServiceAccount, host settings and init containers"},
		{Expression: fmt.Sprintf("!(%s) || request.operation == 'DELETE' || (request.name in %s && object.rules.all(r, !has(r.verbs) || r.verbs.all(v, v in ['get', 'list', 'watch'])) && object.rules.all(r, !has(r.resources) || r.resources.all(x, x in %s)))",
			is("roles", "clusterroles"), celList([]string{templates.ReaderRole, templates.ZPageReaderRole, templates.DiscoveryRole}),
			celList([]string{"nodes/metrics", "nodes/statusz", "nodes/configz", "endpointslices", "pods", "services"})),
			Message: "the eksa-metrics controller may write only its reader and discovery roles, read-only, on metrics, z-pages and target discovery"},
		{Expression: fmt.Sprintf("!(%s) || request.operation == 'DELETE' || (object.roleRef.name in %s && (!has(object.subjects) || object.subjects.all(s, !(s.name in %s) && !s.name.startsWith('system:serviceaccounts:'))))",
			is("rolebindings", "clusterrolebindings"), celList([]string{templates.ReaderRole, templates.ZPageReaderRole, templates.DiscoveryRole, templates.AuthDelegator}),
			celList(spec.EveryoneNames())),
			Message: "the eksa-metrics controller may bind only its reader and discovery roles and system:auth-delegator, and never to a group that stands for everyone"},
		{Expression: fmt.Sprintf("!(%s) || request.operation == 'DELETE' || has(object.spec.selfSigned) || (has(object.spec.ca) && object.spec.ca.secretName == %q)",
			is("issuers", "clusterissuers"), templates.IssuerCA),
			Message: "the eksa-metrics controller may write only a self-signed Issuer or one that signs from its own CA Secret " + templates.IssuerCA},
		{Expression: fmt.Sprintf("!(%s) || request.operation == 'DELETE' || object.spec.issuerRef.name in %s",
			is("certificates"), celList([]string{templates.SelfSignedIssuer, templates.CAIssuer})),
			Message: "the eksa-metrics controller may write only Certificates that its own Issuers issue"},
		{Expression: "!(" + is("packages") + ") || request.operation == 'DELETE' || object.spec.packageName == 'prometheus'",
			Message: "the eksa-metrics controller may write only the prometheus Package"},
		// A token Secret names the ServiceAccount whose token the token
		// controller puts in it: the sidecar's, or (the management
		// cluster's ServiceMonitors) the scraper's, in a monitoring
		// namespace.
		{Expression: fmt.Sprintf("!(%s) || request.operation == 'DELETE' || !has(object.type) || object.type != 'kubernetes.io/service-account-token' || (has(object.metadata.annotations) && 'kubernetes.io/service-account.name' in object.metadata.annotations && (object.metadata.annotations['kubernetes.io/service-account.name'] == %q || (request.name == %q && request.namespace in %s)))",
			is("secrets"), templates.SidecarSA, templates.ScraperTokenSecret, celList(o.MonitoringNamespaces)),
			Message: fmt.Sprintf("the eksa-metrics controller may write a ServiceAccount token Secret only for %s, or %s in a monitoring namespace (%s)", templates.SidecarSA, templates.ScraperTokenSecret, strings.Join(o.MonitoringNamespaces, ", "))},
		{Expression: fmt.Sprintf("!(%s) || (request.operation == 'UPDATE' && %s && %s && %s)", is("kubeadmcontrolplanes"),
			kcpUnchanged(),
			fmt.Sprintf("(%s ? %s : (request.resource.version == 'v1beta2' && %s))", "request.resource.version == 'v1beta1'", extraArgsOnly(false), extraArgsOnly(true)),
			annotationsOnly()),
			Message: "the eksa-metrics controller may change a KubeadmControlPlane only in the extraArgs items it renders (" + strings.Join(kubeadm.FlagNames(), ", ") + ") and its annotations"},
	}
	return out
}

// kubeProxyException: an update of kube-proxy's ConfigMap changes only its
// configuration file, one of its DaemonSet only the pod template's
// annotations (a restart).
func kubeProxyException(kubeProxy, pod, oldPod string) string {
	cm := fmt.Sprintf("(request.resource.resource == 'configmaps' && (!has(object.binaryData) && !has(oldObject.binaryData) || has(object.binaryData) && has(oldObject.binaryData) && object.binaryData == oldObject.binaryData) && "+
		"object.data.all(k, k == %[1]q || (k in oldObject.data && oldObject.data[k] == object.data[k])) && oldObject.data.all(k, k == %[1]q || k in object.data))", kubeproxy.Key)
	ds := fmt.Sprintf("(request.resource.resource == 'daemonsets' && %s == %s && object.spec.selector == oldObject.spec.selector)", pod, oldPod)
	return fmt.Sprintf("(%s && (%s || %s))", kubeProxy, cm, ds)
}

// same: a field is set on both or neither, and equal.
func same(a, b, field string) string {
	return fmt.Sprintf("(has(%[1]s.%[3]s) == has(%[2]s.%[3]s) && (!has(%[1]s.%[3]s) || %[1]s.%[3]s == %[2]s.%[3]s))", a, b, field)
}

// hasPath: every step of a path is set.
func hasPath(root string, path []string) string {
	var parts []string
	for i := range path {
		parts = append(parts, "has("+root+"."+strings.Join(path[:i+1], ".")+")")
	}
	return "(" + strings.Join(parts, " && ") + ")"
}

// samePath: a nested field is set on both objects or neither, and equal.
func samePath(path []string) string {
	p := strings.Join(path, ".")
	return fmt.Sprintf("(%[1]s == %[2]s && (!%[1]s || object.%[3]s == oldObject.%[3]s))", hasPath("object", path), hasPath("oldObject", path), p)
}

// kcpFields are the fields of a KubeadmControlPlane's spec, in v1beta1 and
// v1beta2 alike, that say what runs on the control-plane machines and how
// many there are (everything but extraArgs that matters: commands, files,
// users, the machine template, volumes, images, the version).
var kcpFields = func() [][]string {
	out := [][]string{{"spec", "replicas"}, {"spec", "version"}, {"spec", "machineTemplate"}}
	for _, f := range []string{"files", "preKubeadmCommands", "postKubeadmCommands", "users", "initConfiguration", "joinConfiguration", "format", "mounts", "diskSetup", "ntp"} {
		out = append(out, []string{"spec", "kubeadmConfigSpec", f})
	}
	for _, f := range []string{"imageRepository", "dns", "featureGates", "etcd.external", "etcd.local.dataDir", "etcd.local.imageRepository", "etcd.local.imageTag",
		"apiServer.certSANs", "apiServer.extraVolumes", "controllerManager.extraVolumes", "scheduler.extraVolumes"} {
		out = append(out, append([]string{"spec", "kubeadmConfigSpec", "clusterConfiguration"}, strings.Split(f, ".")...))
	}
	return out
}()

// kcpUnchanged: those fields are as they were.
func kcpUnchanged() string {
	var parts []string
	for _, f := range kcpFields {
		parts = append(parts, samePath(f))
	}
	return "(" + strings.Join(parts, " && ") + ")"
}

// extraArgsOnly: items of each component's extraArgs come and go, or change
// value, only when eksa-metrics renders that flag (v1beta2: a list of name
// and value; v1beta1: a map).
func extraArgsOnly(list bool) string {
	var parts []string
	for _, comp := range kubeadm.Components() {
		path := append([]string{"spec", "kubeadmConfigSpec", "clusterConfiguration"}, comp.Path()...)
		p := strings.Join(path, ".")
		allowed := celList(kubeadm.Flags[comp])
		hasNew, hasOld := hasPath("object", path), hasPath("oldObject", path)
		if list {
			parts = append(parts, fmt.Sprintf("(!%[1]s || object.%[3]s.all(a, a.name in %[4]s || (%[2]s && oldObject.%[3]s.exists(b, b.name == a.name && b.value == a.value)))) && "+
				"(!%[2]s || oldObject.%[3]s.all(b, b.name in %[4]s || (%[1]s && object.%[3]s.exists(a, a.name == b.name && a.value == b.value))))", hasNew, hasOld, p, allowed))
		} else {
			parts = append(parts, fmt.Sprintf("(!%[1]s || object.%[3]s.all(k, k in %[4]s || (%[2]s && k in oldObject.%[3]s && oldObject.%[3]s[k] == object.%[3]s[k]))) && "+
				"(!%[2]s || oldObject.%[3]s.all(k, k in %[4]s || (%[1]s && k in object.%[3]s)))", hasNew, hasOld, p, allowed))
		}
	}
	return "(" + strings.Join(parts, " && ") + ")"
}

// annotationsOnly: the labels stay; annotations change only in
// eksa-metrics' own keys and the GitOps tools' do-not-prune marks.
func annotationsOnly() string {
	mine := fmt.Sprintf("(k.startsWith('metrics.anywhere.eks.amazonaws.com/') || k in %s)", celList([]string{kubeadm.FluxPruneAnnotation, kubeadm.ArgoSyncOptionsAnnotation}))
	return fmt.Sprintf("%s && (!has(object.metadata.annotations) || object.metadata.annotations.all(k, %[2]s || (has(oldObject.metadata.annotations) && k in oldObject.metadata.annotations && oldObject.metadata.annotations[k] == object.metadata.annotations[k]))) && "+
		"(!has(oldObject.metadata.annotations) || oldObject.metadata.annotations.all(k, %[2]s || (has(object.metadata.annotations) && k in object.metadata.annotations)))",
		same("object.metadata", "oldObject.metadata", "labels"), mine)
}

func celList(items []string) string {
	var q []string
	for _, s := range items {
		q = append(q, fmt.Sprintf("%q", s))
	}
	return "[" + strings.Join(q, ", ") + "]"
}
