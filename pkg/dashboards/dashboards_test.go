package dashboards

import (
	"encoding/json"
	"testing"

	"github.com/grafana/grafana-foundation-sdk/go/cog/plugins"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"

	metricsv1alpha1 "github.com/eksa-metrics/eksa-metrics/pkg/apis/metrics/v1alpha1"
	"github.com/eksa-metrics/eksa-metrics/pkg/spec"
)

// The dashboards of a management cluster read back as Grafana dashboards
// (the SDK's own model) with every panel and its query, under a unique uid.
func TestDashboardsReadBack(t *testing.T) {
	plugins.RegisterDefaultPlugins()
	v, _ := spec.ParseEKSAVersion("v0.26.1")
	c := &spec.Config{ClusterName: "mgmt", Provider: spec.ProviderVSphere, Management: true, ManagementComponents: true, EKSAVersion: &v,
		Exposure: metricsv1alpha1.ExposureProxy, ControllerManager: true, Scheduler: true, Etcd: true, KubeProxy: true,
		TLSMinVersion: metricsv1alpha1.TLS12, MonitoringNamespace: "monitoring"}
	ds := Dashboards(c)
	if len(ds) != 3 {
		t.Fatalf("%d dashboards for a management cluster, want the targets, the management controllers and the fleet", len(ds))
	}
	uids := map[string]bool{}
	for _, d := range ds {
		js, err := JSON(d)
		if err != nil {
			t.Fatal(err)
		}
		var back dashboard.Dashboard
		if err := json.Unmarshal(js, &back); err != nil {
			t.Fatalf("%s: %v", d.Name, err)
		}
		if back.Uid == nil || uids[*back.Uid] || len(back.Panels) != len(d.Panels) {
			t.Errorf("%s: uid %v, %d panels, want %d", d.Name, back.Uid, len(back.Panels), len(d.Panels))
			continue
		}
		uids[*back.Uid] = true
		for i, p := range back.Panels {
			if p.Panel == nil || len(p.Panel.Targets) != 1 || p.Panel.Title == nil || *p.Panel.Title != d.Panels[i].Title {
				t.Errorf("%s: panel %d: %+v", d.Name, i, p.Panel)
			}
		}
	}
}
