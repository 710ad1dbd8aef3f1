package render

import (
	"strconv"

	"fmt"
	"sort"
	"strings"

	"github.com/eksa-metrics/eksa-metrics/pkg/components"

	metricsv1alpha1 "github.com/eksa-metrics/eksa-metrics/pkg/apis/metrics/v1alpha1"
	"github.com/eksa-metrics/eksa-metrics/pkg/templates"

	"github.com/eksa-metrics/eksa-metrics/pkg/kubeadm"
)

// PlanMarkdown says, for a person, what applying the result changes and what
// it rolls out.
func (r *Result) PlanMarkdown() string {
	c := r.Config
	var b strings.Builder
	fmt.Fprintf(&b, "# eksa-metrics plan for cluster %s\n\n", c.ClusterName)
	fmt.Fprintf(&b, "Kubernetes %s, provider %s", c.KubeVersion, c.Provider)
	if c.OSFamily != "" {
		fmt.Fprintf(&b, " (%s)", c.OSFamily)
	}
	role := "workload cluster"
	if c.Management {
		role = "management cluster"
	}
	fmt.Fprintf(&b, ", %s, CAPI %s, exposure `%s`.\n", role, c.CAPIVersion, c.Exposure)
	fmt.Fprintf(&b, "KubeadmControlPlane contract %s, chosen by %s.\n\n", c.CAPIVersion, c.CAPIReason)

	b.WriteString("## What rolls out\n\n")
	if !r.Change.Applicable() {
		b.WriteString("- Control plane: nothing. The KubeadmControlPlane is not changed; no machine is replaced.\n")
	} else {
		fmt.Fprintf(&b, "- Control plane: KubeadmControlPlane %s/%s changes, so Cluster API replaces every control-plane machine once (per the cluster's upgradeRolloutStrategy). Apply it when a rollout is acceptable.\n", kubeadm.Namespace, c.ClusterName)
	}
	for _, o := range r.Objects {
		if o.Kind() == "DaemonSet" {
			fmt.Fprintf(&b, "- %s: new pods on its nodes (hostNetwork); nothing else restarts.\n", o)
		}
	}
	for _, e := range r.DeploymentEdits {
		fmt.Fprintf(&b, "- %s (management cluster, %s): %s\n", e.Name(), e.Component.Version, describeEdit(e))
	}
	var names []string
	for _, comp := range templates.ServedCertificates(c) {
		names = append(names, templates.SystemNS+"/"+templates.ServingSecret(comp.ID))
	}
	if len(names) > 0 && c.CertManager {
		fmt.Fprintf(&b, "- Serving certificates (`tls.certificates: cert-manager`): the cert-manager running in the cluster issues the CA (Secret %s/%s, from ClusterIssuer %s) and Secrets %s (from ClusterIssuer %s), from the ClusterIssuers and Certificates rendered here, and renews them. `eksa-metrics apply` waits for them and publishes the CA bundle ConfigMap %s where the scrapers read it: with `kubectl apply -k` or Flux, run `eksa-metrics apply` once afterwards for the bundle.\n",
			templates.CertManagerNS, templates.ServingCA, templates.SelfSignedIssuer, strings.Join(names, ", "), templates.CAIssuer, templates.ServingCA)
	} else if len(names) > 0 {
		fmt.Fprintf(&b, "- Serving certificates (`tls.certificates: eksa-metrics`): `eksa-metrics apply` makes Secret %s/%s (the CA), Secrets %s and the CA bundle ConfigMap %s where the scrapers read it, before the objects. They are never rendered (no private key in any file): with `kubectl apply -k` or Flux, run `eksa-metrics apply` once first, or the proxy pods wait for their Secrets.\n",
			templates.SystemNS, templates.ServingCA, strings.Join(names, ", "), templates.ServingCA)
	}
	if r.KubeProxyEdit != nil {
		fmt.Fprintf(&b, "- kube-proxy: ConfigMap kube-system/kube-proxy `config.conf` gets `metricsBindAddress: %s` and DaemonSet kube-system/kube-proxy restarts. No Kubernetes object can express an edit inside that string, so it is not in the rendered objects: edit the ConfigMap (`kubectl -n kube-system edit configmap kube-proxy`, change only that field) and run `kubectl -n kube-system rollout restart daemonset kube-proxy`.\n", r.KubeProxyEdit.MetricsBindAddress)
	}
	b.WriteString("\n")

	if !r.Change.Empty() {
		b.WriteString("## KubeadmControlPlane extraArgs\n\n| component | flag | value | why |\n|---|---|---|---|\n")
		for _, it := range r.Change.Items {
			why := it.Why
			if it.Merged {
				why = "**not rendered**: " + why + "; EKS Anywhere renders its own `--" + it.Name + "` item, and Cluster API keys extraArgs items by name and value, so a second item is refused by the CRD and replacing EKS-A's item would make EKS-A's next reconcile fail. This value is what the merged flag would be; these z-pages stay off on this version"
			}
			fmt.Fprintf(&b, "| %s | `--%s` | `%s` | %s |\n", it.Component, it.Name, it.Value, why)
		}
		b.WriteString("\n")
	}

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
			fmt.Fprintf(&b, "- %s\n", o)
		}
		b.WriteString("\n")
	}

	if c.Stack != metricsv1alpha1.StackGeneric {
		fmt.Fprintf(&b, "## Monitoring stack: %s\n\n", c.Stack)
		fmt.Fprintf(&b, "Scrapers: %s.", scraperList(c.Scrapers))
		if c.DefaultScraper {
			b.WriteString(" (the stack's own Prometheus identity, because the section lists none)")
		}
		b.WriteString("\n")
		for _, name := range sortedFiles(r.Files) {
			fmt.Fprintf(&b, "- `prometheus/%s` is not an object: merge it into the %s release %q (`helm upgrade %s ... --reuse-values -f %s`).\n", name, c.Stack, c.Release, c.Release, name)
		}
		b.WriteString("\n")
	}
	if len(r.Warnings) > 0 {
		b.WriteString("## Warnings\n\n")
		for _, w := range r.Warnings {
			fmt.Fprintf(&b, "- %s: %s\n", w.Field, w.Detail)
		}
		b.WriteString("\n")
	}
	if c.Exposure == metricsv1alpha1.ExposureBindAddress && c.AllowInsecure && (c.Etcd || c.KubeProxy) {
		b.WriteString("## Security\n\n`allowInsecure: true`: etcd and/or kube-proxy metrics are plain HTTP without authentication on every node address. Restrict ports 2381 and 10249 with a host firewall or security groups; NetworkPolicy does not apply to host-network ports.\n")
	}
	return b.String()
}

func scraperList(scrapers []metricsv1alpha1.Scraper) string {
	out := make([]string, len(scrapers))
	for i, s := range scrapers {
		out[i] = templates.ObjectName(string(s.Kind), s.Namespace, s.Name)
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

// describeEdit says what apply does to a management Deployment and whether
// its pods restart.
func describeEdit(e templates.DeploymentEdit) string {
	const how = " Container args are an atomic list, so this is no object here: `eksa-metrics apply` edits the live Deployment (read-modify-write, every other argument and field kept) and skips it when it is not installed. `eksctl anywhere upgrade management-components` replaces the Deployment: run apply again afterwards."
	args := "`" + strings.Join(e.SetArgs, " ") + "`"
	switch e.Component.Method {
	case components.Shipped:
		s := "serves metrics securely as shipped (Cluster API secure diagnostics on :8443: TLS, TokenReview, SubjectAccessReview)."
		if e.ChangesShipped() {
			return s + " apply sets " + args + " on container " + e.Container + "; its pods restart." + how
		}
		return s + " apply only checks " + args + " on container " + e.Container + " and changes nothing when they are as shipped; nothing restarts."
	case components.ShippedProxy:
		s := "serves metrics through its own kube-rbac-proxy container on :8443, as shipped."
		if e.ChangesShipped() {
			return s + " apply sets " + args + " on container " + e.Container + "; its pods restart." + how
		}
		return s + " Nothing changes."
	}
	s := "a kube-rbac-proxy sidecar on :8443 (TLS, TokenReview, SubjectAccessReview, /metrics only) in front of its plain-HTTP listener on 127.0.0.1:" + strconv.Itoa(e.Component.UpstreamPort)
	if len(e.SetArgs) > 0 {
		s += ", which " + args + " keeps on loopback (a value the binary may already have)"
	}
	return s + "; its pods restart." + how
}
