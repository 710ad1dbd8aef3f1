package render_test

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/eksa-metrics/eksa-metrics/internal/testutil"
	metricsv1alpha1 "github.com/eksa-metrics/eksa-metrics/pkg/apis/metrics/v1alpha1"
	"github.com/eksa-metrics/eksa-metrics/pkg/components"
	"github.com/eksa-metrics/eksa-metrics/pkg/render"
	"github.com/eksa-metrics/eksa-metrics/pkg/spec"
	"github.com/eksa-metrics/eksa-metrics/pkg/templates"
)

// The controller reads and writes Secrets of its management cluster by the
// names of templates.SecretNames only: every Secret a render writes (its
// objects and its certificates' Secrets), for every stack and certificate
// issuer, has one of those names in its namespace; and every name there is
// one some render writes, so the list grants nothing nobody renders.
func TestSecretNamesHoldEveryRender(t *testing.T) {
	example := testutil.ManagementExample(t)
	const monitoring = "monitoring" // the example's scraper's
	allowed := templates.SecretNames([]string{monitoring})
	seen := map[string]bool{}
	renders := 0
	for _, stack := range slices.Sorted(maps.Keys(spec.Stacks)) {
		for _, issuer := range []string{metricsv1alpha1.CertificatesNone, metricsv1alpha1.CertificatesEKSAMetrics, metricsv1alpha1.CertificatesCertManager} {
			for _, sidecars := range []bool{false, true} {
				sc := "    stack: " + string(stack) + "\n    namespace: " + monitoring + "\n"
				if spec.Stacks[stack].ReleaseAllowed {
					sc += "    release: r1\n"
				}
				text := example(sc, "    certificates: "+issuer+"\n")
				if sidecars {
					// EKS-A before v0.24: eksa-controller-manager gets the sidecar.
					text = strings.Replace(text, "eksaVersion: v0.26.1", "eksaVersion: v0.23.0", 1)
					text = strings.Replace(text, "kubernetesVersion: \"1.36\"", "kubernetesVersion: \"1.33\"", 1)
				}
				f, err := spec.Load("vsphere-management.yaml", strings.NewReader(text))
				if err != nil {
					t.Fatalf("stack %q, certificates %s: %v", stack, issuer, err)
				}
				r, err := render.RenderFile(f, spec.Options{})
				if err != nil {
					t.Logf("stack %q, certificates %s, sidecars %v: not rendered: %v", stack, issuer, sidecars, err)
					continue // a combination the spec refuses
				}
				renders++
				names := templates.CertificateObjects(r.Config, templates.ServingSecrets(r.Config))
				for _, o := range r.Objects {
					if o.Kind() == "Secret" {
						names[templates.ObjectName("Secret", o.Namespace(), o.Name())] = true
					}
				}
				for name := range names {
					kind, nsName, _ := strings.Cut(name, " ")
					ns, n, _ := strings.Cut(nsName, "/")
					if kind != "Secret" {
						continue
					}
					seen[ns+"/"+n] = true
					if !slices.Contains(allowed[ns], n) {
						t.Errorf("stack %q, certificates %s: the render writes Secret %s/%s, which templates.SecretNames does not name (the controller could not read or change it)", stack, issuer, ns, n)
					}
				}
			}
		}
	}
	if renders < 10 {
		t.Fatalf("only %d renders", renders)
	}
	// The example is a vSphere cluster: the other providers' namespaces
	// are not rendered.
	vsphere := map[string]bool{templates.SystemNS: true, monitoring: true}
	for _, m := range components.ManagementCatalog {
		if len(m.Providers) == 0 || slices.Contains(m.Providers, "vsphere") {
			vsphere[m.Namespace] = true
		}
	}
	for ns, names := range allowed {
		if !vsphere[ns] {
			continue
		}
		for _, n := range names {
			if !seen[ns+"/"+n] && n != templates.KubeletServingCA {
				t.Errorf("templates.SecretNames names Secret %s/%s, which no render writes", ns, n)
			}
		}
	}
}
