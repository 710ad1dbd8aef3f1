package cluster_test

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"

	metricsv1alpha1 "github.com/eksa-metrics/eksa-metrics/pkg/apis/metrics/v1alpha1"
	"github.com/eksa-metrics/eksa-metrics/pkg/cluster"
	"github.com/eksa-metrics/eksa-metrics/pkg/render"
	"github.com/eksa-metrics/eksa-metrics/pkg/spec"
)

// Every kind eksa-metrics renders, edits or prunes is in a group the
// connections' RESTMappers keep: a group left out would read as "the
// cluster does not serve it". Rendered: the examples with every stack and
// both certificate issuers.
func TestMappedGroupsCoverWhatIsRendered(t *testing.T) {
	groups, kinds := map[string]string{}, map[string]string{}
	for _, gvk := range cluster.PrunableGroupVersionKinds {
		groups[gvk.Group] = gvk.Kind + " (pruned)"
		kinds[gvk.Kind] = "pruned"
	}
	examples, err := filepath.Glob("../../examples/*.yaml")
	if err != nil || len(examples) == 0 {
		t.Fatalf("no examples: %v", err)
	}
	for _, path := range examples {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, stack := range append([]metricsv1alpha1.Stack{metricsv1alpha1.StackGeneric}, metricsv1alpha1.Stacks...) {
			for _, issuer := range []string{"", "cert-manager"} {
				f, err := spec.Load(path, bytes.NewReader(data))
				if err != nil {
					t.Fatal(err)
				}
				f.Metrics.ScrapeConfig.Stack = stack
				if stack == metricsv1alpha1.StackKubePrometheusStack && f.Metrics.ScrapeConfig.Release == "" {
					f.Metrics.ScrapeConfig.Release = "kps"
				}
				f.Metrics.TLS.Certificates = issuer
				r, err := render.RenderFile(f, spec.Options{})
				if err != nil {
					t.Logf("%s with stack %q and issuer %q: %v", path, stack, issuer, err)
					continue
				}
				for _, o := range r.Objects {
					apiVersion, _ := o.Object["apiVersion"].(string)
					gv, _ := schema.ParseGroupVersion(apiVersion)
					groups[gv.Group] = o.Kind() + " (rendered)"
					kinds[o.Kind()] = "rendered"
				}
				if r.Change.APIVersion != "" {
					gv, _ := schema.ParseGroupVersion(r.Change.APIVersion)
					groups[gv.Group] = "KubeadmControlPlane (edited)"
					kinds["KubeadmControlPlane"] = "edited"
				}
			}
		}
	}
	for g, why := range groups {
		if !slices.Contains(cluster.MappedGroups, g) {
			t.Errorf("group %q (%s) is not in mappedGroups", g, why)
		}
	}
	// Asked about by the controller's preflight: the EKS-A Cluster and the
	// MetricsConfig.
	kinds["Cluster"], kinds["MetricsConfig"] = "preflight", "preflight"
	for k, why := range kinds {
		if !slices.Contains(cluster.MappedKinds, k) {
			t.Errorf("kind %s (%s) is not in mappedKinds", k, why)
		}
	}
	if len(groups) < 6 {
		t.Errorf("only groups %v found: the renders above did not run", groups)
	}
}
