package templates

import (
	"os"
	"slices"
	"strings"
	"testing"

	metricsv1alpha1 "github.com/eksa-metrics/eksa-metrics/pkg/apis/metrics/v1alpha1"
	"github.com/eksa-metrics/eksa-metrics/pkg/components"
	"github.com/eksa-metrics/eksa-metrics/pkg/spec"
)

// A stack is one row of spec.Stacks: the API's list, the CRD's enum, the
// table and the docs' "Monitoring stacks" table name the same stacks, and a
// row names only components that exist.
func TestStacksAreOneTable(t *testing.T) {
	want := append([]metricsv1alpha1.Stack{metricsv1alpha1.StackGeneric}, metricsv1alpha1.Stacks...)
	var rows []metricsv1alpha1.Stack
	for name, row := range spec.Stacks {
		rows = append(rows, name)
		for _, id := range row.ScrapesItself {
			if !slices.ContainsFunc(components.ClusterCatalog, func(c components.Cluster) bool { return string(c.ID) == id }) {
				t.Errorf("stack %q scrapes %q itself, which is no component", name, id)
			}
		}
		if row.Namespace == "" {
			t.Errorf("stack %q has no default namespace", name)
		}
		if _, ok := configFiles[row.ConfigFile]; row.ConfigFile != "" && !ok {
			t.Errorf("stack %q has config file %q, which nothing renders", name, row.ConfigFile)
		}
		for id := range row.Jobs {
			if !slices.ContainsFunc(components.ClusterCatalog, func(c components.Cluster) bool { return string(c.ID) == id }) {
				t.Errorf("stack %q names a job for %q, which is no component", name, id)
			}
		}
		if row.ConfigFileScrapes && row.ConfigFile == "" {
			t.Errorf("stack %q: its config file scrapes, but it has none", name)
		}
		if row.ReleaseRequired && !row.ReleaseAllowed || row.ReleaseAllowed && row.ReleaseNames == "" {
			t.Errorf("stack %q: release required %t, allowed %t, names %q", name, row.ReleaseRequired, row.ReleaseAllowed, row.ReleaseNames)
		}
	}
	slices.Sort(rows)
	slices.Sort(want)
	if !slices.Equal(rows, want) {
		t.Errorf("spec.Stacks has %q, the API lists %q", rows, want)
	}

	crd, err := os.ReadFile("../../config/crd/metrics.anywhere.eks.amazonaws.com_metricsconfigs.yaml")
	if err != nil {
		t.Fatal(err)
	}
	// The enum whose values include kube-prometheus-stack: the lines of
	// "- value" after its "enum:".
	var inCRD []metricsv1alpha1.Stack
	lines := strings.Split(string(crd), "\n")
	for i, l := range lines {
		if strings.TrimSpace(l) != "enum:" {
			continue
		}
		var values []metricsv1alpha1.Stack
		for _, v := range lines[i+1:] {
			v = strings.TrimSpace(v)
			if !strings.HasPrefix(v, "- ") {
				break
			}
			values = append(values, metricsv1alpha1.Stack(strings.Trim(strings.TrimPrefix(v, "- "), `"`)))
		}
		if slices.Contains(values, metricsv1alpha1.StackKubePrometheusStack) {
			inCRD = values
		}
	}
	slices.Sort(inCRD)
	if !slices.Equal(inCRD, want) {
		t.Errorf("the CRD's enum of scrapeConfig.stack is %q, want %q (make generate)", inCRD, want)
	}

	doc, err := os.ReadFile("../../docs/reference.md")
	if err != nil {
		t.Fatal(err)
	}
	section := string(doc)[strings.Index(string(doc), "## Monitoring stacks"):]
	for _, name := range metricsv1alpha1.Stacks {
		if !strings.Contains(section, "\n| `"+string(name)+"` |") {
			t.Errorf("docs/reference.md \"Monitoring stacks\" has no row for %q", name)
		}
	}
}
