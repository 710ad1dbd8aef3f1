package templates_test

import (
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/labels"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/eksa-metrics/eksa-metrics/internal/testutil"
	metricsv1alpha1 "github.com/eksa-metrics/eksa-metrics/pkg/apis/metrics/v1alpha1"
	"github.com/eksa-metrics/eksa-metrics/pkg/components"
	"github.com/eksa-metrics/eksa-metrics/pkg/spec"
	"github.com/eksa-metrics/eksa-metrics/pkg/templates"
)

func mgmtConfig(provider spec.Provider, eksa string) *spec.Config {
	v, _ := spec.ParseEKSAVersion(eksa)
	return &spec.Config{ClusterName: "mgmt", Provider: provider, Management: true, ManagementComponents: true, EKSAVersion: &v,
		TLSMinVersion: metricsv1alpha1.TLS12, Images: metricsv1alpha1.Images{KubeRBACProxy: spec.DefaultKubeRBACProxyImage}}
}

// upstreamFile names, per Deployment, the real upstream manifest of the
// version EKS-A v0.26 ships (CAPC: v0.6.1, the last one EKS-A shipped).
var upstreamFile = map[string]string{
	"eksa-controller-manager":                       "eksa-controller-manager-v0.26.1.yaml",
	"capi-controller-manager":                       "capi-core-v1.13.2.yaml",
	"capi-kubeadm-bootstrap-controller-manager":     "capi-kubeadm-bootstrap-v1.13.2.yaml",
	"capi-kubeadm-control-plane-controller-manager": "capi-kubeadm-control-plane-v1.13.2.yaml",
	"capv-controller-manager":                       "capv-v1.16.1.yaml",
	"capd-controller-manager":                       "capd-v1.13.2.yaml",
	"capc-controller-manager":                       "capc-v0.6.1.yaml",
	"capx-controller-manager":                       "capx-v1.6.1.yaml",
	"capt-controller-manager":                       "capt-v0.6.6.yaml",
	"capas-controller-manager":                      "capas-v0.3.3.yaml",
	"etcdadm-bootstrap-provider-controller-manager": "etcdadm-bootstrap-provider-v1.0.22.yaml",
	"etcdadm-controller-controller-manager":         "etcdadm-controller-v1.0.28.yaml",
	"eks-anywhere-packages":                         "eks-anywhere-packages-v0.4.17.yaml",
	"cert-manager":                                  "cert-manager-v1.20.2.yaml",
	"cert-manager-cainjector":                       "cert-manager-v1.20.2.yaml",
	"cert-manager-webhook":                          "cert-manager-v1.20.2.yaml",
}

var allProviders = []spec.Provider{spec.ProviderVSphere, spec.ProviderDocker, spec.ProviderNutanix, spec.ProviderTinkerbell, spec.ProviderSnow, spec.ProviderCloudStack}

// checkAgainstManifest holds what eksa-metrics renders for one management
// component against the real manifest of its version: the Service selects
// the pods and no other pod template of the namespace, the ServiceAccount
// is the one the pods run as and exists, the edited container exists, the
// edit keeps every other field, and a second edit changes nothing. It
// returns whether the edit changed the Deployment.
func checkAgainstManifest(t *testing.T, file string, c *spec.Config, e templates.DeploymentEdit) bool {
	t.Helper()
	m := e.Component
	docs := testutil.UpstreamManifest(t, file)
	d := testutil.UpstreamDeployment(t, docs, m.Namespace, m.Deployment)
	if d == nil {
		t.Fatalf("%s: the catalog names Deployment %s, which the manifest EKS-A ships does not hold", file, m.ID())
	}

	var svc, binding map[string]any
	for _, o := range templates.ManagementObjects(c) {
		md := o["metadata"].(map[string]any)
		switch {
		case o["kind"] == "Service" && md["name"] == m.Deployment+"-metrics":
			svc = o
		case o["kind"] == "ClusterRoleBinding" && md["name"] == templates.Prefix+"-"+m.Deployment+":auth-delegator":
			binding = o
		}
	}
	if svc == nil || svc["metadata"].(map[string]any)["namespace"] != m.Namespace {
		t.Fatalf("%s: no Service in %s", m.Deployment, m.Namespace)
	}
	sel := labels.SelectorFromSet(m.PodLabels)
	if !sel.Matches(labels.Set(d.Spec.Template.Labels)) {
		t.Errorf("%s: the Service selects %v, the pods carry %v: it would select no pod", m.Deployment, m.PodLabels, d.Spec.Template.Labels)
	}
	for _, doc := range docs {
		md, _ := doc["metadata"].(map[string]any)
		if doc["kind"] != "Deployment" || md["namespace"] != m.Namespace || md["name"] == m.Deployment {
			continue
		}
		other := testutil.UpstreamDeployment(t, docs, m.Namespace, md["name"].(string))
		if sel.Matches(labels.Set(other.Spec.Template.Labels)) {
			t.Errorf("%s: the Service also selects the pods of Deployment %s", m.Deployment, other.Name)
		}
	}

	sa := d.Spec.Template.Spec.ServiceAccountName
	if sa == "" {
		sa = "default"
	}
	if sa != m.ServiceAccount {
		t.Errorf("%s: the pods run as ServiceAccount %s, the catalog says %s", m.Deployment, sa, m.ServiceAccount)
	}
	if want := templates.BindsController(m); (binding != nil) != want {
		t.Errorf("%s: auth-delegator binding rendered: %t, want %t (the catalog says its role lacks token reviews: %t; %s)", m.Deployment, binding != nil, want, m.AuthDelegator, m.Method)
	}
	if binding != nil {
		subj := binding["subjects"].([]any)[0].(map[string]any)
		if subj["name"] != sa || subj["namespace"] != m.Namespace {
			t.Errorf("%s: the binding names %v/%v, the pods run as %s/%s", m.Deployment, subj["namespace"], subj["name"], m.Namespace, sa)
		}
		if sa != "default" && !slices.ContainsFunc(docs, func(doc map[string]any) bool {
			md, _ := doc["metadata"].(map[string]any)
			return doc["kind"] == "ServiceAccount" && md["name"] == sa && md["namespace"] == m.Namespace
		}) {
			t.Errorf("%s: the binding names ServiceAccount %s/%s, which the manifest does not create: whoever creates it later would get auth-delegator", m.Deployment, m.Namespace, sa)
		}
	}

	before := d.DeepCopy()
	changed, err := e.Apply(d)
	if err != nil {
		t.Fatalf("%s: %v", m.Deployment, err)
	}
	keepsEverythingElse(t, e, before, d)
	if again, err := e.Apply(d); err != nil || again {
		t.Errorf("%s: a second edit changed it again (%v)", m.Deployment, err)
	}
	return changed
}

// keepsEverythingElse: after the edit, only the edit's own arguments differ
// (each other argument kept, in order) and only its sidecar and its volumes
// are added.
func keepsEverythingElse(t *testing.T, e templates.DeploymentEdit, before, after *appsv1.Deployment) {
	t.Helper()
	got := after.DeepCopy()
	cs := got.Spec.Template.Spec.Containers
	if e.Sidecar != nil {
		i := slices.IndexFunc(cs, func(c corev1.Container) bool { return c.Name == e.Sidecar.Name })
		if i < 0 || !equality.Semantic.DeepEqual(cs[i], *e.Sidecar) {
			t.Fatalf("%s: the sidecar is not as rendered", e.Name())
		}
		cs = slices.Delete(cs, i, i+1)
	}
	for _, v := range e.Volumes {
		vs := got.Spec.Template.Spec.Volumes
		j := slices.IndexFunc(vs, func(x corev1.Volume) bool { return x.Name == v.Name })
		if j < 0 || !equality.Semantic.DeepEqual(vs[j], v) {
			t.Fatalf("%s: volume %s is not as rendered", e.Name(), v.Name)
		}
		got.Spec.Template.Spec.Volumes = slices.Delete(vs, j, j+1)
	}
	i := slices.IndexFunc(cs, func(c corev1.Container) bool { return c.Name == e.Container })
	for _, m := range e.Mounts {
		ms := cs[i].VolumeMounts
		j := slices.IndexFunc(ms, func(x corev1.VolumeMount) bool { return x.Name == m.Name })
		if j < 0 || !equality.Semantic.DeepEqual(ms[j], m) {
			t.Fatalf("%s: mount %s is not as rendered", e.Name(), m.Name)
		}
		cs[i].VolumeMounts = slices.Delete(ms, j, j+1)
		if len(cs[i].VolumeMounts) == 0 {
			cs[i].VolumeMounts = nil
		}
	}
	flagOf := func(a string) string { f, _, _ := strings.Cut(a, "="); return f }
	var kept []string
	for _, a := range cs[i].Args {
		if slices.ContainsFunc(e.SetArgs, func(s string) bool { return flagOf(s) == flagOf(a) }) {
			if !slices.Contains(e.SetArgs, a) {
				t.Errorf("%s: argument %s is not the one rendered", e.Name(), a)
			}
			continue
		}
		kept = append(kept, a)
	}
	var old []string
	for _, a := range before.Spec.Template.Spec.Containers[slices.IndexFunc(before.Spec.Template.Spec.Containers, func(c corev1.Container) bool { return c.Name == e.Container })].Args {
		if !slices.ContainsFunc(e.SetArgs, func(s string) bool { return flagOf(s) == flagOf(a) }) {
			old = append(old, a)
		}
	}
	if !slices.Equal(kept, old) {
		t.Errorf("%s: other arguments changed:\n got %q\nwant %q", e.Name(), kept, old)
	}
	for _, s := range e.SetArgs {
		if !slices.Contains(cs[i].Args, s) {
			t.Errorf("%s: %s missing after the edit", e.Name(), s)
		}
	}
	cs[i].Args = before.Spec.Template.Spec.Containers[slices.IndexFunc(before.Spec.Template.Spec.Containers, func(c corev1.Container) bool { return c.Name == e.Container })].Args
	got.Spec.Template.Spec.Containers = cs
	if !equality.Semantic.DeepEqual(before, got) {
		t.Errorf("%s: the edit changed fields besides its arguments, mounts, sidecar and volumes", e.Name())
	}
}

// Every management component, as EKS-A v0.26 ships it: what is rendered
// fits the real manifest, and the controllers that already serve metrics
// securely are not touched (no restart to add a default).
func TestManagementCatalogAgainstUpstreamManifests(t *testing.T) {
	checked := map[string]bool{}
	for _, p := range allProviders {
		c := mgmtConfig(p, "v0.26.1")
		for _, e := range templates.ManagementEdits(c) {
			if checked[e.Component.Deployment] {
				continue
			}
			checked[e.Component.Deployment] = true
			t.Run(e.Component.Deployment, func(t *testing.T) {
				changed := checkAgainstManifest(t, upstreamFile[e.Component.Deployment], c, e)
				if want := e.Component.Method == components.Sidecar; changed != want {
					t.Errorf("%s (%s): the edit changed the shipped Deployment: %t, want %t", e.Component.Deployment, e.Component.Method, changed, want)
				}
			})
		}
	}
	for _, m := range components.ManagementCatalog {
		if !checked[m.Deployment] {
			t.Errorf("%s is never checked against an upstream manifest", m.ID())
		}
	}
}

// With serving certificates, every controller that serves metrics itself
// (secure diagnostics) gets its certificate's Secret mounted read-only where
// its metrics server reads it, in its own container of the real manifest,
// where nothing is mounted and no TMPDIR moves the directory; and the
// scrape configuration then verifies it with eksa-metrics' CA.
func TestManagersServeOurCertificate(t *testing.T) {
	for eksa, override := range map[string]map[string]string{
		"v0.26.1": nil,
		"v0.27.0": {"capx-controller-manager": "capx-v1.10.3.yaml", "capv-controller-manager": "capv-v1.17.0-rc.2.yaml", "capt-controller-manager": "capt-v0.7.0.yaml"},
	} {
		files := maps.Clone(upstreamFile) // each release its own manifests, whatever the order
		maps.Copy(files, override)
		for _, p := range allProviders {
			c := mgmtConfig(p, eksa)
			c.ServingCertificates = true
			for _, e := range templates.ManagementEdits(c) {
				if e.Component.Method == components.ShippedProxy {
					dir := templates.ServingDir(components.ID(e.Component.Deployment))
					if e.Container != e.Component.ProxyContainer || len(e.Mounts) != 1 || e.Mounts[0].MountPath != dir || !slices.Contains(e.SetArgs, "--tls-cert-file="+dir+"/tls.crt") || !checkAgainstManifest(t, files[e.Component.Deployment], c, e) {
						t.Errorf("%s %s: its own kube-rbac-proxy %s gets args %v, mounts %v", eksa, e.Component.Deployment, e.Container, e.SetArgs, e.Mounts)
					}
				}
				if e.Component.Method != components.Shipped {
					if e.Component.Method == components.Sidecar && len(e.Mounts) > 0 {
						t.Errorf("%s %s (%s): mounts %v into its own container", eksa, e.Component.Deployment, e.Component.Method, e.Mounts)
					}
					continue
				}
				t.Run(eksa+"/"+string(p)+"/"+e.Component.Deployment, func(t *testing.T) {
					want := corev1.VolumeMount{Name: templates.ServingVolume, MountPath: components.ControllerRuntimeCertDir, ReadOnly: true}
					if len(e.Mounts) != 1 || !equality.Semantic.DeepEqual(e.Mounts[0], want) || e.Container != e.Component.Container {
						t.Fatalf("container %s mounts %+v, want %+v in %s", e.Container, e.Mounts, want, e.Component.Container)
					}
					if len(e.Volumes) != 1 || e.Volumes[0].Secret == nil || e.Volumes[0].Secret.SecretName != templates.ServingSecret(components.ID(e.Component.Deployment)) {
						t.Fatalf("volumes %+v, want the Secret %s", e.Volumes, templates.ServingSecret(components.ID(e.Component.Deployment)))
					}
					d := testutil.UpstreamDeployment(t, testutil.UpstreamManifest(t, files[e.Component.Deployment]), e.Component.Namespace, e.Component.Deployment)
					ctr := d.Spec.Template.Spec.Containers[slices.IndexFunc(d.Spec.Template.Spec.Containers, func(x corev1.Container) bool { return x.Name == e.Container })]
					for _, m := range ctr.VolumeMounts {
						if m.Name == templates.ServingVolume || strings.HasPrefix(components.ControllerRuntimeCertDir+"/", strings.TrimSuffix(m.MountPath, "/")+"/") {
							t.Errorf("the shipped container mounts %s at %s already", m.Name, m.MountPath)
						}
					}
					for _, env := range ctr.Env {
						if env.Name == "TMPDIR" {
							t.Errorf("the shipped container sets TMPDIR=%s: its metrics server reads another directory", env.Value)
						}
					}
					if !checkAgainstManifest(t, files[e.Component.Deployment], c, e) {
						t.Error("the edit does not change the shipped Deployment")
					}
					if !templates.ServesOurCertificate(c, e.Component) {
						t.Error("not listed as serving eksa-metrics' certificate")
					}
				})
			}
			scrape := templates.ScrapeConfigFile(c)
			if strings.Contains(scrape, "insecure_skip_verify: true") {
				t.Errorf("%s %s: the plain scrape configuration still skips verification of a management controller", eksa, p)
			}
		}
	}
}

// EKS-A v0.27, on the manifests of what it ships where they are at hand
// (CAPX v1.10.3, CAPV v1.17.0's release candidate, CAPT v0.7.0) and on
// v0.26's for the components assumed unchanged: what is rendered fits, and
// the controllers that serve metrics securely (CAPX now among them: its own
// https port, no kube-rbac-proxy) are not touched.
func TestManagementV027AgainstUpstreamManifests(t *testing.T) {
	files := maps.Clone(upstreamFile)
	files["capx-controller-manager"] = "capx-v1.10.3.yaml"
	files["capv-controller-manager"] = "capv-v1.17.0-rc.2.yaml"
	files["capt-controller-manager"] = "capt-v0.7.0.yaml"
	for _, p := range allProviders {
		c := mgmtConfig(p, "v0.27.0")
		if p == spec.ProviderCloudStack {
			continue // removed in v0.26
		}
		for _, e := range templates.ManagementEdits(c) {
			t.Run(string(p)+"/"+e.Component.Deployment, func(t *testing.T) {
				changed := checkAgainstManifest(t, files[e.Component.Deployment], c, e)
				if want := e.Component.Method == components.Sidecar; changed != want {
					t.Errorf("%s (%s, %s): the edit changed the shipped Deployment: %t, want %t", e.Component.Deployment, e.Component.Version, e.Component.Method, changed, want)
				}
			})
		}
	}
	c := mgmtConfig(spec.ProviderNutanix, "v0.27.0")
	c.TLSMinVersion = metricsv1alpha1.TLS13
	for _, e := range templates.ManagementEdits(c) {
		if e.Component.Deployment == "capx-controller-manager" {
			if e.Container != "manager" || !slices.Contains(e.SetArgs, "--tls-min-version=VersionTLS13") || !checkAgainstManifest(t, files[e.Component.Deployment], c, e) {
				t.Errorf("CAPX v1.10.3 for TLS 1.3: container %s, args %v", e.Container, e.SetArgs)
			}
		}
	}
}

// Asked for TLS 1.3, the controllers that can enforce it get the flag where
// they serve metrics: the manager's secure diagnostics, CAPX's own
// kube-rbac-proxy, the sidecar.
func TestManagementTLS13AgainstUpstreamManifests(t *testing.T) {
	for _, p := range []spec.Provider{spec.ProviderVSphere, spec.ProviderNutanix} {
		c := mgmtConfig(p, "v0.26.1")
		c.TLSMinVersion = metricsv1alpha1.TLS13
		for _, e := range templates.ManagementEdits(c) {
			t.Run(string(p)+"/"+e.Component.Deployment, func(t *testing.T) {
				if !checkAgainstManifest(t, upstreamFile[e.Component.Deployment], c, e) {
					t.Errorf("%s: no change for TLS 1.3", e.Component.Deployment)
				}
				flags := e.SetArgs
				if e.Sidecar != nil {
					flags = e.Sidecar.Args
				}
				if !slices.Contains(flags, "--tls-min-version=VersionTLS13") {
					t.Errorf("%s: %v", e.Component.Deployment, flags)
				}
			})
		}
	}
}

// EKS-A v0.23: eksa-controller-manager and etcdadm-controller know only a
// plain metrics flag, so they get a sidecar (and the flag they have), never
// the secure-diagnostics flags, which would crash them.
func TestManagementOlderReleasesAgainstUpstreamManifests(t *testing.T) {
	c := mgmtConfig(spec.ProviderVSphere, "v0.23.7")
	files := map[string]string{"eksa-controller-manager": "eksa-controller-manager-v0.23.7.yaml", "etcdadm-controller-controller-manager": "etcdadm-controller-v1.0.24.yaml"}
	for _, e := range templates.ManagementEdits(c) {
		file, ok := files[e.Component.Deployment]
		if !ok {
			continue
		}
		delete(files, e.Component.Deployment)
		if e.Component.Method != components.Sidecar || slices.ContainsFunc(e.SetArgs, func(a string) bool { return strings.Contains(a, "diagnostics") }) {
			t.Errorf("%s on v0.23.7: %s %v", e.Component.Deployment, e.Component.Method, e.SetArgs)
		}
		if !checkAgainstManifest(t, file, c, e) {
			t.Errorf("%s: the sidecar was not added", e.Component.Deployment)
		}
		if e.Component.Deployment == "eksa-controller-manager" {
			d := testutil.UpstreamDeployment(t, testutil.UpstreamManifest(t, file), e.Component.Namespace, e.Component.Deployment)
			if _, err := e.Apply(d); err != nil {
				t.Fatal(err)
			}
			out, _ := sigsyaml.Marshal(d)
			testutil.Golden(t, filepath.Join("testdata", "golden", "eksa-controller-manager-v0.23.7.deployment.yaml"), out)
		}
	}
	if len(files) > 0 {
		t.Errorf("not rendered on v0.23.7: %v", files)
	}
}

func TestManagementReleases(t *testing.T) {
	resolved := func(c *spec.Config) map[string]components.Resolved {
		out := map[string]components.Resolved{}
		for _, r := range templates.ManagementComponents(c) {
			out[r.Deployment] = r
		}
		return out
	}
	warnings := func(c *spec.Config) string { return strings.Join(templates.ManagementWarnings(c), "\n") }

	for _, tc := range []struct {
		eksa          string
		method        components.Method
		authDelegator bool
	}{
		{"v0.20.0", components.Sidecar, true},
		{"v0.23.7", components.Sidecar, true},
		{"v0.24.0", components.Shipped, false},
		{"v0.24.6", components.Shipped, false},
		{"v0.25.0", components.Shipped, true},
		{"v0.26.1", components.Shipped, true},
	} {
		r := resolved(mgmtConfig(spec.ProviderVSphere, tc.eksa))["eksa-controller-manager"]
		if r.Method != tc.method || r.AuthDelegator != tc.authDelegator {
			t.Errorf("eksa-controller-manager on %s: %s, auth-delegator %t; want %s, %t", tc.eksa, r.Method, r.AuthDelegator, tc.method, tc.authDelegator)
		}
	}
	if sa := resolved(mgmtConfig(spec.ProviderVSphere, "v0.24.6"))["capv-controller-manager"].ServiceAccount; sa != "default" {
		t.Errorf("CAPV on v0.24 runs as default, got %s", sa)
	}
	if r := resolved(mgmtConfig(spec.ProviderCloudStack, "v0.22.0"))["capc-controller-manager"]; r.Method != components.ShippedProxy || r.AuthDelegator {
		t.Errorf("CAPC on v0.22 ships its own kube-rbac-proxy and proxy role: %+v", r.Release)
	}

	// cert-manager's cainjector and webhook have no metrics flag before
	// cert-manager v1.16 (EKS-A v0.22): left alone, and said so.
	c := mgmtConfig(spec.ProviderVSphere, "v0.21.3")
	if _, ok := resolved(c)["cert-manager-cainjector"]; ok {
		t.Error("cert-manager-cainjector rendered on v0.21")
	}
	if w := warnings(c); !strings.Contains(w, "cert-manager/cert-manager-cainjector (cert-manager v1.14.7 and v1.15.5 in EKS Anywhere v0.21.3)") {
		t.Errorf("warnings: %s", w)
	}
	if _, ok := resolved(mgmtConfig(spec.ProviderVSphere, "v0.22.0"))["cert-manager-cainjector"]; !ok {
		t.Error("cert-manager-cainjector not rendered on v0.22")
	}

	// Without eksaVersion, v1beta1 spans v0.20 to v0.24, where
	// eksa-controller-manager and etcdadm change how they serve metrics.
	c = mgmtConfig(spec.ProviderVSphere, "v0.26.1")
	c.EKSAVersion, c.CAPIVersion = nil, spec.CAPIv1beta1
	got := resolved(c)
	for _, d := range []string{"eksa-controller-manager", "etcdadm-controller-controller-manager", "etcdadm-bootstrap-provider-controller-manager", "cert-manager-webhook"} {
		if _, ok := got[d]; ok {
			t.Errorf("%s rendered although the release is unknown", d)
		}
		if !strings.Contains(warnings(c), d+" differs between the EKS Anywhere releases this spec may run") {
			t.Errorf("no warning for %s: %s", d, warnings(c))
		}
	}
	if r, ok := got["capv-controller-manager"]; !ok || r.TLSFlag != "" {
		t.Errorf("CAPV is secure in every release; its TLS flag covers metrics only from v0.21: %+v", r)
	}
	c.CAPIVersion = spec.CAPIv1beta2 // v0.25 and later
	if r := resolved(c)["eksa-controller-manager"]; r.Method != components.Shipped || !r.AuthDelegator {
		t.Errorf("v1beta2: %+v", r)
	}

	// TLS 1.3 where the binary cannot enforce it on metrics; a release newer
	// than the catalog; the Snow caveat.
	c = mgmtConfig(spec.ProviderSnow, "v0.20.0")
	c.TLSMinVersion = metricsv1alpha1.TLS13
	if w := warnings(c); !strings.Contains(w, "capi-system/capi-controller-manager (Cluster API v1.7.2) has no flag that sets the TLS minimum") ||
		!strings.Contains(w, "capas-system/capas-controller-manager (CAPAS v0.1.30 to v0.3.3): the Snow provider's source and flags are not public") {
		t.Errorf("warnings: %s", w)
	}
	if w := warnings(mgmtConfig(spec.ProviderVSphere, "v0.28.0")); !strings.Contains(w, "EKS Anywhere v0.28.0 is newer than the releases the management catalog was checked against") {
		t.Errorf("warnings: %s", w)
	}
	// v0.27: checked, but for the components whose release could not be
	// read upstream: a warning for each of those, and no other.
	w := warnings(mgmtConfig(spec.ProviderNutanix, "v0.27.0"))
	if strings.Contains(w, "newer than the releases") || strings.Contains(w, "capx-system") || strings.Contains(w, "capi-system") {
		t.Errorf("v0.27 warns of what was checked: %s", w)
	}
	for _, id := range []string{"eksa-system/eksa-controller-manager", "eksa-packages/eks-anywhere-packages", "etcdadm-controller-system/etcdadm-controller-controller-manager"} {
		if !strings.Contains(w, id+" (") || !strings.Contains(w, "was not confirmed upstream") {
			t.Errorf("v0.27: no warning for %s: %s", id, w)
		}
	}
	if w := warnings(mgmtConfig(spec.ProviderVSphere, "v0.26.4")); w != "" {
		t.Errorf("v0.26.4 warns: %s", w)
	}
}

func TestManagementSelection(t *testing.T) {
	names := func(c *spec.Config) []string {
		var out []string
		for _, m := range templates.ManagementComponents(c) {
			out = append(out, m.Deployment)
		}
		return out
	}
	v := names(mgmtConfig(spec.ProviderVSphere, "v0.26.1"))
	if !slices.Contains(v, "capv-controller-manager") || slices.Contains(v, "capd-controller-manager") || slices.Contains(v, "capt-controller-manager") {
		t.Fatalf("vsphere: %v", v)
	}
	if s := names(mgmtConfig(spec.ProviderSnow, "v0.26.1")); !slices.Contains(s, "capas-controller-manager") {
		t.Fatalf("snow: %v", s)
	}
	c := mgmtConfig(spec.ProviderVSphere, "v0.26.1")
	c.ManagementExclude = []string{"capi-system/capi-controller-manager"}
	if slices.Contains(names(c), "capi-controller-manager") {
		t.Fatal("exclude ignored")
	}
	c.ManagementComponents = false
	if len(names(c)) != 0 || len(templates.ManagementWarnings(c)) != 0 {
		t.Fatal("disabled but rendered")
	}
}

// A Deployment without the expected container is an error that names it.
func TestEditOfAChangedManifest(t *testing.T) {
	var e templates.DeploymentEdit
	for _, x := range templates.ManagementEdits(mgmtConfig(spec.ProviderTinkerbell, "v0.26.1")) {
		if x.Component.Deployment == "capt-controller-manager" {
			e = x
		}
	}
	var d appsv1.Deployment
	d.Spec.Template.Spec.Containers = []corev1.Container{{Name: "other"}}
	if _, err := e.Apply(&d); err == nil || !strings.Contains(err.Error(), `no container "manager"`) {
		t.Fatalf("got %v", err)
	}
}

// The security finding: a sidecar in cert-manager's pod must not hold
// cert-manager's token. On the real upstream Deployments of every release
// with a sidecar, the sidecar mounts its own ServiceAccount's token Secret
// at the path where the ServiceAccount admission plugin would mount the
// pod's (so the plugin skips it), no other container mounts that Secret or
// anything at that path, and the namespace gets exactly one sidecar
// ServiceAccount, token Secret and auth-delegator binding, while the
// controller's own ServiceAccount gets no binding for the sidecar.
// test/integration proves what the admission plugin then does.
func TestSidecarRunsAsItsOwnServiceAccount(t *testing.T) {
	const saDir = "/var/run/secrets/kubernetes.io/serviceaccount"
	type release struct {
		provider spec.Provider
		eksa     string
		files    map[string]string
	}
	v023 := map[string]string{"eksa-controller-manager": "eksa-controller-manager-v0.23.7.yaml", "etcdadm-controller-controller-manager": "etcdadm-controller-v1.0.24.yaml"}
	seen := map[string]bool{}
	for _, r := range []release{{spec.ProviderTinkerbell, "v0.26.1", upstreamFile}, {spec.ProviderSnow, "v0.26.1", upstreamFile}, {spec.ProviderVSphere, "v0.23.7", v023}} {
		for _, serving := range []bool{false, true} {
			c := mgmtConfig(r.provider, r.eksa)
			c.ServingCertificates = serving
			objs := templates.ManagementObjects(c)
			sidecarNS := map[string]bool{}
			for _, e := range templates.ManagementEdits(c) {
				if e.Component.Method != components.Sidecar {
					continue
				}
				sidecarNS[e.Component.Namespace] = true
				file, ok := r.files[e.Component.Deployment]
				if !ok {
					continue // another release's manifest; its namespace is counted
				}
				seen[e.Component.Deployment] = true
				name := fmt.Sprintf("%s/%s/serving=%t", r.eksa, e.Component.Deployment, serving)
				d := testutil.UpstreamDeployment(t, testutil.UpstreamManifest(t, file), e.Component.Namespace, e.Component.Deployment)
				if _, err := e.Apply(d); err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				pod := d.Spec.Template.Spec
				var tokenVolume string
				for _, v := range pod.Volumes {
					if strings.HasPrefix(v.Name, "kube-api-access-") {
						t.Errorf("%s: volume %s has the prefix the admission plugin takes for the pod's own token", name, v.Name)
					}
					if v.Secret != nil && v.Secret.SecretName == templates.SidecarTokenSecret {
						tokenVolume = v.Name
						if v.Secret.DefaultMode == nil || *v.Secret.DefaultMode != 0o444 {
							t.Errorf("%s: token volume mode %v, want 0444 (the sidecar's user reads it without the pod's fsGroup)", name, v.Secret.DefaultMode)
						}
					}
				}
				if tokenVolume == "" {
					t.Fatalf("%s: no volume of Secret %s", name, templates.SidecarTokenSecret)
				}
				for _, ct := range pod.Containers {
					atPath, token := false, false
					for _, m := range ct.VolumeMounts {
						if m.MountPath == saDir {
							atPath = true
							if m.Name != tokenVolume || !m.ReadOnly {
								t.Errorf("%s: container %s mounts %s (readOnly %t) at %s", name, ct.Name, m.Name, m.ReadOnly, saDir)
							}
						}
						token = token || m.Name == tokenVolume
					}
					if sidecar := ct.Name == templates.SidecarName; atPath != sidecar || token != sidecar {
						t.Errorf("%s: container %s: a mount at %s: %t, of the sidecar's token: %t; want both %t", name, ct.Name, saDir, atPath, token, sidecar)
					}
				}
				for _, o := range objs {
					md := o["metadata"].(map[string]any)
					if o["kind"] == "ClusterRoleBinding" && md["name"] == templates.Prefix+"-"+e.Component.Deployment+":auth-delegator" {
						t.Errorf("%s: the controller's ServiceAccount %s is bound to auth-delegator, though the sidecar reviews tokens as %s", name, e.Component.ServiceAccount, templates.SidecarSA)
					}
				}
			}
			// One identity per namespace with a sidecar, none elsewhere.
			count := map[string]int{}
			for _, o := range objs {
				md := o["metadata"].(map[string]any)
				ns, _ := md["namespace"].(string)
				switch {
				case o["kind"] == "ServiceAccount" && md["name"] == templates.SidecarSA:
					count[ns+" ServiceAccount"]++
					if o["automountServiceAccountToken"] != false {
						t.Errorf("ServiceAccount %s/%s automounts its token into pods that would run as it", ns, templates.SidecarSA)
					}
				case o["kind"] == "Secret" && md["name"] == templates.SidecarTokenSecret:
					count[ns+" Secret"]++
					ann, _ := md["annotations"].(map[string]any)
					if o["type"] != "kubernetes.io/service-account-token" || ann["kubernetes.io/service-account.name"] != templates.SidecarSA || o["data"] != nil {
						t.Errorf("Secret %s/%s: %v", ns, templates.SidecarTokenSecret, o)
					}
				case o["kind"] == "ClusterRoleBinding" && strings.HasPrefix(md["name"].(string), templates.SidecarSA+":"):
					subj, ref := o["subjects"].([]any), o["roleRef"].(map[string]any)
					s0 := subj[0].(map[string]any)
					ns, _ = s0["namespace"].(string)
					count[ns+" ClusterRoleBinding"]++
					if len(subj) != 1 || s0["kind"] != "ServiceAccount" || s0["name"] != templates.SidecarSA || md["name"] != templates.SidecarBinding(ns) ||
						ref["kind"] != "ClusterRole" || ref["name"] != templates.AuthDelegator {
						t.Errorf("ClusterRoleBinding %s: %v -> %v", md["name"], subj, ref)
					}
				}
			}
			want := map[string]int{}
			for ns := range sidecarNS {
				for _, k := range []string{"ServiceAccount", "Secret", "ClusterRoleBinding"} {
					want[ns+" "+k] = 1
				}
			}
			if !maps.Equal(count, want) {
				t.Errorf("%s %s: the sidecar identities rendered %v, want %v", r.provider, r.eksa, count, want)
			}
		}
	}
	for _, d := range []string{"cert-manager", "cert-manager-cainjector", "cert-manager-webhook", "eks-anywhere-packages", "capt-controller-manager", "capas-controller-manager", "eksa-controller-manager", "etcdadm-controller-controller-manager"} {
		if !seen[d] {
			t.Errorf("%s: no sidecar checked", d)
		}
	}
}
