package templates

import (
	"os"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	metricsv1alpha1 "github.com/eksa-metrics/eksa-metrics/pkg/apis/metrics/v1alpha1"
	"github.com/eksa-metrics/eksa-metrics/pkg/spec"
)

// Every rendered alert has a runbook section in docs/alerts.md, a summary,
// a description with a command to run, and a documented severity; the
// PrometheusRule and the rule file hold the same groups.
func TestAlertsAreDocumented(t *testing.T) {
	doc, err := os.ReadFile("../../docs/alerts.md")
	if err != nil {
		t.Fatal(err)
	}
	c := allOn(metricsv1alpha1.ExposureProxy)
	v, _ := spec.ParseEKSAVersion("v0.26.1")
	c.Provider, c.Management, c.ManagementComponents, c.EKSAVersion = spec.ProviderVSphere, true, true, &v
	groups := RuleGroups(c)
	if len(groups) < 2 {
		t.Fatalf("%d rule groups for a management cluster", len(groups))
	}
	for _, g := range groups {
		for _, a := range g.Alerts {
			if !strings.Contains(string(doc), "\n## "+a.Name+"\n") {
				t.Errorf("docs/alerts.md has no section for %s", a.Name)
			}
			if a.Summary == "" || !strings.Contains(a.Description, "`") || (a.Severity != "warning" && a.Severity != "critical") || len(a.Metrics) == 0 {
				t.Errorf("%s: summary %q, severity %q, metrics %v, description without a command: %q", a.Name, a.Summary, a.Severity, a.Metrics, a.Description)
			}
			for _, m := range a.Metrics {
				if !strings.Contains(a.Expr, m) {
					t.Errorf("%s lists metric %s, which its expression does not read", a.Name, m)
				}
			}
		}
	}
	var file struct{ Groups []map[string]any }
	if err := yaml.Unmarshal([]byte(RulesFile(c)), &file); err != nil {
		t.Fatal(err)
	}
	rules := PrometheusRules(c)
	if len(file.Groups) != len(groups) || len(rules) != 1 {
		t.Errorf("the rule file has %d groups, the PrometheusRules %d objects, want %d groups", len(file.Groups), len(rules), len(groups))
	}
}
