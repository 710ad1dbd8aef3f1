package render

import (
	"strconv"

	"fmt"
	"sort"
	"strings"

	"github.com/eksa-metrics/eksa-metrics/pkg/certs"
	"github.com/eksa-metrics/eksa-metrics/pkg/components"

	metricsv1alpha1 "github.com/eksa-metrics/eksa-metrics/pkg/apis/metrics/v1alpha1"
	"github.com/eksa-metrics/eksa-metrics/pkg/templates"

	"github.com/eksa-metrics/eksa-metrics/pkg/kubeadm"
	"github.com/eksa-metrics/eksa-metrics/pkg/safetext"
	"github.com/eksa-metrics/eksa-metrics/pkg/spec"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// PlanMarkdown says, for a person, what applying the result changes and what
// it rolls out: the images that run and where, and who gets which role.
// Every value from the input goes through esc (safetext.Escape): none can
// start a line of its own or reorder the text around it.
func (r *Result) PlanMarkdown() string {
	c := r.Config
	var b strings.Builder
	fmt.Fprintf(&b, "# eksa-metrics plan for cluster %s\n\n", esc(c.ClusterName))
	fmt.Fprintf(&b, "Kubernetes %s, provider %s", c.KubeVersion, esc(string(c.Provider)))
	if c.OSFamily != "" {
		fmt.Fprintf(&b, " (%s)", esc(c.OSFamily))
	}
	role := "workload cluster"
	if c.Management {
		role = "management cluster"
	}
	fmt.Fprintf(&b, ", %s, CAPI %s, exposure `%s`.\n", role, esc(c.CAPIVersion), esc(string(c.Exposure)))
	fmt.Fprintf(&b, "KubeadmControlPlane contract %s, chosen by %s.\n\n", esc(c.CAPIVersion), esc(c.CAPIReason))

	b.WriteString("## What rolls out\n\n")
	if !r.Change.Applicable() {
		fmt.Fprintf(&b, "- Control plane: nothing rolls. KubeadmControlPlane %s/%s gets no extraArgs item, only eksa-metrics' marks (Flux and Argo CD never prune or delete it); an apply gives back any item an earlier spec set there, which replaces every control-plane machine once.\n", kubeadm.Namespace, esc(c.ClusterName))
	} else {
		fmt.Fprintf(&b, "- Control plane: KubeadmControlPlane %s/%s changes, so Cluster API replaces every control-plane machine once (per the cluster's upgradeRolloutStrategy). Apply it when a rollout is acceptable.\n", kubeadm.Namespace, esc(c.ClusterName))
	}
	for _, o := range r.Objects {
		if o.Kind() == "DaemonSet" {
			where := "every node"
			if o.Name() == templates.ControlPlaneDS {
				where = "every control-plane node"
			}
			fmt.Fprintf(&b, "- %s: new pods on %s, whatever its taints (hostNetwork); nothing else restarts.\n", esc(o.String()), where)
		}
	}
	for _, e := range r.DeploymentEdits {
		fmt.Fprintf(&b, "- %s (management cluster, %s): %s\n", esc(e.Name()), esc(e.Component.Version), esc(describeEdit(e)))
	}
	var names []string
	for _, comp := range templates.ServedCertificates(c) {
		names = append(names, esc(templates.SystemNS+"/"+templates.ServingSecret(comp.ID)))
	}
	if len(names) > 0 && c.CertManager {
		fmt.Fprintf(&b, "- Serving certificates (`tls.certificates: cert-manager`): the cert-manager running in the cluster issues and renews them from the Issuers and Certificates rendered here. In each namespace with a serving certificate (%s), Issuer %s issues that namespace's CA (Secret %s) and Issuer %s issues the serving certificates there from it, Secrets %s among them. They are namespaced Issuers, not ClusterIssuers: an Issuer signs only the Certificates of its own namespace, so no one who may create a Certificate elsewhere can have eksa-metrics' CA sign one for these names. `eksa-metrics apply` waits for them and publishes the CA bundle ConfigMap %s (every namespace's CA) where the scrapers read it: with `kubectl apply -k` or Flux, run `eksa-metrics apply` once afterwards for the bundle.\n",
			esc(strings.Join(templates.IssuerNamespaces(templates.ServingSecrets(c)), ", ")), templates.SelfSignedIssuer, templates.IssuerCA, templates.CAIssuer, strings.Join(names, ", "), templates.ServingCA)
	} else if len(names) > 0 {
		fmt.Fprintf(&b, "- Serving certificates (`tls.certificates: eksa-metrics`): `eksa-metrics apply` makes Secret %s/%s (the CA), Secrets %s and the CA bundle ConfigMap %s where the scrapers read it, before the objects. They are never rendered (no private key in any file), live %d days and are renewed only by a later `eksa-metrics apply` or the controller, once two thirds of their life have passed: with `kubectl apply -k`, Flux or Argo CD, run `eksa-metrics apply` first and then on a schedule (monthly is enough), run the controller, or set `tls.certificates: cert-manager`.\n",
			templates.SystemNS, templates.ServingCA, strings.Join(names, ", "), templates.ServingCA, int(certs.ServingLifetime.Hours()/24))
	}
	if c.KubeletServingCertificates {
		fmt.Fprintf(&b, "- Kubelets (`tls.kubeletServingCertificates`): cluster.yaml sets `serverTLSBootstrap: true` in the kubeletConfiguration of every node group that lacks it, so `eksctl anywhere upgrade cluster -f cluster.yaml` replaces their machines. Apply this plan first: Deployment %s/%s approves each kubelet's `kubernetes.io/kubelet-serving` CertificateSigningRequest when it names only that node's own names and addresses (reason %s; it denies the others, reason %s) and signs it with the kubelet-serving CA (Secret kube-system/"+templates.KubeletServingCA+", which apply creates; the kubelet scrapes trust it alone, under key "+templates.KubeletCAKey+" of the CA bundle ConfigMaps), while the KubeadmControlPlane's kube-controller-manager items take that signer from kube-controller-manager (it keeps the cluster CA for the other signers; the change rolls the control plane), so no kubelet certificate is one a client of the cluster CA accepts. Until a node is replaced its kubelet serves a self-signed certificate and its scrapes fail verification (`x509: certificate signed by unknown authority`). A kubelet with `serverTLSBootstrap` whose request nobody approves serves no certificate at all, so `kubectl logs` and `exec` fail on its node too: keep the approver running for as long as the kubelets have the setting. To turn the option off, upgrade the cluster with the cluster.yaml generated without it before `eksa-metrics apply` removes the approver.\n",
			templates.SystemNS, templates.KubeletApprover, spec.KubeletServingApproved, spec.KubeletServingRefused)
	}
	if r.KubeProxyEdit == nil {
		b.WriteString("- kube-proxy: not edited. Where an earlier spec had eksa-metrics set its `metricsBindAddress` (bindAddress mode with allowInsecure), `eksa-metrics apply` gives back the value it replaced (recorded on ConfigMap kube-system/kube-proxy) and DaemonSet kube-system/kube-proxy restarts.\n")
	}
	if r.KubeProxyEdit != nil {
		fmt.Fprintf(&b, "- kube-proxy: ConfigMap kube-system/kube-proxy `config.conf` gets `metricsBindAddress: %s` and DaemonSet kube-system/kube-proxy restarts. No Kubernetes object can express an edit inside that string, so it is not in the rendered objects: edit the ConfigMap (`kubectl -n kube-system edit configmap kube-proxy`, change only that field) and run `kubectl -n kube-system rollout restart daemonset kube-proxy`.\n", esc(r.KubeProxyEdit.MetricsBindAddress))
	}
	b.WriteString("\n")
	b.WriteString("## From an earlier spec\n\n")
	b.WriteString("`eksa-metrics apply` leaves the clusters as a fresh apply of this spec would, whatever was applied before: it deletes the objects it created for this cluster that this spec no longer renders, and the certificates' Secrets and ConfigMaps it no longer needs; it gives back the KubeadmControlPlane items, the management Deployments' edits and kube-proxy's `metricsBindAddress` that an earlier spec set and this one does not (each edit is recorded on the object it changed). `eksa-metrics validate -f NEW --from OLD` lists each of these changes, what rolls and what restarts. A GitOps tool that prunes deletes only eksa-metrics' own objects: the KubeadmControlPlane is always rendered, with marks that keep Flux and Argo CD from deleting it; the edits above are `eksa-metrics apply`'s or the controller's alone.\n\n")

	if !r.Change.Empty() {
		b.WriteString("## KubeadmControlPlane extraArgs\n\n| component | flag | value | why |\n|---|---|---|---|\n")
		for _, it := range r.Change.Items {
			why := it.Why
			if it.User {
				why = "**not rendered**: " + why + "; EKS Anywhere renders the `--" + it.Name + "` item of the Cluster's `controlPlaneConfiguration.apiServerExtraArgs`, and Cluster API keys extraArgs items by name and value, so a second item is refused by the CRD and replacing EKS-A's item would make EKS-A's next reconcile fail. Set `apiServerExtraArgs." + it.Name + "` to this value (your gates and the z-page gates merged) and EKS Anywhere renders the one item"
			} else if it.Merged {
				why = "**not rendered**: " + why + "; EKS Anywhere renders its own `--" + it.Name + "` item, and Cluster API keys extraArgs items by name and value, so a second item is refused by the CRD and replacing EKS-A's item would make EKS-A's next reconcile fail. This value is what the merged flag would be; these z-pages stay off on this version"
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", cell(esc(string(it.Component))), cell(code("--"+it.Name)), cell(code(it.Value)), cell(esc(why)))
		}
		b.WriteString("\n")
	}
	r.writeImages(&b)
	r.writeBindings(&b)

	for _, t := range Destinations {
		objs := r.ObjectsFor(t)
		if len(objs) == 0 {
			continue
		}
		fmt.Fprintf(&b, "## %s/ (%d objects)\n\n", t, len(objs))
		switch t {
		case Management:
			b.WriteString("Apply to the management cluster: `kubectl apply --server-side --field-manager=eksa-metrics -k management/`.\n\n")
		case Workload:
			b.WriteString("Apply to the workload cluster: `kubectl apply --server-side --field-manager=eksa-metrics -k workload/`.\n\n")
		case Prometheus:
			b.WriteString("Apply to the cluster where Prometheus runs (the workload cluster): `kubectl apply --server-side --field-manager=eksa-metrics -k prometheus/`. `scrape-configs.yaml` is the same configuration for a Prometheus without the operator.\n\n")
		}
		for _, o := range objs {
			fmt.Fprintf(&b, "- %s\n", esc(o.String()))
		}
		b.WriteString("\n")
	}

	if c.Stack != metricsv1alpha1.StackGeneric {
		fmt.Fprintf(&b, "## Monitoring stack: %s\n\n", esc(string(c.Stack)))
		fmt.Fprintf(&b, "Scrapers: %s.", scraperList(c.Scrapers))
		if c.DefaultScraper {
			b.WriteString(" (the stack's own Prometheus identity, because the section lists none)")
		}
		b.WriteString("\n")
		for _, name := range sortedFiles(r.Files) {
			what, command := templates.StackFileUse(c, name)
			fmt.Fprintf(&b, "- %s is not applied: %s (%s).\n", code("prometheus/"+name), esc(what), code(command))
		}
		b.WriteString("\n")
	}
	if len(r.Warnings) > 0 {
		b.WriteString("## Warnings\n\n")
		for _, w := range r.Warnings {
			fmt.Fprintf(&b, "- %s: %s\n", esc(w.Field), esc(w.Detail))
		}
		b.WriteString("\n")
	}
	if c.Exposure == metricsv1alpha1.ExposureBindAddress && c.AllowInsecure && (c.Etcd || c.KubeProxy) {
		fmt.Fprintf(&b, "## Security\n\n`allowInsecure: true`: %s are plain HTTP without authentication on every node address. Restrict ports 2381 and 10249 with a host firewall or security groups; NetworkPolicy does not apply to host-network ports.\n", spec.InsecureExposed(c))
	}
	return b.String()
}

// esc is how every interpolated value reaches PLAN.md.
func esc(s string) string { return safetext.Escape(s) }

// code is s, escaped, as a Markdown code span: its fence is one backtick
// longer than the longest run of backticks in s.
func code(s string) string {
	s = esc(s)
	longest, run := 0, 0
	for _, r := range s {
		if r == '`' {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	fence := strings.Repeat("`", longest+1)
	if longest > 0 {
		return fence + " " + s + " " + fence
	}
	return fence + s + fence
}

// cell makes an escaped string safe in a Markdown table cell.
func cell(s string) string { return strings.ReplaceAll(s, "|", `\|`) }

// destinationNote says which cluster a destination is.
func destinationNote(t Destination) string {
	if t == Management {
		return "management cluster"
	}
	return "workload cluster"
}

// ImageUse is a container image that a render runs, and where.
type ImageUse struct {
	Image, Object, Container string
	Destination              Destination
	// Sidecar: a container apply adds to a management Deployment.
	Sidecar bool
}

// Images are every container image that runs: the containers of the
// rendered DaemonSets and Deployments, and the sidecars apply adds to
// management Deployments. The values are as rendered: escape them for
// display.
func (r *Result) Images() []ImageUse {
	var out []ImageUse
	for _, o := range r.Objects {
		for _, ct := range podContainers(o.Object) {
			out = append(out, ImageUse{Image: ct.image, Object: o.String(), Container: ct.name, Destination: o.Destination})
		}
	}
	for _, e := range r.DeploymentEdits {
		if e.Sidecar != nil {
			out = append(out, ImageUse{Image: e.Sidecar.Image, Object: e.Name(), Container: e.Sidecar.Name, Destination: Management, Sidecar: true})
		}
	}
	return out
}

// RoleGrant is a rendered binding: the role it grants and to whom.
type RoleGrant struct {
	Binding, Role string
	Destination   Destination
	Subjects      []string
}

// Grants are every rendered ClusterRoleBinding and RoleBinding.
func (r *Result) Grants() []RoleGrant {
	var out []RoleGrant
	for _, o := range r.Objects {
		if o.Kind() != "ClusterRoleBinding" && o.Kind() != "RoleBinding" {
			continue
		}
		kind, _, _ := unstructured.NestedString(o.Object, "roleRef", "kind")
		name, _, _ := unstructured.NestedString(o.Object, "roleRef", "name")
		subs, _, _ := unstructured.NestedSlice(o.Object, "subjects")
		g := RoleGrant{Binding: o.String(), Role: templates.ObjectName(kind, "", name), Destination: o.Destination}
		for _, s := range subs {
			m, _ := s.(map[string]any)
			sk, _ := m["kind"].(string)
			sns, _ := m["namespace"].(string)
			sn, _ := m["name"].(string)
			g.Subjects = append(g.Subjects, templates.ObjectName(sk, sns, sn))
		}
		out = append(out, g)
	}
	return out
}

// writeImages lists Images for PLAN.md.
func (r *Result) writeImages(b *strings.Builder) {
	var lines []string
	for _, u := range r.Images() {
		if u.Sidecar {
			lines = append(lines, fmt.Sprintf("- %s: %s, container %s (management cluster), a sidecar that apply adds: it runs inside that pod, as a ServiceAccount of its own", code(u.Image), esc(u.Object), esc(u.Container)))
			continue
		}
		lines = append(lines, fmt.Sprintf("- %s: %s, container %s (%s)", code(u.Image), esc(u.Object), esc(u.Container), destinationNote(u.Destination)))
	}
	if len(lines) == 0 {
		return
	}
	b.WriteString("## Images that run\n\nEvery container image that runs, where and in which container:\n\n")
	b.WriteString(strings.Join(lines, "\n"))
	b.WriteString("\n\n")
}

type podContainer struct{ name, image string }

// podContainers are the containers and init containers of an object's pod
// template.
func podContainers(obj templates.Object) []podContainer {
	var out []podContainer
	for _, list := range []string{"initContainers", "containers"} {
		cs, _, _ := unstructured.NestedSlice(obj, "spec", "template", "spec", list)
		for _, c := range cs {
			m, _ := c.(map[string]any)
			name, _ := m["name"].(string)
			image, _ := m["image"].(string)
			if image != "" {
				out = append(out, podContainer{name: name, image: image})
			}
		}
	}
	return out
}

// writeBindings lists Grants for PLAN.md.
func (r *Result) writeBindings(b *strings.Builder) {
	var lines []string
	for _, g := range r.Grants() {
		to := "nobody (no subjects)"
		if len(g.Subjects) > 0 {
			who := make([]string, len(g.Subjects))
			for i, s := range g.Subjects {
				who[i] = esc(s)
			}
			to = strings.Join(who, ", ")
		}
		lines = append(lines, fmt.Sprintf("- %s (%s): %s to %s", esc(g.Binding), destinationNote(g.Destination), esc(g.Role), to))
	}
	if len(lines) == 0 {
		return
	}
	b.WriteString("## Who gets which role\n\nEvery binding rendered, the role it grants and to whom:\n\n")
	b.WriteString(strings.Join(lines, "\n"))
	b.WriteString("\n\n")
}

func scraperList(scrapers []metricsv1alpha1.Scraper) string {
	out := make([]string, len(scrapers))
	for i, s := range scrapers {
		out[i] = esc(templates.ObjectName(string(s.Kind), s.Namespace, s.Name))
	}
	return strings.Join(out, ", ")
}

func sortedFiles(files map[string][]byte) []string {
	out := make([]string, 0, len(files))
	for k := range files {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// certificateMount says which certificate an edit mounts where, and what
// it serves instead.
func certificateMount(e templates.DeploymentEdit) string {
	return "Secret " + e.Component.Namespace + "/" + templates.ServingSecret(components.ID(e.Component.Deployment)) + " read-only at " + e.Mounts[0].MountPath +
		" (a certificate of eksa-metrics' CA for " + templates.ManagementServingName(e.Component) + ", instead of a self-signed one)"
}

// describeEdit says what apply does to a management Deployment and whether
// its pods restart.
func describeEdit(e templates.DeploymentEdit) string {
	const how = " Container args are an atomic list, so this is no object here: `eksa-metrics apply` edits the live Deployment (read-modify-write, every other argument and field kept) and skips it when it is not installed. `eksctl anywhere upgrade management-components` replaces the Deployment: run apply again afterwards."
	args := "`" + strings.Join(e.SetArgs, " ") + "`"
	switch e.Component.Method {
	case components.Shipped:
		checked, set := e.CheckedArgs()
		s := "serves metrics securely as shipped (Cluster API secure diagnostics on :8443: TLS, TokenReview, SubjectAccessReview). apply checks `" +
			strings.Join(checked, " ") + "` on container " + e.Container + " (as shipped)"
		if len(set) > 0 {
			s += ", sets `" + strings.Join(set, " ") + "`"
		}
		if len(e.Mounts) > 0 {
			s += ", and mounts " + certificateMount(e) + ", where its metrics server reads tls.crt and tls.key (reloaded when renewed)"
		}
		if e.ChangesShipped() {
			return s + "; its pods restart." + how
		}
		return s + ", and changes nothing when they are as shipped; nothing restarts."
	case components.ShippedProxy:
		s := "serves metrics through its own kube-rbac-proxy container on :8443, as shipped."
		if e.ChangesShipped() {
			s += " apply sets " + args + " on container " + e.Container
			if len(e.Mounts) > 0 {
				s += ", with " + certificateMount(e)
			}
			return s + "; its pods restart." + how
		}
		return s + " Nothing changes."
	}
	s := "a kube-rbac-proxy sidecar on :8443 (TLS, TokenReview, SubjectAccessReview, /metrics only) in front of its plain-HTTP listener on 127.0.0.1:" + strconv.Itoa(e.Component.UpstreamPort)
	if len(e.SetArgs) > 0 {
		s += ", which " + args + " keeps on loopback (a value the binary may already have)"
	}
	s += "; the sidecar runs as ServiceAccount " + e.Component.Namespace + "/" + templates.SidecarSA + " (auth-delegator only; its token Secret " + templates.SidecarTokenSecret +
		" is mounted into the sidecar alone), not as the controller's ServiceAccount " + e.Component.ServiceAccount
	return s + "; its pods restart." + how
}
