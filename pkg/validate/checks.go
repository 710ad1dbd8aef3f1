package validate

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	metricsv1alpha1 "github.com/eksa-metrics/eksa-metrics/pkg/apis/metrics/v1alpha1"
	"github.com/eksa-metrics/eksa-metrics/pkg/verify"

	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/eksa-metrics/eksa-metrics/pkg/cluster"
	"github.com/eksa-metrics/eksa-metrics/pkg/components"
	"github.com/eksa-metrics/eksa-metrics/pkg/kubeadm"
	"github.com/eksa-metrics/eksa-metrics/pkg/render"
	"github.com/eksa-metrics/eksa-metrics/pkg/spec"
	"github.com/eksa-metrics/eksa-metrics/pkg/templates"
)

// Checks is the table of every check, in the order they run and print.
func Checks() []Check {
	return []Check{
		{"spec-loads", "offline", checkSpecLoads},
		{"eksa-spec-clean", "offline", checkEKSASpecClean},
		{"capi-contract", "offline", checkCAPIContract},
		{"flags-exist", "offline", checkFlagsExist},
		{"feature-gates", "offline", checkFeatureGates},
		{"extra-args-unique", "offline", checkExtraArgsUnique},
		{"external-etcd", "offline", checkExternalEtcd},
		{"insecure-endpoints", "offline", checkInsecure},
		{"cis-bind-address", "offline", checkCIS},
		{"rbac-least-privilege", "offline", checkRBAC},
		{"daemonsets-schedule", "offline", checkScheduling},
		{"render-warnings", "offline", checkRenderWarnings},
		{"upgrade-diff", "upgrade", checkUpgradeDiff},
		{"drift", "online", checkDrift},
		{"scraper-identities", "online", checkScrapers},
		{"prometheus-operator-crds", "online", checkCRDs},
		{"prometheus-selects-monitors", "online", checkPrometheusSelects},
		{"cluster-not-paused", "online", checkNotPaused},
		{"management-components", "online", checkManagementComponents},
		{"serving-certificates", "online", checkServingCertificates},
	}
}

// checkServingCertificates: every proxy's serving certificate exists, was
// written by eksa-metrics, and does not expire within 30 days.
func checkServingCertificates(ctx context.Context, in *Input) Result {
	now := time.Now()
	steps, err := in.Workload.PlanCertificates(ctx, in.Result.Config, now)
	if err != nil {
		return Result{Status: Fail, Message: "the serving certificates cannot be kept by apply", Details: []string{err.Error()}}
	}
	if len(steps) == 0 {
		return pass("no proxy serves eksa-metrics' certificates (tls.certificates: none, or nothing proxied)")
	}
	var missing, expiring, due []string
	for _, s := range steps {
		switch {
		case s.Action == cluster.Create:
			missing = append(missing, s.String())
		case !s.Expires.IsZero() && s.Expires.Sub(now) < verify.ExpiryWarning:
			expiring = append(expiring, fmt.Sprintf("%s expires on %s", s, s.Expires.UTC().Format(time.DateOnly)))
		case s.Action == cluster.Update:
			due = append(due, fmt.Sprintf("%s: %s", s, s.Why))
		}
	}
	fix := "run eksa-metrics apply: it makes and renews them (Prometheus refuses the proxies' targets without them)"
	if in.Result.Config.CertManager {
		fix = "run eksa-metrics apply: it renders the Certificates cert-manager issues and renews, and publishes the CA bundle (Prometheus refuses the proxies' targets without them); kubectl describe certificate says why cert-manager has not issued one"
	}
	switch {
	case len(missing)+len(expiring) > 0:
		return Result{Status: Fail, Message: fmt.Sprintf("%d serving certificates are missing or expire within 30 days", len(missing)+len(expiring)),
			Details: append(missing, expiring...), Remediation: fix}
	case len(due) > 0:
		return Result{Status: Warn, Message: fmt.Sprintf("%d serving certificates are due for renewal", len(due)), Details: due, Remediation: "run eksa-metrics apply"}
	}
	return pass("%d certificates and bundles are in place, none due for renewal", len(steps))
}

func checkSpecLoads(_ context.Context, in *Input) Result {
	switch {
	case in.LoadErr != nil:
		return Result{Status: Fail, Message: "the spec does not load", Details: problems(in.LoadErr), Remediation: "fix each problem at the file:line given; docs/reference.md describes every field"}
	case in.RenderErr != nil:
		return Result{Status: Fail, Message: "the metrics section is invalid", Details: problems(in.RenderErr), Remediation: "fix each problem at the file:line given; docs/reference.md describes every field"}
	}
	return pass("%s loads strictly; %d objects render", in.Path, len(in.Result.Objects))
}

// The file handed to eksctl anywhere must be the spec without the section.
func checkEKSASpecClean(_ context.Context, in *Input) Result {
	clean := in.Result.ClusterYAML
	f, err := spec.Load(in.Path, strings.NewReader(string(clean)))
	if err == nil {
		return Result{Status: Fail, Message: "cluster.yaml still holds a metrics section", Details: []string{fmt.Sprintf("%s loaded with a %s", in.Path, f.Form)}, Remediation: "report this as a bug"}
	}
	if !strings.Contains(err.Error(), "no metrics section") {
		return Result{Status: Fail, Message: "the EKS-A spec without the metrics section does not load", Details: problems(err), Remediation: "fix the EKS-A documents at the lines given"}
	}
	msg := "the EKS-A documents load without the metrics section"
	if in.File.Form == spec.FormInline {
		return Result{Status: Warn, Message: msg + "; the section is inline, so eksctl anywhere (strict) refuses this file as it is",
			Remediation: "give eksctl anywhere the cluster.yaml that generate -o kustomize writes, or move the section into a MetricsConfig document"}
	}
	return pass("%s (a MetricsConfig document, which eksctl anywhere ignores)", msg)
}

func checkCAPIContract(_ context.Context, in *Input) Result {
	c := in.Result.Config
	if c.EKSAVersion == nil {
		return Result{Status: Warn, Message: fmt.Sprintf("no spec.eksaVersion: rendering for CAPI %s", c.CAPIVersion),
			Remediation: "set spec.eksaVersion (v0.25 and later use v1beta2, older v1beta1), or pass --capi-api-version to match the management cluster"}
	}
	want := spec.CAPIv1beta2
	if c.EKSAVersion.Less(spec.EKSAv1beta2) {
		want = spec.CAPIv1beta1
	}
	if c.CAPIVersion != want {
		return Result{Status: Fail, Message: fmt.Sprintf("EKS-A %s uses KubeadmControlPlane %s, rendering for %s", c.EKSAVersion, want, c.CAPIVersion), Remediation: "drop --capi-api-version; eksaVersion decides"}
	}
	return pass("EKS-A %s: KubeadmControlPlane %s (extraArgs as %s)", c.EKSAVersion, want, map[string]string{spec.CAPIv1beta1: "maps", spec.CAPIv1beta2: "name/value lists"}[want])
}

func checkFlagsExist(_ context.Context, in *Input) Result {
	minor := in.Result.Config.KubeVersion.Minor
	var bad []string
	for _, it := range in.Result.Change.Items {
		if !FlagKnown(it.Component, it.Name, minor) {
			bad = append(bad, fmt.Sprintf("%s --%s", it.Component, it.Name))
		}
	}
	if len(bad) > 0 {
		return Result{Status: Fail, Message: fmt.Sprintf("Kubernetes 1.%d does not know flags eksa-metrics renders", minor), Details: bad,
			Remediation: "the component would not start and the rollout would stall; report this with the spec"}
	}
	return pass("every rendered flag exists in Kubernetes 1.%d (%d items)", minor, len(in.Result.Change.Items))
}

func checkFeatureGates(_ context.Context, in *Input) Result {
	c := in.Result.Config
	minor := c.KubeVersion.Minor
	var bad, missing []string
	set := map[kubeadm.Component]map[string]bool{}
	for _, it := range in.Result.Change.Items {
		if it.Name != kubeadm.FeatureGates {
			continue
		}
		if set[it.Component] == nil {
			set[it.Component] = map[string]bool{}
		}
		for _, kv := range strings.Split(it.Value, ",") {
			name, _, _ := strings.Cut(kv, "=")
			set[it.Component][name] = set[it.Component][name] || !it.Merged // a merged item is not applied
			if !GateKnown(it.Component, name, minor) {
				bad = append(bad, fmt.Sprintf("%s: %s does not exist in 1.%d", it.Component, name, minor))
			}
		}
	}
	if c.KubeVersion.ZPageGatesNeeded() {
		for _, comp := range kubeadm.ZPageComponents(c) {
			for _, g := range []struct {
				name string
				on   bool
			}{{kubeadm.GateStatusz, c.Statusz}, {kubeadm.GateFlagz, c.Flagz}} {
				if g.on && !set[comp][g.name] {
					missing = append(missing, fmt.Sprintf("%s: %s", comp, g.name))
				}
			}
		}
	}
	switch {
	case len(bad) > 0:
		return Result{Status: Fail, Message: "feature gates the target version refuses", Details: bad, Remediation: "the component would not start; turn z-pages off or change kubernetesVersion"}
	case len(missing) > 0:
		return Result{Status: Warn, Message: fmt.Sprintf("z-pages are on but Kubernetes 1.%d needs gates that are not rendered", minor), Details: missing,
			Remediation: "these z-pages stay off on this version (generate explains why: EKS-A owns that feature-gates item)"}
	}
	return pass("feature gates fit Kubernetes 1.%d", minor)
}

func checkExtraArgsUnique(_ context.Context, in *Input) Result {
	c := in.Result.Config
	defaults := kubeadm.EKSADefaults(c)
	var dup []string
	for _, comp := range kubeadm.Components() {
		names := map[string]int{}
		for _, a := range defaults[comp] {
			names[a.Name]++
		}
		for _, a := range in.Result.Change.Args(comp) {
			if _, eksa := names[a.Name]; eksa && a.Name != kubeadm.FeatureGates {
				dup = append(dup, fmt.Sprintf("%s --%s is rendered by EKS-A too", comp, a.Name))
			}
		}
	}
	if len(dup) > 0 {
		return Result{Status: Fail, Message: "extraArgs names would repeat (the v1beta2 CRD refuses duplicates)", Details: dup, Remediation: "report this with the spec"}
	}
	return pass("merged with what EKS-A renders for %s, every extraArgs name is unique", c.Provider)
}

func checkExternalEtcd(_ context.Context, in *Input) Result {
	c := in.Result.Config
	if !c.ExternalEtcd {
		return pass("stacked etcd")
	}
	for _, it := range in.Result.Change.Items {
		if it.Component == kubeadm.Etcd {
			return Result{Status: Fail, Message: "etcd arguments rendered for an external etcd", Remediation: "report this with the spec"}
		}
	}
	if c.ExternalEtcdScrape {
		return Result{Status: Warn, Message: "external etcd is not changed; its metrics need an etcd client certificate on https://<etcd IP>:2379", Remediation: "mount an etcd client certificate into Prometheus (see the commented job in scrape-configs.yaml)"}
	}
	return pass("external etcd, not scraped")
}

func checkInsecure(_ context.Context, in *Input) Result {
	c := in.Result.Config
	if c.Exposure == metricsv1alpha1.ExposureBindAddress && c.AllowInsecure && (c.Etcd || c.KubeProxy) {
		return Result{Status: Warn, Message: spec.InsecureExposed(c) + " are plain HTTP without authentication on every node address (allowInsecure)",
			Remediation: "restrict ports 2381 and 10249 with a host firewall or security groups, or use exposure: proxy"}
	}
	return pass("no plain-HTTP endpoint leaves loopback")
}

func checkCIS(_ context.Context, in *Input) Result {
	for _, it := range in.Result.Change.Items {
		if it.Name == "bind-address" && it.Value == "0.0.0.0" {
			return Result{Status: Warn, Message: "bind-address=0.0.0.0 on kube-controller-manager and/or kube-scheduler deviates from CIS 1.3.7 / 1.4.2 (authentication and authorization stay delegated)",
				Remediation: "accept the deviation in your CIS report, or use exposure: proxy"}
		}
	}
	return pass("bind-address stays 127.0.0.1")
}

func checkRBAC(_ context.Context, in *Input) Result {
	var bad []string
	rules, bindings := 0, 0
	for _, o := range in.Result.Objects {
		switch o.Kind() {
		case "ClusterRole", "Role":
			list, _ := o.Object["rules"].([]any)
			for _, r := range list {
				rules++
				if m, ok := r.(map[string]any); ok {
					if why := ForbiddenGrant(m); why != "" {
						bad = append(bad, o.String()+": "+why)
					}
				}
			}
		case "ClusterRoleBinding", "RoleBinding":
			bindings++
			for _, why := range ForbiddenBinding(o.Object) {
				bad = append(bad, o.String()+": "+why)
			}
		}
	}
	if len(bad) > 0 {
		return Result{Status: Fail, Message: "a rendered role or binding grants more than metrics, or to more than the scrapers", Details: bad,
			Remediation: "bind the identity Prometheus runs as, never a group that stands for everybody; report a rule that grants more than metrics as a bug"}
	}
	return pass("%d rules and %d bindings: no wildcard, nodes/proxy, secrets, escalate, bind or impersonate; no binding to everybody", rules, bindings)
}

// checkRenderWarnings reports every warning generate prints for the spec
// (render.Result.Warnings, each with its file:line and field), so that
// --strict fails on exactly what generate warns about: a management
// controller left alone, a plain-HTTP listener, a removed provider, a
// bundle of another release.
func checkRenderWarnings(_ context.Context, in *Input) Result {
	ws := in.Result.Warnings
	if len(ws) == 0 {
		return pass("generate renders this spec without a warning")
	}
	details := make([]string, len(ws))
	for i, w := range ws {
		details[i] = w.Problem.String()
	}
	return Result{Status: Warn, Message: fmt.Sprintf("generate warns %d time%s for this spec", len(ws), map[bool]string{true: "", false: "s"}[len(ws) == 1]), Details: details,
		Remediation: "read each warning at the file:line given: change the spec so that generate no longer warns, or, having accepted them, --skip render-warnings"}
}

func checkUpgradeDiff(_ context.Context, in *Input) Result {
	if in.OldErr != nil {
		// Invalid input, like a -f spec that does not load: a failure (exit 3).
		return Result{Status: Fail, Message: fmt.Sprintf("the --from spec %s does not load or render", in.OldPath), Details: problems(in.OldErr),
			Remediation: "give --from the -f spec's version on the base branch (git show BASE:FILE > base/FILE), and fix each problem at the file:line given"}
	}
	if on, nn := in.Old.Config.ClusterName, in.Result.Config.ClusterName; on != nn {
		return Result{Status: Fail, Message: fmt.Sprintf("--from is a spec of cluster %q and -f of cluster %q: nothing to compare (an input error)", on, nn),
			Remediation: "give --from the same cluster's spec before the change (the base branch's version of the -f file)"}
	}
	changes := render.Transition(in.Old, in.Result)
	var details []string
	var rolls, restarts, replaces []string
	for _, ch := range changes {
		details = append(details, ch.String())
		if ch.ReplacesMachines {
			replaces = append(replaces, fmt.Sprintf("%s replaces every machine (%s)", ch.By, ch.Reason))
		}
		if ch.RollsControlPlane {
			rolls = append(rolls, templates.ObjectName(ch.Kind, ch.Namespace, ch.Name))
		}
		switch {
		case ch.Restarts == "" || ch.Action == render.ActionCreate || ch.By != "":
		case ch.Kind == "ConfigMap": // kube-proxy's configuration
			restarts = append(restarts, templates.ObjectName("DaemonSet", ch.Namespace, ch.Name))
		default:
			restarts = append(restarts, templates.ObjectName(ch.Kind, ch.Namespace, ch.Name))
		}
	}
	oc, nc := in.Old.Config, in.Result.Config
	upgrade := in.OldNothing == "" && (oc.KubeVersion != nc.KubeVersion || oc.CAPIVersion != nc.CAPIVersion || !reflect.DeepEqual(oc.EKSAVersion, nc.EKSAVersion))
	if upgrade {
		var what []string
		if oc.KubeVersion != nc.KubeVersion {
			what = append(what, fmt.Sprintf("Kubernetes %s -> %s", oc.KubeVersion, nc.KubeVersion))
		}
		if !reflect.DeepEqual(oc.EKSAVersion, nc.EKSAVersion) {
			what = append(what, fmt.Sprintf("EKS Anywhere %s -> %s", versionOrNone(oc), versionOrNone(nc)))
		}
		if oc.CAPIVersion != nc.CAPIVersion {
			what = append(what, fmt.Sprintf("KubeadmControlPlane %s -> %s", oc.CAPIVersion, nc.CAPIVersion))
		}
		details = append(details, fmt.Sprintf("after eksctl anywhere upgrade (%s), run eksa-metrics apply again: EKS Anywhere renders the KubeadmControlPlane and the management components anew", strings.Join(what, ", ")))
	}
	from := in.OldPath
	if in.OldNothing != "" {
		from += " (no metrics section: " + in.OldNothing + ")"
	}
	to, applyFlags := in.Path, "apply"
	if in.Nothing != "" {
		to += " (" + in.Nothing + ")"
		applyFlags = "apply --uninstall"
	}
	if len(changes) == 0 && !upgrade {
		return pass("nothing apply writes changes between %s and %s", from, to)
	}
	msg := fmt.Sprintf("%d change%s from %s to %s", len(changes), map[bool]string{true: "", false: "s"}[len(changes) == 1], from, to)
	if len(rolls) > 0 {
		msg += "; " + strings.Join(rolls, ", ") + " changes: every control-plane machine is replaced"
	}
	if len(restarts) > 0 {
		msg += "; pods restart: " + strings.Join(restarts, ", ")
	}
	if len(replaces) > 0 {
		msg += "; " + strings.Join(replaces, "; ")
	}
	r := Result{Status: Pass, Message: msg, Details: details, Changes: changes}
	var remedies []string
	if len(rolls) > 0 {
		remedies = append(remedies, "plan the control-plane rollout, then "+applyFlags+" with --allow-control-plane-rollout")
	}
	if len(replaces) > 0 {
		remedies = append(remedies, "plan the replacement of every machine, in the order the change says")
	}
	if len(remedies) > 0 {
		r.Status = Warn
		r.Remediation = strings.Join(remedies, "; ")
	}
	return r
}

func versionOrNone(c *spec.Config) string {
	if c.EKSAVersion == nil {
		return "(unset)"
	}
	return c.EKSAVersion.String()
}

func checkDrift(ctx context.Context, in *Input) Result {
	a := &cluster.Applier{Management: in.Management, Workload: in.Workload, Result: in.Result}
	steps, err := a.Plan(ctx)
	if err != nil {
		return Result{Status: Error, Message: "could not read the live objects", Details: []string{err.Error()}}
	}
	var drift []string
	for _, s := range steps {
		if s.Action == cluster.Unchanged {
			continue
		}
		if s.Action == cluster.Create {
			drift = append(drift, fmt.Sprintf("%s is missing from the %s", s.Name(), s.Cluster))
			continue
		}
		for _, d := range s.Diff {
			drift = append(drift, fmt.Sprintf("%s (%s): %s", s.Name(), s.Cluster, d))
		}
	}
	if len(drift) > 0 {
		return Result{Status: Fail, Message: fmt.Sprintf("the live clusters differ from the spec in %d places", len(drift)), Details: drift,
			Remediation: "run eksa-metrics apply (after an eksctl anywhere upgrade this is expected), or find who changed them"}
	}
	return pass("%d objects match the spec, owned by field manager %s", len(steps), cluster.FieldManager)
}

func checkScrapers(ctx context.Context, in *Input) Result {
	var missing []string
	for _, s := range in.Result.Config.Scrapers {
		if s.Kind != metricsv1alpha1.ScraperServiceAccount {
			continue
		}
		_, err := in.Workload.Core.CoreV1().ServiceAccounts(s.Namespace).Get(ctx, s.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			missing = append(missing, fmt.Sprintf("ServiceAccount %s/%s", s.Namespace, s.Name))
		} else if err != nil {
			return Result{Status: Error, Message: "could not read the scraper ServiceAccounts", Details: []string{err.Error()}}
		}
	}
	if len(missing) > 0 {
		return Result{Status: Fail, Message: "scraper identities do not exist in the workload cluster", Details: missing, Remediation: "install the monitoring stack first, or fix spec.scrapers"}
	}
	return pass("every ServiceAccount scraper exists (User and Group scrapers cannot be looked up)")
}

func checkCRDs(ctx context.Context, in *Input) Result {
	if !in.Result.Config.ServiceMonitors {
		return pass("no ServiceMonitors are rendered")
	}
	_, err := in.Workload.Core.Discovery().ServerResourcesForGroupVersion("monitoring.coreos.com/v1")
	if err != nil {
		return Result{Status: Fail, Message: "the workload cluster has no ServiceMonitor API (monitoring.coreos.com/v1)", Details: []string{err.Error()},
			Remediation: "install prometheus-operator (kube-prometheus or kube-prometheus-stack), or set scrapeConfig.serviceMonitors: false"}
	}
	return pass("monitoring.coreos.com/v1 is served")
}

func checkNotPaused(ctx context.Context, in *Input) Result {
	_, err := in.Management.Core.Discovery().ServerResourcesForGroupVersion("anywhere.eks.amazonaws.com/v1alpha1")
	if err != nil {
		return Result{Status: Skipped, Message: "the management cluster serves no anywhere.eks.amazonaws.com API (not an EKS-A management cluster?)"}
	}
	name := in.Result.Config.ClusterName
	ns := in.File.Cluster.Metadata.Namespace
	if ns == "" {
		ns = "default"
	}
	gvr := schema.GroupVersionResource{Group: "anywhere.eks.amazonaws.com", Version: "v1alpha1", Resource: "clusters"}
	cl, err := in.Management.Dynamic.Resource(gvr).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return Result{Status: Error, Message: fmt.Sprintf("could not read EKS-A Cluster %s/%s", ns, name), Details: []string{err.Error()}}
	}
	if cl.GetAnnotations()["anywhere.eks.amazonaws.com/paused"] == "true" {
		return Result{Status: Fail, Message: fmt.Sprintf("EKS-A Cluster %s/%s is paused", ns, name), Remediation: "EKS-A will not reconcile or upgrade it; remove the anywhere.eks.amazonaws.com/paused annotation first"}
	}
	return pass("EKS-A Cluster %s/%s is not paused", ns, name)
}

// checkManagementComponents holds the catalog against the live management
// cluster: each controller's Deployment runs as the ServiceAccount the
// rendered binding names, its pods carry the labels the rendered Service
// selects, and, where the controller serves metrics itself, that
// ServiceAccount may review tokens (itself, or through the rendered
// auth-delegator binding), without which its secure metrics refuse every
// scraper. A sidecar reviews them as its own ServiceAccount
// (templates.SidecarSA), which eksa-metrics renders and binds.
func checkManagementComponents(ctx context.Context, in *Input) Result {
	c := in.Result.Config
	rows := templates.ManagementComponents(c)
	if len(rows) == 0 {
		return pass("no management component is rendered")
	}
	var problems, notInstalled []string
	for _, m := range rows {
		d, err := in.Management.Core.AppsV1().Deployments(m.Namespace).Get(ctx, m.Deployment, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			notInstalled = append(notInstalled, m.ID())
			continue
		}
		if err != nil {
			return Result{Status: Error, Message: "could not read the management Deployments", Details: []string{err.Error()}}
		}
		sa := d.Spec.Template.Spec.ServiceAccountName
		if sa == "" {
			sa = "default"
		}
		if sa != m.ServiceAccount {
			problems = append(problems, fmt.Sprintf("%s runs as ServiceAccount %s, but eksa-metrics expects %s of %s", m.ID(), sa, m.ServiceAccount, m.Version))
		}
		if !labels.SelectorFromSet(m.PodLabels).Matches(labels.Set(d.Spec.Template.Labels)) {
			problems = append(problems, fmt.Sprintf("%s: its pods carry %v, the rendered Service selects %v, so it would select no pod", m.ID(), d.Spec.Template.Labels, m.PodLabels))
		}
		if m.AuthDelegator || m.Method == components.Sidecar {
			continue // the rendered binding grants it (to the controller, or to the sidecar's own ServiceAccount)
		}
		user := fmt.Sprintf("system:serviceaccount:%s:%s", m.Namespace, sa)
		for _, r := range []authorizationv1.ResourceAttributes{
			{Verb: "create", Group: "authentication.k8s.io", Resource: "tokenreviews"},
			{Verb: "create", Group: "authorization.k8s.io", Resource: "subjectaccessreviews"},
		} {
			sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{User: user,
				Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + m.Namespace, "system:authenticated"}, ResourceAttributes: &r}}
			res, err := in.Management.Core.AuthorizationV1().SubjectAccessReviews().Create(ctx, sar, metav1.CreateOptions{})
			if err != nil {
				return Result{Status: Error, Message: "could not ask the API server (SubjectAccessReview)", Details: []string{err.Error()}}
			}
			if !res.Status.Allowed {
				problems = append(problems, fmt.Sprintf("%s: ServiceAccount %s/%s may not %s %s.%s, so its metrics endpoint refuses every scraper", m.ID(), m.Namespace, sa, r.Verb, r.Resource, r.Group))
			}
		}
	}
	msg := fmt.Sprintf("%d management components match the catalog and can authenticate scrapers", len(rows)-len(notInstalled))
	if len(notInstalled) > 0 {
		msg += fmt.Sprintf(" (%d not installed: %s)", len(notInstalled), strings.Join(notInstalled, ", "))
	}
	if len(problems) > 0 {
		return Result{Status: Fail, Message: "management components differ from what eksa-metrics expects of their release", Details: problems,
			Remediation: "check spec.eksaVersion against the release the cluster runs; a customised Deployment can be left out with managementComponents.exclude"}
	}
	return pass("%s", msg)
}

// checkPrometheusSelects finds a prometheus-operator Prometheus that selects
// the rendered ServiceMonitors (its serviceMonitorSelector matches their
// labels, its serviceMonitorNamespaceSelector their namespace) and runs as one
// of the scrapers. Without one, nothing scrapes what eksa-metrics renders:
// kube-prometheus-stack, for example, selects only release: <release>.
func checkPrometheusSelects(ctx context.Context, in *Input) Result {
	c := in.Result.Config
	var sm *render.Object
	for _, o := range in.Result.Objects {
		if o.Kind() == "ServiceMonitor" {
			sm = &o
			break
		}
	}
	if sm == nil {
		return pass("no ServiceMonitors are rendered")
	}
	gvr := schema.GroupVersionResource{Group: "monitoring.coreos.com", Version: "v1", Resource: "prometheuses"}
	list, err := in.Workload.Dynamic.Resource(gvr).List(ctx, metav1.ListOptions{})
	if apierrors.IsNotFound(err) {
		return Result{Status: Warn, Message: "the cluster serves no Prometheus API (monitoring.coreos.com/v1 prometheuses): nothing scrapes the rendered ServiceMonitors",
			Remediation: "install prometheus-operator (kube-prometheus-stack or kube-prometheus), or choose scrapeConfig.stack eks-anywhere or prometheus"}
	}
	if err != nil {
		return Result{Status: Error, Message: "could not list the Prometheus objects", Details: []string{err.Error()}}
	}
	smLabels := labels.Set(mapOf(sm.Object, "metadata", "labels"))
	var seen []string
	for _, p := range list.Items {
		name := p.GetNamespace() + "/" + p.GetName()
		selects, err := selectorMatches(p.Object, "serviceMonitorSelector", smLabels)
		if err != nil {
			return Result{Status: Error, Message: "Prometheus " + name + " has a selector that does not parse", Details: []string{err.Error()}}
		}
		nsOK := p.GetNamespace() == c.MonitoringNamespace // a null namespace selector means its own namespace only
		if _, set, _ := unstructured.NestedFieldNoCopy(p.Object, "spec", "serviceMonitorNamespaceSelector"); set {
			ns, err := in.Workload.Core.CoreV1().Namespaces().Get(ctx, c.MonitoringNamespace, metav1.GetOptions{})
			var nsLabels labels.Set
			if err == nil {
				nsLabels = ns.Labels
			}
			if nsOK, err = selectorMatches(p.Object, "serviceMonitorNamespaceSelector", nsLabels); err != nil {
				return Result{Status: Error, Message: "Prometheus " + name + " has a selector that does not parse", Details: []string{err.Error()}}
			}
		}
		sa, _, _ := unstructured.NestedString(p.Object, "spec", "serviceAccountName")
		if sa == "" {
			sa = "default"
		}
		scraper := slices.ContainsFunc(c.Scrapers, func(s metricsv1alpha1.Scraper) bool {
			return s.Kind == metricsv1alpha1.ScraperServiceAccount && s.Name == sa && s.Namespace == p.GetNamespace()
		})
		switch {
		case selects && nsOK && scraper:
			return pass("Prometheus %s selects the rendered ServiceMonitors and runs as scraper %s/%s", name, p.GetNamespace(), sa)
		case selects && nsOK:
			seen = append(seen, fmt.Sprintf("Prometheus %s selects them but runs as ServiceAccount %s/%s, which is not a scraper", name, p.GetNamespace(), sa))
		default:
			seen = append(seen, fmt.Sprintf("Prometheus %s does not select ServiceMonitors labelled %s in namespace %s", name, smLabels, c.MonitoringNamespace))
		}
	}
	if len(seen) == 0 {
		seen = []string{"no Prometheus object in the cluster"}
	}
	return Result{Status: Warn, Message: "no Prometheus of the cluster scrapes the rendered ServiceMonitors as a scraper", Details: seen,
		Remediation: "set scrapeConfig.stack (kube-prometheus-stack selects release: <release>), scrapeConfig.labels or scrapeConfig.namespace to what the Prometheus selects, and list its ServiceAccount in scrapers"}
}

func mapOf(obj map[string]any, path ...string) map[string]string {
	m, _, _ := unstructured.NestedStringMap(obj, path...)
	return m
}

// selectorMatches evaluates spec.<field> of a Prometheus, a LabelSelector
// where null matches nothing and {} everything.
func selectorMatches(obj map[string]any, field string, set labels.Set) (bool, error) {
	raw, found, _ := unstructured.NestedFieldNoCopy(obj, "spec", field)
	if !found || raw == nil {
		return false, nil
	}
	var ls metav1.LabelSelector
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(raw.(map[string]any), &ls); err != nil {
		return false, err
	}
	sel, err := metav1.LabelSelectorAsSelector(&ls)
	if err != nil {
		return false, err
	}
	return sel.Matches(set), nil
}
