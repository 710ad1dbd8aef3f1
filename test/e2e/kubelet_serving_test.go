package e2e

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	metricsv1alpha1 "github.com/eksa-metrics/eksa-metrics/pkg/apis/metrics/v1alpha1"
	"github.com/eksa-metrics/eksa-metrics/pkg/kubeadm"
	"github.com/eksa-metrics/eksa-metrics/pkg/kubeletcsr"
	"github.com/eksa-metrics/eksa-metrics/pkg/templates"
	"github.com/eksa-metrics/eksa-metrics/test/framework"
)

// approverImage stands for the image make image builds: its binary is the
// one the approver's pod runs here.
const approverImage = "registry.example.com/eksa-metrics:v0.0.0-e2e"

// TestKubeletServingCertificates: with tls.kubeletServingCertificates, the
// real kubelets of the hollow nodes run with serverTLSBootstrap (what
// cluster.yaml gives them), file kubelet-serving requests and serve nothing
// until one is approved; the rendered approver Deployment, run from the
// image's binary with its own ServiceAccount, approves each node's own
// request and denies a node's request for another node's address, and
// signs the approved ones with the kubelet-serving CA apply created
// (kube-controller-manager, run with the rendered signer flags, signs
// none); no kubelet certificate verifies with the cluster CA; and a real
// Prometheus scrapes every kubelet with verification on, through the
// ServiceMonitors and through the plain file.
func TestKubeletServingCertificates(t *testing.T) {
	version := versions[len(versions)-1]
	minor := minorOf(version)
	text := stackSpec(minor, metricsv1alpha1.ExposureProxy, "    namespace: monitoring\n",
		"  scrapers:\n  - {kind: ServiceAccount, name: prometheus, namespace: monitoring}\n"+
			"  components: {kubeAPIServer: {enabled: false}, kubeControllerManager: {enabled: false}, kubeScheduler: {enabled: false}, etcd: {enabled: false}, kubeProxy: {enabled: false}}\n"+
			"  tls: {kubeletServingCertificates: true}\n"+
			"  images: {eksaMetrics: "+approverImage+"}\n")
	r := renderSpec(t, text)
	if !strings.Contains(string(r.ClusterYAML), "serverTLSBootstrap: true") {
		t.Fatalf("cluster.yaml does not give the kubelets serverTLSBootstrap:\n%s", r.ClusterYAML)
	}
	file := templates.ScrapeConfigFile(r.Config)
	if strings.Contains(file, "insecure_skip_verify") {
		t.Fatalf("the kubelet jobs skip verification:\n%s", file)
	}
	approverBin := framework.Binary(t, "image/linux-"+runtime.GOARCH+"/eksa-metrics")

	// kube-controller-manager runs with the signer flags the
	// KubeadmControlPlane change gives it: it signs no kubelet-serving
	// request, the approver does, with the kubelet-serving CA.
	c := framework.StartCluster(t, framework.ClusterOptions{Version: version, ControlPlaneTaints: controlPlaneTaints, Workers: 2, KubeletServerTLSBootstrap: true,
		ControllerManagerArgs: r.Change.Args(kubeadm.ControllerManager)})
	ctx := context.Background()
	caPool := x509.NewCertPool()
	ca, err := os.ReadFile(c.PKI.CACert)
	if err != nil {
		t.Fatal(err)
	}
	caPool.AppendCertsFromPEM(ca)

	// Before the approver: one pending request per node, and no kubelet
	// completes a TLS handshake (it has no certificate to serve).
	framework.WaitFor(t, "a pending kubelet-serving request from every node", 60*time.Second, func() (bool, error) {
		nodes, err := servingRequests(ctx, c.Client, false)
		return len(nodes) == len(c.Nodes), err
	})
	for _, n := range c.Nodes {
		if _, err := kubeletCertificate(n.Host.IP, caPool); err == nil {
			t.Fatalf("kubelet@%s served a verified certificate before any request was approved", n.Name)
		}
	}
	// A node asking for another node's address.
	worker1, worker2 := c.NodeOf(t, "worker-1"), c.NodeOf(t, "worker-2")
	forged := forgeServingRequest(t, c, worker1.Name, worker2.Host.IP)
	// The Cluster API Machines that vouch for the nodes, as the
	// infrastructure provider writes them (the host's address; the test
	// bed's hostname, which the provider would know, is read off the Node):
	// worker-2's lists no address yet.
	c.InstallMachines(t)
	setMachine := func(n *framework.Node, withAddresses bool) {
		t.Helper()
		var addrs [][2]string
		if withAddresses {
			addrs = append(addrs, [2]string{"InternalIP", n.Host.IP})
			node, err := c.Client.CoreV1().Nodes().Get(ctx, n.Name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			for _, a := range node.Status.Addresses {
				if a.Type == corev1.NodeHostName {
					addrs = append(addrs, [2]string{"Hostname", a.Address})
				}
			}
		}
		framework.SetMachine(t, c.Dynamic, r.Config.ClusterName, r.Config.ClusterName+"-"+n.Name, n.Name, addrs...)
	}
	for _, n := range c.Nodes {
		setMachine(n, n != worker2)
	}

	c.StartPrometheusOperator(t) // its CRDs: the ServiceMonitors and rules are applied with the rest
	apply(t, c.ControlPlane, r)
	repo, _, _ := strings.Cut(approverImage, ":")
	pods := c.RunningPods(t, templates.SystemNS, templates.NameLabel+"="+templates.KubeletApprover, 1)
	if strings.HasPrefix(pods[0].Spec.NodeName, "worker") {
		t.Errorf("the approver runs on %s, not on the control plane", pods[0].Spec.NodeName)
	}
	c.RunPods(t, pods, framework.Images{repo: approverBin})

	framework.WaitFor(t, "the request of every node whose Machine lists its address approved and signed", 90*time.Second, func() (bool, error) {
		nodes, err := servingRequests(ctx, c.Client, true)
		return len(nodes) == len(c.Nodes)-1 && !slices.Contains(nodes, worker2.Name), err
	})
	// worker-2's is approved once its Machine lists its address.
	setMachine(worker2, true)
	framework.WaitFor(t, "worker-2's request approved once its Machine lists its address", 30*time.Second, func() (bool, error) {
		nodes, err := servingRequests(ctx, c.Client, true)
		return len(nodes) == len(c.Nodes), err
	})
	framework.WaitFor(t, "the forged request denied", 30*time.Second, func() (bool, error) {
		csr, err := c.Client.CertificatesV1().CertificateSigningRequests().Get(ctx, forged, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, cond := range csr.Status.Conditions {
			switch {
			case cond.Type == certificatesv1.CertificateApproved:
				return false, fmt.Errorf("the forged request was approved")
			case cond.Type == certificatesv1.CertificateDenied && cond.Reason == kubeletcsr.ReasonDenied && strings.Contains(cond.Message, worker2.Host.IP):
				t.Logf("forged request %s: Denied: %s", forged, cond.Message)
				return true, nil
			}
		}
		return false, nil
	})
	// Its ServiceAccount may write the event on each decision (a Role in
	// default, where events on a cluster-scoped request go).
	framework.WaitFor(t, "the approver's events on its decisions", 30*time.Second, func() (bool, error) {
		list, err := c.Client.EventsV1().Events(metav1.NamespaceDefault).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		n := 0
		for _, e := range list.Items {
			if e.ReportingController == kubeletcsr.Component && e.Regarding.Kind == "CertificateSigningRequest" {
				n++
			}
		}
		return n >= len(c.Nodes)+1, nil
	})
	// What the scrapers trust for a kubelet: the kubelet-serving CA apply
	// created (its certificate, published apart in the bundle ConfigMap).
	bundle, err := c.Client.CoreV1().ConfigMaps("monitoring").Get(ctx, templates.ServingCA, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	kubeletPool := x509.NewCertPool()
	if !kubeletPool.AppendCertsFromPEM([]byte(bundle.Data[templates.KubeletCAKey])) {
		t.Fatalf("ConfigMap monitoring/%s holds no kubelet-serving CA under %s: %v", templates.ServingCA, templates.KubeletCAKey, bundle.Data)
	}
	for _, n := range c.Nodes {
		var cert *x509.Certificate
		framework.WaitFor(t, "kubelet@"+n.Name+" serving a certificate of the kubelet-serving CA", 60*time.Second, func() (bool, error) {
			cert, err = kubeletCertificate(n.Host.IP, kubeletPool)
			return err == nil, nil
		})
		// Whatever was approved, no client that trusts the cluster CA
		// (kubeconfigs, ServiceAccount tokens' ca.crt) accepts it.
		if _, err := kubeletCertificate(n.Host.IP, caPool); err == nil {
			t.Errorf("kubelet@%s serves a certificate a client trusting the cluster CA accepts", n.Name)
		}
		t.Logf("kubelet@%s serves %q (IP SANs %v), verified with the kubelet-serving CA and refused with the cluster CA", n.Name, cert.Subject.CommonName, cert.IPAddresses)
	}

	// A real Prometheus, verification on, both forms.
	sa := r.Config.Scrapers[0]
	stackIdentity(t, c, sa, kpsClusterRole)
	prometheusObject(t, c, "monitoring", "kubelet-tls", sa.Name, map[string]any{"serviceMonitorSelector": map[string]any{}, "serviceDiscoveryRole": "EndpointSlice"})
	cfg := c.OperatorConfig(t, "monitoring", "kubelet-tls", serviceMonitorJobs(r))
	if strings.Contains(cfg, "insecure_skip_verify: true") {
		t.Errorf("prometheus-operator's configuration skips verification")
	}
	viaOperator := scrapeAndCheck(t, c, worker1, 9093, "kubelet verified (operator)", sa, cfg, c.PrometheusMounts(t, "monitoring", "kubelet-tls", cfg), r)
	main := "global: {scrape_interval: 2s, scrape_timeout: 2s}\nscrape_config_files: [eksa-metrics-scrape-configs.yaml]\n"
	plain := c.PrometheusMounts(t, sa.Namespace, "", "", templates.ServingCA)
	plain["eksa-metrics-scrape-configs.yaml"] = file
	viaFile := scrapeAndCheck(t, c, worker1, 9094, "kubelet verified (plain file)", sa, main, plain, r)
	t.Logf("%s; %s", viaOperator, viaFile)

	// The approver's own metrics, scraped verified (the certificate it
	// issues itself with the kubelet-serving CA, for its Service's name):
	// a count per decision, and nothing held or waiting once every node
	// has its certificate.
	p := c.StartPrometheus(t, worker1, 9095, sa.Namespace, sa.Name, main, plain)
	defer p.Proc.Stop()
	for _, q := range []string{
		fmt.Sprintf(`eksa_metrics_kubelet_serving_decisions_total{job=%q,decision="signed"} >= %d`, templates.KubeletApproverComponent, len(c.Nodes)),
		fmt.Sprintf(`eksa_metrics_kubelet_serving_decisions_total{job=%q,decision="approved"} >= %d`, templates.KubeletApproverComponent, len(c.Nodes)),
		fmt.Sprintf(`eksa_metrics_kubelet_serving_decisions_total{job=%q,decision="denied",cause="refused"} >= 1`, templates.KubeletApproverComponent),
		fmt.Sprintf(`eksa_metrics_kubelet_serving_approvals_held{job=%q} == 0`, templates.KubeletApproverComponent),
		fmt.Sprintf(`eksa_metrics_kubelet_serving_waiting_requests{job=%q} == 0`, templates.KubeletApproverComponent),
	} {
		p.WaitQuery(t, "the approver's metrics", 60*time.Second, q, func(res []map[string]string) bool { return len(res) == 1 })
	}
	t.Logf("the approver's metrics, scraped verified: every node's request approved and signed, the forged one denied (refused), nothing held or waiting")

	// eksa-metrics verify: each kubelet's certificate chains to the
	// kubelet-serving CA for its address before the token is sent.
	specPath := filepath.Join(t.TempDir(), "kubelet-tls.yaml")
	writeFile(t, specPath, text)
	vr := verifier{t: t, kubeconfig: c.Kubeconfig(t, "admin", "kubernetes-admin", "system:masters"), spec: specPath}
	v := vr.until("every kubelet row passing", func(v verifyRun) bool { return v.code == 0 })
	rows := v.rows("kubelet")
	if len(rows) != len(c.Nodes) {
		t.Fatalf("%d kubelet rows, want %d", len(rows), len(c.Nodes))
	}
	for _, row := range rows {
		if !row.Pass() || row.TLS != "kubelet-serving CA" {
			t.Errorf("verify %s: pass=%t tls=%q %v", row.Target, row.Pass(), row.TLS, row.Problems)
		}
	}
	t.Logf("verify: %d kubelet rows pass with TLS %q", len(rows), rows[0].TLS)
	approver := v.rows(templates.KubeletApproverComponent)
	if len(approver) != 1 || !approver[0].Pass() || approver[0].TLS != "kubelet-serving CA" {
		t.Fatalf("verify: the approver's metrics rows %+v, want one passing with TLS %q", approver, "kubelet-serving CA")
	}
	t.Logf("verify: %s passes with TLS %q (the scraper served, the unbound identity refused)", approver[0].Target, approver[0].TLS)
}

// servingRequests are the nodes whose kubelet-serving requests are pending
// (signed false) or approved and signed (signed true).
func servingRequests(ctx context.Context, client kubernetes.Interface, signed bool) ([]string, error) {
	list, err := client.CertificatesV1().CertificateSigningRequests().List(ctx, metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("spec.signerName", certificatesv1.KubeletServingSignerName).String()})
	if err != nil {
		return nil, err
	}
	var nodes []string
	for _, csr := range list.Items {
		node := kubeletcsr.NodeOf(&csr)
		approved := slices.ContainsFunc(csr.Status.Conditions, func(c certificatesv1.CertificateSigningRequestCondition) bool {
			return c.Type == certificatesv1.CertificateApproved && c.Status == corev1.ConditionTrue
		})
		decided := approved || slices.ContainsFunc(csr.Status.Conditions, func(c certificatesv1.CertificateSigningRequestCondition) bool {
			return c.Type == certificatesv1.CertificateDenied
		})
		ok := !decided
		if signed {
			ok = approved && len(csr.Status.Certificate) > 0
		}
		if node != "" && ok && !slices.Contains(nodes, node) {
			nodes = append(nodes, node)
		}
	}
	return nodes, nil
}

// kubeletCertificate is the certificate the kubelet at ip serves, verified
// with the cluster CA for its address.
func kubeletCertificate(ip string, roots *x509.CertPool) (*x509.Certificate, error) {
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 3 * time.Second}, "tcp", net.JoinHostPort(ip, "10250"), &tls.Config{RootCAs: roots, ServerName: ip, MinVersion: tls.VersionTLS12})
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	return conn.ConnectionState().PeerCertificates[0], nil
}

// forgeServingRequest files, as node's kubelet, a serving request that
// names address, which is not the node's.
func forgeServingRequest(t *testing.T, c *framework.Cluster, node, address string) string {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", c.Kubeconfig(t, "forger-"+node, "system:node:"+node, "system:nodes"))
	if err != nil {
		t.Fatal(err)
	}
	return framework.FileServingRequest(t, kubernetes.NewForConfigOrDie(cfg), "forged-serving", node, nil, address)
}
