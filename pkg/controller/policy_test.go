package controller

import (
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	metricsv1alpha1 "github.com/eksa-metrics/eksa-metrics/pkg/apis/metrics/v1alpha1"
	"github.com/eksa-metrics/eksa-metrics/pkg/render"
	"github.com/eksa-metrics/eksa-metrics/pkg/spec"
)

func eksaCluster(namespace, name, managedBy string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"managementCluster": map[string]any{"name": managedBy}}}}
	u.SetNamespace(namespace)
	u.SetName(name)
	return u
}

// What a MetricsConfig may have the controller do depends on its namespace
// and on the policy, never on what its author writes in a Cluster.
func TestAdmit(t *testing.T) {
	p := Policy{ManagementCluster: types.NamespacedName{Namespace: "default", Name: "mgmt"}, PrivilegedNamespaces: []string{"platform"}}
	sa := []metricsv1alpha1.Scraper{{Kind: metricsv1alpha1.ScraperServiceAccount, Name: "prom", Namespace: "monitoring"}}
	mc := func(ns string, mut func(*metricsv1alpha1.MetricsConfigSpec)) *metricsv1alpha1.MetricsConfig {
		m := &metricsv1alpha1.MetricsConfig{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "m"}, Spec: metricsv1alpha1.MetricsConfigSpec{Scrapers: sa}}
		if mut != nil {
			mut(&m.Spec)
		}
		return m
	}
	for _, tc := range []struct {
		name    string
		mc      *metricsv1alpha1.MetricsConfig
		cluster *unstructured.Unstructured
		refused string // "" when admitted
	}{
		{"a tenant's workload cluster", mc("team-a", nil), eksaCluster("team-a", "prod", "mgmt"), ""},
		{"the management cluster from its namespace", mc("default", nil), eksaCluster("default", "mgmt", "mgmt"), ""},
		{"an image from the custom resource", mc("default", func(s *metricsv1alpha1.MetricsConfigSpec) { s.Images.KubeRBACProxy = "evil.example/proxy:1" }), eksaCluster("default", "w1", "mgmt"), "spec.images"},
		{"an image from a tenant", mc("team-a", func(s *metricsv1alpha1.MetricsConfigSpec) { s.Images.HAProxy = "evil.example/haproxy:1" }), eksaCluster("team-a", "prod", "mgmt"), "spec.images"},
		{"a spoofed management cluster", mc("team-a", nil), eksaCluster("team-a", "evil", "evil"), "a Cluster is the management cluster only when it is that one"},
		{"a spoofed management cluster, privileged namespace", mc("platform", nil), eksaCluster("platform", "evil", ""), "the management cluster only when it is that one"},
		{"the flag names a Cluster managed by another", mc("default", nil), eksaCluster("default", "mgmt", "other"), "fix the flag"},
		{"a tenant's bindAddress", mc("team-a", func(s *metricsv1alpha1.MetricsConfigSpec) { s.Exposure = metricsv1alpha1.ExposureBindAddress }), eksaCluster("team-a", "prod", "mgmt"), "spec.exposure"},
		{"a tenant's allowInsecure", mc("team-a", func(s *metricsv1alpha1.MetricsConfigSpec) { s.AllowInsecure = true }), eksaCluster("team-a", "prod", "mgmt"), "spec.allowInsecure"},
		{"a tenant's rollout", mc("team-a", func(s *metricsv1alpha1.MetricsConfigSpec) { s.AllowControlPlaneRollout = true }), eksaCluster("team-a", "prod", "mgmt"), "spec.allowControlPlaneRollout"},
		{"a tenant's z-pages", mc("team-a", func(s *metricsv1alpha1.MetricsConfigSpec) { s.ZPages.Flagz = ptr.To(true) }), eksaCluster("team-a", "prod", "mgmt"), "spec.zPages"},
		{"a tenant's Group scraper", mc("team-a", func(s *metricsv1alpha1.MetricsConfigSpec) {
			s.Scrapers = []metricsv1alpha1.Scraper{{Kind: metricsv1alpha1.ScraperGroup, Name: "system:masters"}}
		}), eksaCluster("team-a", "prod", "mgmt"), "spec.scrapers[0].kind"},
		{"a tenant's scraper in kube-system (a never-expiring token of an escalating controller)", mc("team-a", func(s *metricsv1alpha1.MetricsConfigSpec) {
			s.Scrapers = []metricsv1alpha1.Scraper{{Kind: metricsv1alpha1.ScraperServiceAccount, Name: "clusterrole-aggregation-controller", Namespace: "kube-system"}}
		}), eksaCluster("team-a", "prod", "mgmt"), "spec.scrapers[0].namespace"},
		{"a tenant's scraper in eksa-system", mc("team-a", func(s *metricsv1alpha1.MetricsConfigSpec) {
			s.Scrapers = []metricsv1alpha1.Scraper{{Kind: metricsv1alpha1.ScraperServiceAccount, Name: "default", Namespace: "eksa-system"}}
		}), eksaCluster("team-a", "prod", "mgmt"), "spec.scrapers[0].namespace"},
		{"a tenant's scrape configuration in kube-system", mc("team-a", func(s *metricsv1alpha1.MetricsConfigSpec) { s.ScrapeConfig.Namespace = "kube-system" }), eksaCluster("team-a", "prod", "mgmt"), "spec.scrapeConfig.namespace"},
		{"a tenant's kubelet approver", mc("team-a", func(s *metricsv1alpha1.MetricsConfigSpec) { s.TLS.KubeletServingCertificates = ptr.To(true) }), eksaCluster("team-a", "prod", "mgmt"), "spec.tls.kubeletServingCertificates"},
		{"a kubelet approver on the controller's own management cluster", mc("default", func(s *metricsv1alpha1.MetricsConfigSpec) { s.TLS.KubeletServingCertificates = ptr.To(true) }), eksaCluster("default", "mgmt", "mgmt"), "eksa-metrics apply"},
		{"a privileged namespace's kubelet approver", mc("platform", func(s *metricsv1alpha1.MetricsConfigSpec) { s.TLS.KubeletServingCertificates = ptr.To(true) }), eksaCluster("platform", "prod", "mgmt"), ""},
		{"a privileged namespace's bindAddress", mc("platform", func(s *metricsv1alpha1.MetricsConfigSpec) { s.Exposure = metricsv1alpha1.ExposureBindAddress }), eksaCluster("platform", "prod", "mgmt"), ""},
	} {
		err := p.admit(tc.mc, tc.cluster)
		switch {
		case tc.refused == "" && err != nil:
			t.Errorf("%s: refused: %v", tc.name, err)
		case tc.refused != "" && (err == nil || !strings.Contains(err.Error(), tc.refused)):
			t.Errorf("%s: %v, want a refusal naming %q", tc.name, err, tc.refused)
		}
	}
	// Without --management-cluster no Cluster is the management cluster.
	if err := (Policy{}).admit(mc("default", nil), eksaCluster("default", "mgmt", "mgmt")); err == nil || !strings.Contains(err.Error(), "--management-cluster=default/mgmt") {
		t.Errorf("a self-managed Cluster without --management-cluster: %v", err)
	}
}

// An empty selector selects nothing; a selector selects by labels.
func TestSelects(t *testing.T) {
	on := map[string]string{"metrics": "on"}
	for _, tc := range []struct {
		name string
		sel  *metav1.LabelSelector
		want bool
	}{
		{"empty selector", &metav1.LabelSelector{}, false},
		{"matching", &metav1.LabelSelector{MatchLabels: on}, true},
		{"not matching", &metav1.LabelSelector{MatchLabels: map[string]string{"metrics": "off"}}, false},
	} {
		mc := &metricsv1alpha1.MetricsConfig{Spec: metricsv1alpha1.MetricsConfigSpec{ClusterSelector: tc.sel}}
		if got, err := selects(mc, "prod", on); err != nil || got != tc.want {
			t.Errorf("%s: %t, %v; want %t", tc.name, got, err, tc.want)
		}
	}
}

// A tenant's render may put in the management cluster only its Cluster's
// Package and KubeadmControlPlane; anything else (another Cluster's
// Package, a Secret) is refused.
func TestTenantManagementObjects(t *testing.T) {
	obj := func(kind, ns, name string) render.Object {
		return render.Object{Destination: render.Management, Object: map[string]any{"kind": kind, "metadata": map[string]any{"namespace": ns, "name": name}}}
	}
	res := &render.Result{Config: &spec.Config{ClusterName: "w1"}, Objects: []render.Object{
		obj("Package", "eksa-packages-w1", "prometheus"), obj("KubeadmControlPlane", "eksa-system", "w1"),
		{Destination: render.Workload, Object: map[string]any{"kind": "Secret", "metadata": map[string]any{"namespace": "kube-system", "name": "x"}}},
	}}
	if err := tenantManagementObjects(res); err != nil {
		t.Errorf("its own Package and KubeadmControlPlane: %v", err)
	}
	for _, o := range []render.Object{obj("Package", "eksa-packages-w2", "prometheus"), obj("Secret", "eksa-system", "w1-kubeconfig"), obj("KubeadmControlPlane", "eksa-system", "w2")} {
		bad := &render.Result{Config: res.Config, Objects: append(slices.Clone(res.Objects), o)}
		if err := tenantManagementObjects(bad); err == nil || !strings.Contains(err.Error(), o.String()) {
			t.Errorf("%s: %v", o, err)
		}
	}
}
