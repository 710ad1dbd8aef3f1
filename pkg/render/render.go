// Package render turns a loaded cluster file into everything eksa-metrics
// writes: the clean cluster.yaml, the KubeadmControlPlane change and the
// objects for each cluster, in a stable order.
package render

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	metricsv1alpha1 "github.com/eksa-metrics/eksa-metrics/pkg/apis/metrics/v1alpha1"
	"github.com/eksa-metrics/eksa-metrics/pkg/components"
	"github.com/eksa-metrics/eksa-metrics/pkg/kubeadm"
	"github.com/eksa-metrics/eksa-metrics/pkg/spec"
	"github.com/eksa-metrics/eksa-metrics/pkg/templates"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Destination is the cluster a rendered object is applied to.
type Destination string

const (
	// Management is the management cluster (the KubeadmControlPlane, and the
	// management components).
	Management Destination = "management"
	// Workload is the cluster whose components are scraped.
	Workload Destination = "workload"
	// Prometheus holds the scrape configuration (in the workload cluster).
	Prometheus Destination = "prometheus"
)

// Destinations in output order.
var Destinations = []Destination{Management, Workload, Prometheus}

// Object is one rendered object and where it goes.
type Object struct {
	Destination Destination
	Object      templates.Object
}

// Kind, Namespace and Name of the object.
func (o Object) Kind() string { s, _ := o.Object["kind"].(string); return s }

// Namespace of the object ("" for cluster-scoped).
func (o Object) Namespace() string {
	md, _ := o.Object["metadata"].(map[string]any)
	s, _ := md["namespace"].(string)
	return s
}

// Name of the object.
func (o Object) Name() string {
	md, _ := o.Object["metadata"].(map[string]any)
	s, _ := md["name"].(string)
	return s
}

// String is "Kind namespace/name".
func (o Object) String() string { return templates.ObjectName(o.Kind(), o.Namespace(), o.Name()) }

// Owned reports whether eksa-metrics creates the object and so owns all of
// it. A KubeadmControlPlane is only changed: EKS Anywhere owns the object,
// eksa-metrics a few extraArgs items in it.
func (o Object) Owned() bool { return o.Kind() != "KubeadmControlPlane" }

// KubeProxyEdit is the bindAddress-mode change inside the kube-proxy
// ConfigMap's config.conf, which no object can express; apply performs it.
type KubeProxyEdit struct {
	MetricsBindAddress string
}

// Result is everything rendered for one cluster file.
type Result struct {
	Config        *spec.Config
	ClusterYAML   []byte
	Change        kubeadm.Change
	Objects       []Object
	KubeProxyEdit *KubeProxyEdit
	// DeploymentEdits change management-component Deployments (read-modify-write).
	DeploymentEdits []templates.DeploymentEdit
	// Files go to the prometheus/ directory of -o kustomize and are not
	// objects (the kube-prometheus-stack values).
	Files map[string][]byte
	// Dashboards are the Grafana dashboards' JSON by file name
	// (prometheus/dashboards/ of -o kustomize).
	Dashboards map[string][]byte
	// Issues are the warnings, with their field paths; Warnings the same
	// located in a file (RenderFile).
	Issues   spec.Issues
	Warnings []spec.Warning
}

// Render defaults and validates an input, then renders it. An invalid input
// gives a *spec.FieldError (every problem with its field path) and no
// result; the warnings are in Result.Issues.
func Render(in *spec.Input, opts spec.Options) (*Result, error) {
	cfg := spec.Default(in, opts)
	issues := spec.Validate(in, cfg, opts)
	if errs := issues.Errors(); len(errs) > 0 {
		return nil, &spec.FieldError{Issues: errs}
	}
	r := &Result{Config: cfg, Issues: issues.Warnings(), Change: kubeadm.ChangeFor(cfg)}
	for _, it := range r.Change.Items {
		if it.User {
			// The user's own item: the merged value belongs there, and EKS-A
			// then renders one feature-gates item with every gate.
			r.Issues = append(r.Issues, spec.Issue{Doc: spec.DocCluster, Warning: true,
				Field: field.NewPath("spec", "controlPlaneConfiguration", "apiServerExtraArgs").Key(it.Name).String(),
				Detail: fmt.Sprintf(
					"EKS Anywhere renders this --%s item for the %s, and eksa-metrics cannot add its z-page gates next to it (Cluster API v1beta2 refuses a second item of the same name; in v1beta1 EKS-A's controller takes the flag back), so the z-page gates are left out of the rendered KubeadmControlPlane: set this value to %q, your gates and the z-page gates merged, and EKS Anywhere renders the one item (PLAN.md explains)",
					it.Name, it.Component, it.Value)})
		} else if it.Merged {
			r.Issues = append(r.Issues, in.MetricsIssue("zPages", fmt.Sprintf(
				"the %s --%s item would have to merge EKS Anywhere's own value into %q, which server-side apply cannot do next to EKS-A's item (Cluster API keys extraArgs items by name and value), so it is left out of the rendered KubeadmControlPlane; the z-pages of that component stay off until Kubernetes 1.36 enables them by default (PLAN.md explains)",
				it.Component, it.Name, it.Value)))
		}
	}
	// Always, with no spec when no item is needed: see kubeadm.Change.Object.
	r.add(Management, r.Change.Object())
	for _, w := range templates.ManagementWarnings(cfg) {
		r.Issues = append(r.Issues, in.MetricsIssue("managementComponents", w))
	}
	r.add(Management, templates.ManagementObjects(cfg)...)
	r.DeploymentEdits = templates.ManagementEdits(cfg)
	r.add(Workload, templates.RBAC(cfg)...)
	r.add(Workload, templates.CertManagerObjects(cfg)...)
	r.add(Workload, templates.Proxies(cfg)...)
	r.add(Workload, templates.KubeletApproverObjects(cfg)...)
	r.add(Workload, templates.Services(cfg)...)
	r.add(Prometheus, templates.ServiceMonitors(cfg)...)
	r.add(Prometheus, templates.PrometheusRules(cfg)...)
	r.add(Prometheus, templates.ScraperToken(cfg)...)
	r.add(Prometheus, templates.ScrapeConfigObject(cfg)...)
	r.add(Prometheus, templates.StackObjects(cfg)...)
	r.add(Management, templates.PackageObjects(cfg)...)
	r.Files = templates.StackFiles(cfg)
	if err := r.addDashboards(); err != nil {
		return nil, err
	}
	if cfg.Exposure == metricsv1alpha1.ExposureBindAddress && cfg.KubeProxy && cfg.AllowInsecure {
		r.KubeProxyEdit = &KubeProxyEdit{MetricsBindAddress: "0.0.0.0:10249"}
	}
	for _, o := range r.Objects {
		if o.Owned() { // the inventory apply prunes
			md := o.Object["metadata"].(map[string]any)
			lbls, _ := md["labels"].(map[string]any)
			if lbls == nil {
				lbls = map[string]any{}
			}
			lbls[templates.ClusterLabel] = cfg.ClusterName
			md["labels"] = lbls
		}
	}
	sortObjects(r.Objects)
	if errs := r.sizeIssues(in); len(errs) > 0 {
		return nil, &spec.FieldError{Issues: errs}
	}
	r.Issues = append(r.Issues, r.mirrorIssues(in)...)
	r.Issues = append(r.Issues, excludeIssues(in, cfg)...)
	r.Issues = append(r.Issues, r.scrapeIssues(in)...)
	return r, nil
}

// MaxObjectBytes is the largest object an API server can store: etcd's
// default request limit (--max-request-bytes, DefaultMaxRequestBytes = 1.5
// MiB in go.etcd.io/etcd/server/v3 embed/config.go), below kube-apiserver's
// own 3 MiB request limit; the API server adds managedFields on top.
const MaxObjectBytes = 1536 << 10

// sizeIssues refuses offline a render whose object no API server would
// store, instead of an apply that fails half-way.
func (r *Result) sizeIssues(in *spec.Input) spec.Issues {
	var out spec.Issues
	for _, o := range r.Objects {
		b, err := json.Marshal(o.Object)
		if err != nil || len(b) <= MaxObjectBytes {
			continue
		}
		out = append(out, spec.Issue{Doc: spec.DocMetrics, Field: in.MetricsRoot().String(), Detail: fmt.Sprintf(
			"%s would be %d bytes, more than the %d an API server stores (etcd's request limit): it is built from this spec (labels, jobs and rules are copied into it); make them smaller",
			o, len(b), MaxObjectBytes)})
	}
	return out
}

// excludeIssues: an exclude that names no Deployment eksa-metrics would
// change does nothing, which is worth saying (a typo leaves the Deployment
// changed).
func excludeIssues(in *spec.Input, c *spec.Config) spec.Issues {
	var out spec.Issues
	for i, ex := range c.ManagementExclude {
		p := fmt.Sprintf("managementComponents.exclude[%d]", i)
		var row *components.Management
		for j := range components.ManagementCatalog {
			if components.ManagementCatalog[j].ID() == ex {
				row = &components.ManagementCatalog[j]
			}
		}
		switch {
		case row == nil:
			out = append(out, in.MetricsIssue(p, fmt.Sprintf("%q names no Deployment of the management catalog (docs/components.md lists them), so it excludes nothing; check the namespace and name", ex)))
		case !c.ManagementComponents:
			out = append(out, in.MetricsIssue(p, fmt.Sprintf("excludes nothing: management components are off for this cluster, so %s is left alone anyway", ex)))
		case len(row.Providers) > 0 && !slices.Contains(row.Providers, string(c.Provider)):
			out = append(out, in.MetricsIssue(p, fmt.Sprintf("excludes nothing: %s runs only with provider %s, and this cluster's provider is %s", ex, strings.Join(row.Providers, ", "), c.Provider)))
		}
	}
	return out
}

// scrapeIssues: a scrape configuration that renders no scrape job (no
// ServiceMonitor, no scrape file, no additional-scrape-configs Secret, no
// Package) leaves every endpoint unscraped. kube-prometheus-stack and
// kube-prometheus scrape the API server and the kubelet themselves, so their
// ServiceMonitors may rightly be none.
func (r *Result) scrapeIssues(in *spec.Input) spec.Issues {
	c := r.Config
	if spec.Stacks[c.Stack].ConfigFileScrapes && len(r.Files) > 0 {
		return nil
	}
	for _, o := range r.Objects {
		switch o.Kind() {
		case "ServiceMonitor", "PodMonitor", "Package":
			return nil
		case "ConfigMap", "Secret":
			if o.Destination == Prometheus {
				return nil
			}
		}
	}
	if c.ServiceMonitors && spec.Stacks[c.Stack].MonitorsAlone {
		return nil
	}
	why := "no component is enabled"
	if !c.ServiceMonitors && !c.PrometheusConfig && !spec.Stacks[c.Stack].RendersConfiguration() {
		why = "scrapeConfig.serviceMonitors and scrapeConfig.prometheus are both false"
	}
	return spec.Issues{in.MetricsIssue("scrapeConfig", "renders no scrape configuration ("+why+"): no Prometheus is told to scrape what eksa-metrics exposes; turn serviceMonitors or prometheus on, or set the stack that scrapes the cluster")}
}

// mirrorIssues: a Cluster that pulls through a registry mirror can run only
// the images the mirror holds, which are EKS Anywhere's bundle images, so a
// built-in default image that is rendered needs saying.
func (r *Result) mirrorIssues(in *spec.Input) spec.Issues {
	c := r.Config
	if c.RegistryMirror == "" {
		return nil
	}
	used := map[string]bool{}
	for _, o := range r.Objects {
		for _, img := range templates.Images(o.Object) {
			used[img] = true
		}
	}
	for _, e := range r.DeploymentEdits {
		if e.Sidecar != nil {
			used[e.Sidecar.Image] = true
		}
	}
	var out spec.Issues
	for i, img := range []struct{ field, ref string }{{"kubeRBACProxy", c.Images.KubeRBACProxy}, {"haproxy", c.Images.HAProxy}} {
		if c.ImageSources[i] == "default" && used[img.ref] {
			out = append(out, in.MetricsIssue("images."+img.field, fmt.Sprintf(
				"the Cluster pulls through registry mirror %s, which holds the images of EKS Anywhere's bundle, and %s is eksa-metrics' default: pass --bundles-override with the cluster's Bundles manifest, or set spec.images.%s to an image the mirror holds",
				c.RegistryMirror, img.ref, img.field)))
		}
	}
	return out
}

// RenderFile renders a loaded cluster file: Render, with every problem and
// warning located at its file and line (an invalid file gives a
// *spec.InvalidError), and the file without the metrics section.
func RenderFile(f *spec.File, opts spec.Options) (*Result, error) {
	r, err := Render(f.Input(), opts)
	var fe *spec.FieldError
	switch {
	case errors.As(err, &fe):
		_, located := f.Locate(fe.Issues)
		return nil, located
	case err != nil:
		return nil, err
	}
	r.Warnings, _ = f.Locate(r.Issues)
	if r.ClusterYAML, err = f.ClusterYAML(); err != nil {
		return nil, &spec.InvalidError{Problems: []spec.Problem{{File: f.Path, Detail: err.Error()}}}
	}
	return r, nil
}

func (r *Result) add(t Destination, objs ...templates.Object) {
	for _, o := range objs {
		r.Objects = append(r.Objects, Object{Destination: t, Object: o})
	}
}

// kindOrder puts objects in the order they can be applied.
var kindOrder = map[string]int{
	"Namespace": 0, "ServiceAccount": 1, "ClusterRole": 2, "ClusterRoleBinding": 3, "Role": 4, "RoleBinding": 5,
	"ConfigMap": 6, "Secret": 6, "Issuer": 6, "Certificate": 6, "Service": 7, "DaemonSet": 8, "Deployment": 9, "KubeadmControlPlane": 10,
	"ServiceMonitor": 11, "PodMonitor": 12, "Package": 13,
}

func destinationIndex(t Destination) int {
	for i, x := range Destinations {
		if x == t {
			return i
		}
	}
	return len(Destinations)
}

func sortObjects(objs []Object) {
	sort.SliceStable(objs, func(i, j int) bool {
		a, b := objs[i], objs[j]
		if a.Destination != b.Destination {
			return destinationIndex(a.Destination) < destinationIndex(b.Destination)
		}
		if ka, kb := kindOrder[a.Kind()], kindOrder[b.Kind()]; ka != kb {
			return ka < kb
		}
		if a.Namespace() != b.Namespace() {
			return a.Namespace() < b.Namespace()
		}
		return a.Name() < b.Name()
	})
}

// ObjectsFor returns the objects of one target.
func (r *Result) ObjectsFor(t Destination) []Object {
	var out []Object
	for _, o := range r.Objects {
		if o.Destination == t {
			out = append(out, o)
		}
	}
	return out
}

// ApplyOnly names the changes that are not objects (edits that only check a
// Deployment as shipped are left out), so that a YAML or JSON
// stream cannot carry them: eksa-metrics apply makes them by
// read-modify-write (a Deployment's container args are an atomic list; the
// kube-proxy setting is a field inside a string).
func (r *Result) ApplyOnly() []string {
	var out []string
	for _, e := range r.DeploymentEdits {
		if e.ChangesShipped() {
			out = append(out, e.Name()+" (management cluster)")
		}
	}
	if r.KubeProxyEdit != nil {
		out = append(out, "ConfigMap kube-system/kube-proxy config.conf metricsBindAddress (workload cluster)")
	}
	return out
}
