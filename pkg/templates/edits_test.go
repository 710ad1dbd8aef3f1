package templates_test

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"

	"github.com/eksa-metrics/eksa-metrics/internal/testutil"
	metricsv1alpha1 "github.com/eksa-metrics/eksa-metrics/pkg/apis/metrics/v1alpha1"
	"github.com/eksa-metrics/eksa-metrics/pkg/spec"
	"github.com/eksa-metrics/eksa-metrics/pkg/templates"
)

// Every management Deployment of the real upstream manifests, edited for
// spec A then reconciled for spec B, equals the shipped Deployment
// reconciled for B alone; and reconciled for no edit, it is the shipped
// Deployment again, byte for byte. A and B: TLS 1.2 and 1.3, serving
// certificates on and off, excluded.
func TestReconcileDeploymentIsHistoryIndependent(t *testing.T) {
	variants := map[string]func(*spec.Config){
		"tls12":        func(*spec.Config) {},
		"tls13":        func(c *spec.Config) { c.TLSMinVersion = metricsv1alpha1.TLS13 },
		"certificates": func(c *spec.Config) { c.ServingCertificates = true },
		"excluded":     nil,
	}
	for _, p := range allProviders {
		editsFor := map[string]map[string]*templates.DeploymentEdit{}
		for name, mutate := range variants {
			editsFor[name] = map[string]*templates.DeploymentEdit{}
			if mutate == nil {
				continue
			}
			c := mgmtConfig(p, "v0.26.1")
			mutate(c)
			for _, e := range templates.ManagementEdits(c) {
				editsFor[name][e.Component.Deployment] = &e
			}
		}
		for dep := range editsFor["tls12"] {
			e := editsFor["tls12"][dep]
			shipped := testutil.UpstreamDeployment(t, testutil.UpstreamManifest(t, upstreamFile[dep]), e.Component.Namespace, dep)
			for a := range variants {
				for b := range variants {
					d := shipped.DeepCopy()
					if _, _, err := templates.ReconcileDeployment(d, editsFor[a][dep]); err != nil {
						t.Fatal(err)
					}
					if _, _, err := templates.ReconcileDeployment(d, editsFor[b][dep]); err != nil {
						t.Fatal(err)
					}
					fresh := shipped.DeepCopy()
					if _, _, err := templates.ReconcileDeployment(fresh, editsFor[b][dep]); err != nil {
						t.Fatal(err)
					}
					if !equality.Semantic.DeepEqual(d, fresh) {
						t.Errorf("%s %s: %s then %s differs from a fresh %s:\nafter: %+v\nfresh: %+v", p, dep, a, b, b, d.Spec.Template.Spec.Containers, fresh.Spec.Template.Spec.Containers)
					}
					if b == "excluded" && !equality.Semantic.DeepEqual(d, shipped) {
						t.Errorf("%s %s: %s then no edit is not the shipped Deployment", p, dep, a)
					}
					if changed, _, _ := templates.ReconcileDeployment(d, editsFor[b][dep]); changed {
						t.Errorf("%s %s: reconciling %s twice changed it again", p, dep, b)
					}
				}
			}
		}
	}
}

// A Deployment replaced since the edit (eksctl anywhere upgrade
// management-components: new args, no sidecar) keeps its new args; a record
// that is not eksa-metrics' is an error that names the fix.
func TestReconcileDeploymentAfterAReplacement(t *testing.T) {
	c := mgmtConfig(spec.ProviderTinkerbell, "v0.26.1")
	c.TLSMinVersion = metricsv1alpha1.TLS13
	for _, e := range templates.ManagementEdits(c) {
		shipped := testutil.UpstreamDeployment(t, testutil.UpstreamManifest(t, upstreamFile[e.Component.Deployment]), e.Component.Namespace, e.Component.Deployment)
		d := shipped.DeepCopy()
		if _, _, err := templates.ReconcileDeployment(d, &e); err != nil {
			t.Fatal(err)
		}
		replaced := shipped.DeepCopy()
		replaced.Annotations = d.Annotations // the upgrade keeps metadata it does not set
		for i := range replaced.Spec.Template.Spec.Containers {
			replaced.Spec.Template.Spec.Containers[i].Args = append(replaced.Spec.Template.Spec.Containers[i].Args, "--new-release-flag")
		}
		want := replaced.DeepCopy()
		want.Annotations = shipped.Annotations
		if _, _, err := templates.ReconcileDeployment(replaced, nil); err != nil {
			t.Fatal(err)
		}
		if !equality.Semantic.DeepEqual(replaced, want) {
			t.Errorf("%s: the new release's Deployment was changed: %+v", e.Name(), replaced.Spec.Template.Spec.Containers)
		}
		bad := shipped.DeepCopy()
		bad.Annotations = map[string]string{templates.EditRecordAnnotation: "{"}
		if _, _, err := templates.ReconcileDeployment(bad, nil); err == nil {
			t.Errorf("%s: a broken record was accepted", e.Name())
		}
	}
}
