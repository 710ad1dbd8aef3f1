package e2e

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	metricsv1alpha1 "github.com/eksa-metrics/eksa-metrics/pkg/apis/metrics/v1alpha1"
	"github.com/eksa-metrics/eksa-metrics/pkg/cluster"
	"github.com/eksa-metrics/eksa-metrics/pkg/engine"
	"github.com/eksa-metrics/eksa-metrics/pkg/kubeadm"
	"github.com/eksa-metrics/eksa-metrics/pkg/templates"
	"github.com/eksa-metrics/eksa-metrics/test/framework"
)

// tls.certificates: cert-manager, end to end: the real cert-manager
// controllers issue the proxies' certificates from the Certificates
// eksa-metrics renders, apply's engine publishes cert-manager's CA as the
// bundle, the proxies serve what cert-manager issued, and a real Prometheus
// (through prometheus-operator, and from the plain file) scrapes every target
// with verification on: a proxy's target is up only if its certificate
// chains to that bundle for its Service's name.
func TestPrometheusVerifiesCertManagerCertificates(t *testing.T) {
	ctx := context.Background()
	version := versions[0]
	text := stackSpec(minorOf(version), metricsv1alpha1.ExposureProxy, "    namespace: monitoring\n",
		"  scrapers:\n  - {kind: ServiceAccount, name: prometheus, namespace: monitoring}\n  tls: {certificates: cert-manager}\n")
	r := renderSpec(t, text)
	if !r.Config.CertManager || len(templates.ServedCertificates(r.Config)) != 4 {
		t.Fatalf("the spec does not have cert-manager issue the 4 proxies' certificates: %+v", r.Config)
	}
	ch := r.Change
	c := framework.StartCluster(t, framework.ClusterOptions{
		Version: version, ControlPlaneTaints: controlPlaneTaints, Workers: 1,
		EtcdArgs: ch.Args(kubeadm.Etcd), APIServerArgs: ch.Args(kubeadm.APIServer),
		ControllerManagerArgs: ch.Args(kubeadm.ControllerManager), SchedulerArgs: ch.Args(kubeadm.Scheduler),
		KubeProxyConfig: framework.KubeadmKubeProxyConfig,
	})
	c.StartPrometheusOperator(t)
	c.InstallCRDDir(t, "cert-manager")
	if _, err := c.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: templates.CertManagerNS}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	kubeconfig := c.Kubeconfig(t, "admin", "kubernetes-admin", "system:masters")
	certManager := framework.Start(t, "cert-manager", framework.Binary(t, "cert-manager-controller"), []string{"--kubeconfig", kubeconfig, "--cluster-resource-namespace", templates.CertManagerNS})

	// The scraper exists before eksa-metrics asks for its token, as the
	// monitoring stack creates it.
	sa := r.Config.Scrapers[0]
	c.ServiceAccount(t, sa.Namespace, sa.Name)

	// What apply does: plan, the objects (the Issuers and Certificates among
	// them), then wait for cert-manager and publish the bundle.
	cl, err := cluster.Connect(ctx, "workload", cluster.ConnectOptions{Kubeconfig: kubeconfig})
	if err != nil {
		t.Fatal(err)
	}
	both := &engine.Clusters{Management: cl, Workload: cl}
	steps, err := engine.Plan(ctx, both, r)
	if err != nil {
		t.Fatal(err)
	}
	certSteps, err := engine.PlanCertificates(ctx, both, r)
	if err != nil {
		t.Fatal(err)
	}
	if !cluster.Pending(certSteps) {
		t.Fatalf("nothing waits for cert-manager before the Certificates exist: %v", certSteps)
	}
	if err := engine.Apply(ctx, both, r, steps, engine.ApplyOptions{Certificates: certSteps}); err != nil {
		t.Fatalf("%v\n--- cert-manager\n%s", err, certManager.Tail(40))
	}
	// A workload cluster: every serving certificate is in kube-system, from
	// the CA Issuer there, so the bundle is kube-system's CA.
	if ns := templates.IssuerNamespaces(templates.ServingSecrets(r.Config)); len(ns) != 1 || ns[0] != templates.SystemNS {
		t.Fatalf("serving certificates in %v, want kube-system only", ns)
	}
	ca, err := c.Client.CoreV1().Secrets(templates.SystemNS).Get(ctx, templates.IssuerCA, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	bundle, err := c.Client.CoreV1().ConfigMaps("monitoring").Get(ctx, templates.ServingCA, metav1.GetOptions{})
	if err != nil || bundle.Data[templates.CABundleKey] != string(ca.Data[corev1.TLSCertKey]) {
		t.Fatalf("the bundle is not the CA cert-manager issued: %v", err)
	}

	// The proxies serve what cert-manager wrote into their Secrets.
	proxies := startProxyPods(t, c, r)
	sa = r.Config.Scrapers[0]
	stackIdentity(t, c, sa, kpsClusterRole)
	prometheusObject(t, c, "monitoring", "generic", sa.Name, map[string]any{
		"serviceMonitorSelector": map[string]any{}, "serviceDiscoveryRole": "EndpointSlice",
	})
	worker := c.NodeOf(t, "worker-1")
	cfg := c.OperatorConfig(t, "monitoring", "generic", serviceMonitorJobs(r))
	viaOperator := scrapeAndCheck(t, c, worker, 9091, "cert-manager (operator)", sa, cfg, c.PrometheusMounts(t, "monitoring", "generic", cfg), r)
	main := "global: {scrape_interval: 2s, scrape_timeout: 2s}\nscrape_config_files: [eksa-metrics-scrape-configs.yaml]\n"
	plainFiles := c.PrometheusMounts(t, sa.Namespace, "", "", templates.ServingCA)
	plainFiles["eksa-metrics-scrape-configs.yaml"] = templates.ScrapeConfigFile(r.Config)
	viaFile := scrapeAndCheck(t, c, worker, 9092, "cert-manager (plain file)", sa, main, plainFiles, r)
	t.Logf("cert-manager certificates: %s; %s (%d proxy processes)", viaOperator, viaFile, len(proxies))
}
