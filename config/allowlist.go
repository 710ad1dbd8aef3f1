package config

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	admissionv1 "k8s.io/api/admissionregistration/v1"

	metricsv1alpha1 "github.com/eksa-metrics/eksa-metrics/pkg/apis/metrics/v1alpha1"
	"github.com/eksa-metrics/eksa-metrics/pkg/components"
	"github.com/eksa-metrics/eksa-metrics/pkg/kubeadm"
	"github.com/eksa-metrics/eksa-metrics/pkg/kubeproxy"
	"github.com/eksa-metrics/eksa-metrics/pkg/spec"
	"github.com/eksa-metrics/eksa-metrics/pkg/templates"
)

// The admission policy's rules are an allowlist per kind. An object the
// controller creates has the shape the renderer gives it: its fields (the
// API server's defaults included) and nothing else, and each value that
// grants something (an image, a command, a flag, a port, a volume, a
// security context, a Service type, a Secret type, an issuer) one the
// renderer writes. An object it edits (a management Deployment, the
// KubeadmControlPlane, kube-proxy's ConfigMap and DaemonSet) is, minus the
// paths eksa-metrics owns, what it was (unchangedBut), and the owned paths
// hold only values the render writes or gives back.

// rules are the policy's validations.
func rules(o Options) []admissionv1.Validation {
	prefixes := append(slices.Clone(DefaultImagePrefixes), o.ImagePrefixes...)
	a := allow{images: ImageRegexp(prefixes), prefixes: prefixes}
	// kube-proxy's ConfigMap and DaemonSet share the name.
	kubeProxy := fmt.Sprintf("request.namespace == %q && request.name == %q", kubeproxy.Namespace, kubeproxy.Name)
	return []admissionv1.Validation{
		{Expression: fmt.Sprintf("!(%s) || (request.operation == 'CREATE' ? %s : ((request.operation == 'UPDATE' && %s && %s) || (%s && (request.operation == 'DELETE' || %s))))",
			is(owned...), ours("object"), kubeProxy, is("configmaps", "daemonsets"), ours("oldObject"), ours("object")),
			Message: "the eksa-metrics controller creates objects labelled " + templates.ManagedByLabel + "=" + templates.Prefix + " and changes or deletes only those (kube-proxy's ConfigMap and DaemonSet in kube-system excepted)"},
		a.daemonSets(kubeProxy),
		kubeProxyConfigMap(kubeProxy),
		kubeProxyDaemonSet(kubeProxy),
		a.deployments(),
		{Expression: fmt.Sprintf("!(%s) || request.operation == 'DELETE' || (request.name in %s && object.rules.all(r, !has(r.verbs) || r.verbs.all(v, v in ['get', 'list', 'watch'])) && object.rules.all(r, !has(r.resources) || r.resources.all(x, x in %s)))",
			is("roles", "clusterroles"), celList([]string{templates.ReaderRole, templates.ZPageReaderRole, templates.DiscoveryRole}),
			celList([]string{"nodes/metrics", "nodes/statusz", "nodes/configz", "endpointslices", "pods", "services"})),
			Message: "the eksa-metrics controller may write only its reader and discovery roles, read-only, on metrics, z-pages and target discovery"},
		{Expression: fmt.Sprintf("!(%s) || request.operation == 'DELETE' || (object.roleRef.name in %s && (!has(object.subjects) || object.subjects.all(s, !(s.name in %s) && !s.name.startsWith('system:serviceaccounts:'))))",
			is("rolebindings", "clusterrolebindings"), celList([]string{templates.ReaderRole, templates.ZPageReaderRole, templates.DiscoveryRole, templates.AuthDelegator}),
			celList(spec.EveryoneNames())),
			Message: "the eksa-metrics controller may bind only its reader and discovery roles and system:auth-delegator, and never to a group that stands for everyone"},
		{Expression: fmt.Sprintf("!(%s) || request.operation == 'DELETE' || (%s && %s && (has(object.spec.selfSigned) ? %s : (has(object.spec.ca) && %s && object.spec.ca.secretName == %q)))",
			is("issuers", "clusterissuers"), is("issuers"), onlyKeys("object.spec", "selfSigned", "ca"), onlyKeys("object.spec.selfSigned"), onlyKeys("object.spec.ca", "secretName"), templates.IssuerCA),
			Message: "the eksa-metrics controller may write only a self-signed Issuer or one that signs from its own CA Secret " + templates.IssuerCA + ", and no ClusterIssuer"},
		certificates(),
		services(),
		secrets(o),
		packages(),
		kubeadmControlPlanes(),
		events(o),
	}
}

// events: what the controller reports is about a MetricsConfig (and the
// Cluster an apply was of), in its namespace, as eksa-metrics' controller;
// its own namespace has its leader election's.
func events(o Options) admissionv1.Validation {
	return admissionv1.Validation{
		Expression: fmt.Sprintf("!(request.resource.group == 'events.k8s.io' && %s) || request.operation == 'DELETE' || request.namespace == %q || "+
			"(has(object.regarding) && has(object.regarding.kind) && object.regarding.kind == 'MetricsConfig' && has(object.regarding.apiVersion) && object.regarding.apiVersion.startsWith(%q) && "+
			"has(object.regarding.namespace) && object.regarding.namespace == request.namespace && (!has(object.related) || (has(object.related.kind) && object.related.kind == 'Cluster')) && has(object.reportingController) && object.reportingController == %q)",
			is("events"), o.Namespace, metricsv1alpha1.GroupVersion.Group+"/", ControllerName),
		Message: "the eksa-metrics controller may report events only about a MetricsConfig, in its namespace, as " + ControllerName}
}

// allow holds what the rules of created pods allow.
type allow struct {
	images   string
	prefixes []string
}

func is(resources ...string) string { return "request.resource.resource in " + celList(resources) }

func ours(obj string) string {
	return fmt.Sprintf("(has(%[1]s.metadata.labels) && %[2]q in %[1]s.metadata.labels && %[1]s.metadata.labels[%[2]q] == %[3]q)", obj, templates.ManagedByLabel, templates.Prefix)
}

// celQuote is a CEL string literal.
func celQuote(s string) string { return strconv.Quote(s) }

// podSA is the pod template's ServiceAccount.
func podSA(obj string) string {
	return fmt.Sprintf("(has(%[1]s.spec.template.spec.serviceAccountName) ? %[1]s.spec.template.spec.serviceAccountName : (has(%[1]s.spec.template.spec.serviceAccount) ? %[1]s.spec.template.spec.serviceAccount : 'default'))", obj)
}

// hardened: the container security context the renderer gives every
// container (templates' hardened): a user that is not root, no privilege
// escalation, a read-only root, every capability dropped, nothing else.
func hardened(c string) string {
	sc := c + ".securityContext"
	return fmt.Sprintf("(has(%[1]s) && %[2]s && has(%[1]s.runAsUser) && %[1]s.runAsUser > 0 && has(%[1]s.runAsNonRoot) && %[1]s.runAsNonRoot && "+
		"has(%[1]s.allowPrivilegeEscalation) && !%[1]s.allowPrivilegeEscalation && has(%[1]s.readOnlyRootFilesystem) && %[1]s.readOnlyRootFilesystem && "+
		"has(%[1]s.capabilities) && %[3]s && has(%[1]s.capabilities.drop) && %[1]s.capabilities.drop == ['ALL'])",
		sc, onlyKeys(sc, "runAsUser", "runAsGroup", "runAsNonRoot", "allowPrivilegeEscalation", "readOnlyRootFilesystem", "capabilities"), onlyKeys(sc+".capabilities", "drop"))
}

// containerDefaults are the container fields the API server fills in.
var containerDefaults = []string{"terminationMessagePath", "terminationMessagePolicy", "imagePullPolicy"}

// argsMatch: every argument matches one of the patterns.
func argsMatch(c string, patterns ...string) string {
	return fmt.Sprintf("(!has(%[1]s.args) || %[1]s.args.all(a, a.matches(%[2]q)))", c, "^("+strings.Join(patterns, "|")+")$")
}

var (
	tlsVersion  = "VersionTLS1[23]"
	servingFile = regexp.QuoteMeta(templates.ServingDirRoot) + "[a-z0-9-]+/tls\\.(crt|key)"
	// servingFlags are kube-rbac-proxy's flags of a serving certificate.
	servingFlags = `--tls-(cert|private-key)-file=` + servingFile
)

// readOnlyMount: the volume mount m has a name, a path and readOnly: true,
// nothing else.
func readOnlyMount(m string) string {
	return fmt.Sprintf("(%[2]s && has(%[1]s.readOnly) && %[1]s.readOnly)", m, onlyKeys(m, "name", "mountPath", "readOnly"))
}

// servingSecret: the Secret name x is a serving certificate's of
// eksa-metrics (templates.ServingSecret).
func servingSecret(x string) string {
	return fmt.Sprintf("(%[1]s.startsWith(%[2]q) && %[1]s.endsWith('-serving'))", x, templates.Prefix+"-")
}

// proxyPorts are the ports the proxy DaemonSets serve: the catalog's
// proxied components.
func proxyPorts() []string {
	var out []string
	for _, r := range components.ClusterCatalog {
		if r.Proxy != components.NoProxy {
			out = append(out, strconv.Itoa(r.Port))
		}
	}
	return out
}

// daemonSets: the two proxy DaemonSets as the renderer writes them
// (templates.Proxies).
func (a allow) daemonSets(kubeProxy string) admissionv1.Validation {
	pod := "object.spec.template.spec"
	ports := "(" + strings.Join(proxyPorts(), "|") + ")"
	container := "(" + strings.Join([]string{
		onlyKeys("c", append([]string{"name", "image", "command", "args", "env", "ports", "resources", "securityContext", "volumeMounts"}, containerDefaults...)...),
		fmt.Sprintf("c.image.matches(%q)", a.images),
		hardened("c"),
		fmt.Sprintf("(!has(c.command) || c.command == %s)", celList(templates.HAProxyCommand())),
		argsMatch("c", `--secure-listen-address=\$\(`+templates.NodeIPEnv+`\):`+ports, `--upstream=http://127\.0\.0\.1:`+ports+`/`,
			`--allow-paths=/[a-z/]+(,/[a-z/]+)*`, `--tls-min-version=`+tlsVersion, servingFlags),
		fmt.Sprintf("(!has(c.env) || c.env.all(v, %s && v.name == %q && has(v.valueFrom) && %s && has(v.valueFrom.fieldRef) && v.valueFrom.fieldRef.fieldPath == 'status.hostIP'))",
			onlyKeys("v", "name", "valueFrom"), templates.NodeIPEnv, onlyKeys("v.valueFrom", "fieldRef")),
		fmt.Sprintf("(!has(c.ports) || c.ports.all(p, %s && string(p.containerPort).matches(%q) && (!has(p.hostPort) || p.hostPort == p.containerPort)))",
			onlyKeys("p", "name", "containerPort", "protocol", "hostPort"), "^"+ports+"$"),
		fmt.Sprintf("(!has(c.volumeMounts) || c.volumeMounts.all(m, %s && (m.mountPath in %s || m.mountPath.startsWith(%q))))",
			readOnlyMount("m"), celList([]string{templates.HAProxyCfgDir, templates.ServiceAccountDir}), templates.ServingDirRoot),
	}, " && ") + ")"
	volume := fmt.Sprintf("(%s && (has(v.configMap) ? v.configMap.name == %q : (has(v.secret) ? %s : "+
		"(has(v.projected) && v.projected.sources.all(s, has(s.serviceAccountToken) || has(s.downwardAPI) || (has(s.configMap) && s.configMap.name == 'kube-root-ca.crt'))))))",
		onlyKeys("v", "name", "configMap", "secret", "projected"), templates.ControlPlaneDS, servingSecret("v.secret.secretName"))
	expr := strings.Join([]string{
		fmt.Sprintf("request.name in %s", celList([]string{templates.ControlPlaneDS, templates.NodeDS})),
		onlyKeys("object.spec", "selector", "template", "updateStrategy", "revisionHistoryLimit"),
		onlyKeys(pod, "automountServiceAccountToken", "containers", "dnsPolicy", "hostNetwork", "nodeSelector", "priorityClassName", "securityContext",
			"serviceAccountName", "serviceAccount", "tolerations", "volumes", "restartPolicy", "terminationGracePeriodSeconds", "schedulerName"),
		fmt.Sprintf("%s == %q", podSA("object"), templates.ProxySA),
		fmt.Sprintf("has(%[1]s.automountServiceAccountToken) && !%[1]s.automountServiceAccountToken", pod),
		fmt.Sprintf("(!has(%[1]s.priorityClassName) || %[1]s.priorityClassName == 'system-node-critical')", pod),
		fmt.Sprintf("has(%[1]s.securityContext) && %[2]s && has(%[1]s.securityContext.runAsNonRoot) && %[1]s.securityContext.runAsNonRoot && "+
			"has(%[1]s.securityContext.seccompProfile) && %[3]s && %[1]s.securityContext.seccompProfile.type == 'RuntimeDefault'",
			pod, onlyKeys(pod+".securityContext", "fsGroup", "runAsNonRoot", "seccompProfile"), onlyKeys(pod+".securityContext.seccompProfile", "type")),
		fmt.Sprintf("%s.containers.all(c, %s)", pod, container),
		fmt.Sprintf("(!has(%[1]s.volumes) || %[1]s.volumes.all(v, %[2]s))", pod, volume),
	}, " && ")
	return admissionv1.Validation{
		Expression: fmt.Sprintf("!(%s && !(%s)) || request.operation == 'DELETE' || (%s)", is("daemonsets"), kubeProxy, expr),
		Message: fmt.Sprintf("the eksa-metrics controller may write only its proxy DaemonSets (%s, %s) as it renders them: the ServiceAccount %s without an automounted token, images under %s, "+
			"the hardened security context, kube-rbac-proxy's rendered flags or HAProxy's command, the proxied ports, read-only mounts of its own Secrets and ConfigMap, no other field",
			templates.ControlPlaneDS, templates.NodeDS, templates.ProxySA, strings.Join(a.prefixes, ", "))}
}

// kubeProxyConfigMap: kube-proxy's configuration changes in its
// metricsBindAddress line only (kubeproxy.Reconcile), to an address on the
// metrics port, and eksa-metrics' record of the line.
func kubeProxyConfigMap(kubeProxy string) admissionv1.Validation {
	conf := func(obj string) string { return fmt.Sprintf("%s.data[%q]", obj, kubeproxy.Key) }
	line := "metricsBindAddress:"
	others := func(obj string) string {
		return fmt.Sprintf("%s.split('\\n').filter(l, !l.startsWith(%q))", conf(obj), line)
	}
	p := part{nested: map[string]part{
		"metadata": objectMeta("$k == " + celQuote(kubeproxy.RecordAnnotation)),
		"data":     {key: "$k == " + celQuote(kubeproxy.Key)},
	}}
	return admissionv1.Validation{
		Expression: fmt.Sprintf("!(%s && request.resource.resource == 'configmaps' && request.operation == 'UPDATE') || (%s && has(object.data) && has(oldObject.data) && %q in object.data && %q in oldObject.data && %s == %s && "+
			"%s.split('\\n').all(l, !l.startsWith(%q) || l.matches(%q)))",
			kubeProxy, unchangedBut("object", "oldObject", p), kubeproxy.Key, kubeproxy.Key, others("object"), others("oldObject"),
			conf("object"), line, `^metricsBindAddress: *"?((0\.0\.0\.0|127\.0\.0\.1|localhost)?:10249)?"?$`),
		Message: "the eksa-metrics controller may change kube-proxy's ConfigMap only in the metricsBindAddress line of " + kubeproxy.Key + " (an address on port 10249) and its record annotation " + kubeproxy.RecordAnnotation}
}

// kubeProxyDaemonSet: kube-proxy's DaemonSet changes in its pod template's
// restart annotation only.
func kubeProxyDaemonSet(kubeProxy string) admissionv1.Validation {
	p := part{nested: map[string]part{
		// The DaemonSet strategy counts template changes in an annotation
		// (k8s.io/kubernetes pkg/registry/apps/daemonset/strategy.go,
		// PrepareForUpdate).
		"metadata": objectMeta("$k == 'deprecated.daemonset.template.generation'"),
		"spec": {nested: map[string]part{"template": {nested: map[string]part{
			"metadata": {nested: map[string]part{"annotations": {key: "$k == " + celQuote(templates.RestartAnnotation)}}}}}}},
	}}
	return admissionv1.Validation{
		Expression: fmt.Sprintf("!(%s && request.resource.resource == 'daemonsets' && request.operation == 'UPDATE') || %s", kubeProxy, unchangedBut("object", "oldObject", p)),
		Message:    "the eksa-metrics controller may change kube-proxy's DaemonSet only in its pod template's annotation " + templates.RestartAnnotation + " (a restart)"}
}

// managementFlags are the arguments a management controller's edit sets
// (templates.ManagementEdits) and gives back, by name, and the values it
// sets.
func managementFlags() (names []string, values []string) {
	add := func(name string, value ...string) {
		if !slices.Contains(names, name) {
			names = append(names, name)
		}
		for _, v := range value {
			values = append(values, regexp.QuoteMeta(name)+"="+v)
		}
	}
	add("--diagnostics-address", regexp.QuoteMeta(fmt.Sprintf(":%d", components.MetricsPort)))
	add("--insecure-diagnostics", "false")
	add("--tls-cert-file", servingFile)
	add("--tls-private-key-file", servingFile)
	for _, m := range components.ManagementCatalog {
		for _, r := range m.Releases {
			for _, arg := range r.ShippedArgs {
				name, value, _ := strings.Cut(arg, "=")
				add(name, regexp.QuoteMeta(value))
			}
			if r.TLSFlag != "" {
				add(r.TLSFlag, tlsVersion)
			}
			if r.ListenFlag != "" {
				// The edit's loopback listener, and the listener as these
				// controllers ship it, which giving the edit back restores.
				add(r.ListenFlag, fmt.Sprintf(`(127\.0\.0\.1|localhost)?:%d`, r.UpstreamPort))
			}
		}
	}
	return names, values
}

// deployments: a management Deployment the controller edits
// (templates.ReconcileDeployment) is what it was but in its edit record, its
// containers' flags of managementFlags (to their values) and mounts of the
// serving certificate, the sidecar and the sidecar's volumes.
func (a allow) deployments() admissionv1.Validation {
	names, values := managementFlags()
	var flagNames []string
	for _, n := range names {
		flagNames = append(flagNames, regexp.QuoteMeta(n))
	}
	ownedFlag := "^(" + strings.Join(flagNames, "|") + ")(=.*)?$"
	ownVolumes := []string{templates.SidecarTokenVolume, templates.ServingVolume}
	hasTokenMount := func(c string) string {
		return fmt.Sprintf("(has(%[1]s.volumeMounts) && %[1]s.volumeMounts.exists(m, m.name == %[2]q && m.mountPath == %[3]q))", c, templates.SidecarTokenVolume, templates.ServiceAccountDir)
	}
	sidecar := func(c string) string {
		return "(" + strings.Join([]string{
			fmt.Sprintf("%s.name == %q", c, templates.SidecarName),
			onlyKeys(c, append([]string{"name", "image", "args", "ports", "securityContext", "resources", "volumeMounts"}, containerDefaults...)...),
			fmt.Sprintf("%s.image.matches(%q)", c, a.images),
			hardened(c),
			argsMatch(c, regexp.QuoteMeta(fmt.Sprintf("--secure-listen-address=0.0.0.0:%d", components.MetricsPort)), `--upstream=http://127\.0\.0\.1:[0-9]+/`,
				`--allow-paths=/metrics`, `--tls-min-version=`+tlsVersion, servingFlags),
			fmt.Sprintf("(!has(%[1]s.ports) || %[1]s.ports.all(p, %[2]s && p.containerPort == %[3]d))", c, onlyKeys("p", "name", "containerPort", "protocol"), components.MetricsPort),
			hasTokenMount(c),
			fmt.Sprintf("%s.volumeMounts.all(m, %s && ((m.name == %q && m.mountPath == %q) || (m.name == %q && m.mountPath.startsWith(%q))))",
				c, readOnlyMount("m"), templates.SidecarTokenVolume, templates.ServiceAccountDir, templates.ServingVolume, templates.ServingDirRoot),
		}, " && ") + ")"
	}
	// An edited container: its flags change only in managementFlags, each
	// set to a value the edit writes; its mounts only in the serving
	// certificate's.
	args := func(c, p string) string {
		list := func(x string) string { return fmt.Sprintf("(has(%[1]s.args) ? %[1]s.args : [])", x) }
		return fmt.Sprintf("%[1]s.all(x, x in %[2]s || x.matches(%[3]q)) && %[2]s.all(x, x in %[1]s || x.matches(%[4]q))",
			list(c), list(p), "^("+strings.Join(values, "|")+")$", ownedFlag)
	}
	mounts := func(c, p string) string {
		list := func(x string) string { return fmt.Sprintf("(has(%[1]s.volumeMounts) ? %[1]s.volumeMounts : [])", x) }
		return fmt.Sprintf("%[1]s.all(m, m in %[2]s || (m.name == %[3]q && %[4]s && (m.mountPath == %[5]q || m.mountPath.startsWith(%[6]q)))) && %[2]s.all(m, m in %[1]s || m.name == %[3]q)",
			list(c), list(p), templates.ServingVolume, readOnlyMount("m"), components.ControllerRuntimeCertDir, templates.ServingDirRoot)
	}
	volume := fmt.Sprintf("(%s && has(v.secret) && %s && has(v.secret.defaultMode) && v.secret.defaultMode == 292 && (v.name == %q ? v.secret.secretName == %q : %s))",
		onlyKeys("v", "name", "secret"), onlyKeys("v.secret", "secretName", "defaultMode", "optional"), templates.SidecarTokenVolume, templates.SidecarTokenSecret, servingSecret("v.secret.secretName"))
	pod, oldPod := "object.spec.template.spec", "oldObject.spec.template.spec"
	p := part{nested: map[string]part{
		"metadata": objectMeta("$k == " + celQuote(templates.EditRecordAnnotation)),
		"spec":     {nested: map[string]part{"template": {nested: map[string]part{"spec": {free: []string{"containers", "volumes"}}}}}},
	}}
	expr := strings.Join([]string{
		"request.operation == 'UPDATE'",
		unchangedBut("object", "oldObject", p),
		// Containers: the sidecar, or one that was there, changed only in
		// flags and mounts; none goes but the sidecar.
		fmt.Sprintf("%[1]s.containers.all(c, %[3]s || %[2]s.containers.exists(o, o.name == c.name && %[4]s && %[5]s && %[6]s))",
			pod, oldPod, sidecar("c"), unchangedBut("c", "o", part{free: []string{"args", "volumeMounts"}}), args("c", "o"), mounts("c", "o")),
		fmt.Sprintf("%[2]s.containers.all(o, %[1]s.containers.exists(c, c.name == o.name) || (o.name == %[3]q && %[4]s))", pod, oldPod, templates.SidecarName, hasTokenMount("o")),
		// Volumes: eksa-metrics' own, as the edit writes them, come and go.
		fmt.Sprintf("(!has(%[1]s.volumes) || %[1]s.volumes.all(v, (v.name in %[3]s && %[4]s) || (!(v.name in %[3]s) && has(%[2]s.volumes) && %[2]s.volumes.exists(w, w == v))))", pod, oldPod, celList(ownVolumes), volume),
		fmt.Sprintf("(!has(%[2]s.volumes) || %[2]s.volumes.all(w, w.name in %[3]s || (has(%[1]s.volumes) && %[1]s.volumes.exists(v, v == w))))", pod, oldPod, celList(ownVolumes)),
	}, " && ")
	return admissionv1.Validation{
		Expression: fmt.Sprintf("!(%s) || (%s)", is("deployments"), expr),
		Message: "the eksa-metrics controller creates no Deployment and changes a management Deployment only as its edit does: the " + templates.SidecarName + " sidecar as rendered, " +
			"the sidecar's token and serving-certificate volumes, the serving certificate's mount, the flags " + strings.Join(names, ", ") + " set to the values the edit writes, and its record annotation " + templates.EditRecordAnnotation + "; every other field as it was"}
}

// certificates: the CA Certificate of an Issuer namespace, self-signed, and
// the components' serving Certificates, from the CA Issuer, for the names
// of eksa-metrics' own Services only (templates.CertManagerObjects).
func certificates() admissionv1.Validation {
	s := "object.spec"
	expr := strings.Join([]string{
		onlyKeys(s, "isCA", "commonName", "secretName", "duration", "renewBefore", "usages", "privateKey", "issuerRef", "secretTemplate", "dnsNames"),
		onlyKeys(s+".issuerRef", "group", "kind", "name"),
		s + ".issuerRef.group == 'cert-manager.io' && has(" + s + ".issuerRef.kind) && " + s + ".issuerRef.kind == 'Issuer'",
		fmt.Sprintf("(!has(%[1]s.secretTemplate) || %[2]s)", s, onlyKeys(s+".secretTemplate", "labels")),
		fmt.Sprintf("%[1]s.secretName == request.name", s),
		fmt.Sprintf("(request.name == %[2]q ? (%[1]s.issuerRef.name == %[3]q && !has(%[1]s.dnsNames)) : "+
			"(%[1]s.issuerRef.name == %[4]q && (!has(%[1]s.isCA) || !%[1]s.isCA) && !has(%[1]s.commonName) && has(%[1]s.dnsNames) && %[1]s.dnsNames.all(d, d in %[5]s) && "+
			"(!has(%[1]s.usages) || %[1]s.usages.all(u, u in ['digital signature', 'key encipherment', 'server auth']))))",
			s, templates.IssuerCA, templates.SelfSignedIssuer, templates.CAIssuer, celList(servingNames())),
	}, " && ")
	return admissionv1.Validation{
		Expression: fmt.Sprintf("!(%s) || request.operation == 'DELETE' || (%s)", is("certificates"), expr),
		Message: fmt.Sprintf("the eksa-metrics controller may write only its CA Certificate %s (self-signed by the Issuer %s) and serving Certificates from its Issuer %s for the names of its metrics Services only, server auth only",
			templates.IssuerCA, templates.SelfSignedIssuer, templates.CAIssuer)}
}

// servingNames are the names a serving certificate may be for: the metrics
// Services of the cluster components and of the management controllers.
func servingNames() []string {
	var out []string
	for _, r := range components.ClusterCatalog {
		out = append(out, templates.ServingName(r.ID))
	}
	for _, m := range components.ManagementCatalog {
		out = append(out, templates.ManagementServingName(components.Resolved{Management: m}))
	}
	return out
}

// services: a ClusterIP (or headless) Service; no external IPs, load
// balancer, node ports or external name.
func services() admissionv1.Validation {
	return admissionv1.Validation{
		Expression: fmt.Sprintf("!(%s) || request.operation == 'DELETE' || (%s && (!has(object.spec.type) || object.spec.type == 'ClusterIP') && (!has(object.spec.ports) || object.spec.ports.all(p, %s)))",
			is("services"),
			onlyKeys("object.spec", "selector", "ports", "clusterIP", "clusterIPs", "type", "ipFamilies", "ipFamilyPolicy", "internalTrafficPolicy", "sessionAffinity"),
			onlyKeys("p", "name", "port", "targetPort", "protocol", "appProtocol")),
		Message: "the eksa-metrics controller may write only ClusterIP Services: no external IPs, load balancer, node ports or external name"}
}

// secrets: the ServiceAccount token Secrets of the sidecars and the scraper,
// its TLS Secrets (CAs and serving certificates) and the additional scrape
// configurations; no other type or name.
func secrets(o Options) admissionv1.Validation {
	token := fmt.Sprintf("(has(object.metadata.annotations) && 'kubernetes.io/service-account.name' in object.metadata.annotations && "+
		"((request.name == %q && object.metadata.annotations['kubernetes.io/service-account.name'] == %q) || (request.name == %q && request.namespace in %s)))",
		templates.SidecarTokenSecret, templates.SidecarSA, templates.ScraperTokenSecret, celList(o.MonitoringNamespaces))
	tls := fmt.Sprintf("(request.name.startsWith(%q) && (!has(object.data) || %s))", templates.Prefix+"-", onlyKeys("object.data", "tls.crt", "tls.key", "ca.crt"))
	opaque := fmt.Sprintf("(request.name == %q && (!has(object.data) || %s))", templates.AdditionalScrapeConfigsSecret, onlyKeys("object.data", templates.AdditionalScrapeConfigsKey))
	// The names the renderer gives Secrets, in their namespaces: what its
	// Roles let it read and change (templates.SecretNames).
	names := templates.SecretNames(o.MonitoringNamespaces)
	var pairs []string
	for ns, nsNames := range names {
		for _, n := range nsNames {
			pairs = append(pairs, ns+"/"+n)
		}
	}
	slices.Sort(pairs)
	named := fmt.Sprintf("((request.namespace + '/' + request.name) in %s)", celList(pairs))
	return admissionv1.Validation{
		Expression: fmt.Sprintf("!(%s) || request.operation == 'DELETE' || (%s && has(object.type) && (object.type == 'kubernetes.io/service-account-token' ? %s : (object.type == 'kubernetes.io/tls' ? %s : (object.type == 'Opaque' && %s))))",
			is("secrets"), named, token, tls, opaque),
		Message: fmt.Sprintf("the eksa-metrics controller may write only the Secrets it renders, of their names in their namespaces: the token Secrets %s (of %s) and %s (in a monitoring namespace: %s), its own TLS Secrets (%s*) and %s",
			templates.SidecarTokenSecret, templates.SidecarSA, templates.ScraperTokenSecret, strings.Join(o.MonitoringNamespaces, ", "), templates.Prefix+"-", templates.AdditionalScrapeConfigsSecret)}
}

// packages: the prometheus Package whose chart values are the ones the
// renderer writes (templates.PackageObjects): the chart's scrapeConfigs and
// serverFiles, nothing else at the top of the values.
func packages() admissionv1.Validation {
	return admissionv1.Validation{
		Expression: fmt.Sprintf("!(%s) || request.operation == 'DELETE' || (%s && object.spec.packageName == 'prometheus' && request.namespace.startsWith('eksa-packages-') && "+
			"(!has(object.spec.config) || object.spec.config.split('\\n').all(l, l == '' || l.startsWith(' ') || l.startsWith('#') || l in ['scrapeConfigs:', 'serverFiles:'])))",
			is("packages"), onlyKeys("object.spec", "packageName", "targetNamespace", "config")),
		Message: "the eksa-metrics controller may write only the prometheus Package, in an eksa-packages namespace, whose chart values set scrapeConfigs and serverFiles only"}
}

// kubeadmControlPlanes: a KubeadmControlPlane is what it was but in the
// extraArgs items eksa-metrics renders (kubeadm.Flags), each to a value it
// renders (kubeadm.Values; feature-gates: the z-page gates merged into the
// gates it had), and in its own and the GitOps tools' annotations.
func kubeadmControlPlanes() admissionv1.Validation {
	var paths [][]string
	for _, comp := range kubeadm.Components() {
		paths = append(paths, append([]string{"spec", "kubeadmConfigSpec", "clusterConfiguration"}, comp.Path()...))
	}
	p := at(paths...)
	p.nested["metadata"] = objectMeta(fmt.Sprintf("$k.startsWith('metrics.anywhere.eks.amazonaws.com/') || $k in %s", celList([]string{kubeadm.FluxPruneAnnotation, kubeadm.ArgoSyncOptionsAnnotation})))
	return admissionv1.Validation{
		Expression: fmt.Sprintf("!(%s) || (request.operation == 'UPDATE' && %s && (request.resource.version == 'v1beta1' ? %s : (request.resource.version == 'v1beta2' && %s)))",
			is("kubeadmcontrolplanes"), unchangedBut("object", "oldObject", p), extraArgs(false), extraArgs(true)),
		Message: "the eksa-metrics controller may change a KubeadmControlPlane only in the extraArgs items it renders (" + strings.Join(kubeadm.FlagNames(), ", ") +
			"), each to a value it renders (feature-gates: the z-page gates added to or taken from the gates it had), and in its annotations"}
}

// extraArgs: items of each component's extraArgs come and go, or change
// value, only when eksa-metrics renders that flag, and only to a value it
// renders (v1beta2: a list of name and value; v1beta1: a map).
func extraArgs(list bool) string {
	var parts []string
	for _, comp := range kubeadm.Components() {
		path := append([]string{"spec", "kubeadmConfigSpec", "clusterConfiguration"}, comp.Path()...)
		p := strings.Join(path, ".")
		hasNew, hasOld := hasPath("object", path), hasPath("oldObject", path)
		allowed := celList(kubeadm.Flags[comp])
		var values []string
		for _, name := range kubeadm.Flags[comp] {
			if name != kubeadm.FeatureGates {
				values = append(values, fmt.Sprintf("(n == %q && v in %s)", name, celList(kubeadm.Values(comp, name))))
			}
		}
		valueOK := "(" + strings.Join(values, " || ") + ")"
		if len(values) == 0 {
			valueOK = "false"
		}
		// v1beta2: a list of {name, value}; v1beta1: a map.
		items, gateValue := fmt.Sprintf("(!%[1]s || object.%[3]s.all(k, (%[2]s && k in oldObject.%[3]s && oldObject.%[3]s[k] == object.%[3]s[k]) || k == %[5]q || [k].all(n, [object.%[3]s[k]].all(v, %[6]s)))) && "+
			"(!%[2]s || oldObject.%[3]s.all(k, k in %[4]s || (%[1]s && k in object.%[3]s)))", hasNew, hasOld, p, allowed, kubeadm.FeatureGates, valueOK),
			"(%[2]s && %[4]q in %[1]s.%[3]s ? %[1]s.%[3]s[%[4]q] : '')"
		if list {
			items, gateValue = fmt.Sprintf("(!%[1]s || object.%[3]s.all(a, (%[2]s && oldObject.%[3]s.exists(b, b.name == a.name && b.value == a.value)) || a.name == %[5]q || [a.name].all(n, [a.value].all(v, %[6]s)))) && "+
				"(!%[2]s || oldObject.%[3]s.all(b, b.name in %[4]s || (%[1]s && object.%[3]s.exists(a, a.name == b.name && a.value == b.value))))", hasNew, hasOld, p, allowed, kubeadm.FeatureGates, valueOK),
				"(%[2]s && %[1]s.%[3]s.exists(a, a.name == %[4]q) ? %[1]s.%[3]s.filter(a, a.name == %[4]q)[0].value : '')"
		}
		parts = append(parts, items)
		if slices.Contains(kubeadm.Flags[comp], kubeadm.FeatureGates) {
			parts = append(parts, gates(fmt.Sprintf(gateValue, "object", hasNew, p, kubeadm.FeatureGates), fmt.Sprintf(gateValue, "oldObject", hasOld, p, kubeadm.FeatureGates)))
		}
	}
	return "(" + strings.Join(parts, " && ") + ")"
}

// gates: the feature gates of the new value are those of the old one but
// the z-page gates, which it may add (enabled) or drop.
func gates(newValue, oldValue string) string {
	z := []string{kubeadm.GateStatusz, kubeadm.GateFlagz}
	others := func(v string) string {
		return fmt.Sprintf("%s.split(',').filter(g, g != '' && !(g.split('=')[0] in %s))", v, celList(z))
	}
	return fmt.Sprintf("(%[1]s.all(g, g in %[2]s) && %[2]s.all(g, g in %[1]s) && %[3]s.split(',').all(g, !(g.split('=')[0] in %[4]s) || g in %[5]s))",
		others(newValue), others(oldValue), newValue, celList(z), celList(kubeadm.ZPageGates()))
}
