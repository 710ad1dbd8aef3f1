package integration

import (
	"context"
	"crypto/ecdsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	metricsv1alpha1 "github.com/eksa-metrics/eksa-metrics/pkg/apis/metrics/v1alpha1"
	"github.com/eksa-metrics/eksa-metrics/pkg/certs"
	"github.com/eksa-metrics/eksa-metrics/pkg/kubeadm"
	"github.com/eksa-metrics/eksa-metrics/pkg/kubeletcsr"
	"github.com/eksa-metrics/eksa-metrics/pkg/spec"
	"github.com/eksa-metrics/eksa-metrics/test/framework"
)

// The kubelet-serving signer nobody trusts as anything but a kubelet: the
// real kube-controller-manager, run with the signer flags the
// KubeadmControlPlane change renders for tls.kubeletServingCertificates,
// still signs the kubelets' client certificates with the cluster CA and no
// longer signs kubernetes.io/kubelet-serving at all; the approver signs the
// node's own request with the kubelet-serving CA; a request someone else
// approved for a name the checks refuse is signed by nobody; and a client
// that trusts the cluster CA (every kubeconfig, every ServiceAccount
// token's ca.crt) refuses the kubelet's certificate, while one that trusts
// the kubelet-serving CA (the kubelet scrapes) accepts it for the node's
// own address only.
func TestKubeletServingSignerIsTrustedByKubeletScrapesOnly(t *testing.T) {
	ctx := context.Background()
	cp := framework.StartControlPlane(t, framework.ControlPlaneOptions{Version: kubeVersion})

	// kube-controller-manager with kubeadm's flags and the rendered change.
	change := kubeadm.ChangeFor(&spec.Config{ClusterName: "c", CAPIVersion: spec.CAPIv1beta2, KubeletServingCertificates: true,
		Exposure: metricsv1alpha1.ExposureProxy, TLSMinVersion: metricsv1alpha1.TLS12})
	rendered := change.Args(kubeadm.ControllerManager)
	if v, _ := rendered.Get("cluster-signing-cert-file"); v != "" || len(rendered) == 0 {
		t.Fatalf("the rendered change keeps the cluster CA for every signer: %v", rendered)
	}
	kcmConfig := cp.Kubeconfig(t, "kcm-signer", "eksa-metrics-test-kcm", "system:masters")
	paths := map[string]string{kubeadm.PKIDir + "/ca.crt": cp.PKI.CACert, kubeadm.PKIDir + "/ca.key": cp.PKI.CAKey}
	args := framework.Override(cp.KubeadmControllerManagerArgs(kcmConfig), framework.NodePaths(rendered, paths))
	args = framework.Override(args, kubeadm.Args{{Name: "controllers", Value: "csrsigning"}, {Name: "leader-elect", Value: "false"},
		{Name: "secure-port", Value: "0"}, {Name: "use-service-account-credentials", Value: "false"}})
	kcm := framework.Start(t, "kube-controller-manager (signers)", framework.Binary(t, filepath.Join("k8s", cp.Version, "kube-controller-manager")), framework.Args(args))

	// The kubelet-serving CA, as apply makes it (Secret volume files).
	ca, err := certs.NewCA("eksa-metrics-kubelet-serving-ca")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	files := &kubeletcsr.CAFiles{Cert: filepath.Join(dir, "tls.crt"), Key: filepath.Join(dir, "tls.key")}
	for p, b := range map[string][]byte{files.Cert: ca.Cert, files.Key: ca.Key} {
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	kubeletPool, clusterPool := x509.NewCertPool(), x509.NewCertPool()
	kubeletPool.AppendCertsFromPEM(ca.Cert)
	clusterCA, err := os.ReadFile(cp.PKI.CACert)
	if err != nil {
		t.Fatal(err)
	}
	clusterPool.AppendCertsFromPEM(clusterCA)

	n1 := newAttackNode(t, cp, "n1", addr(corev1.NodeInternalIP, "198.51.100.11"), addr(corev1.NodeHostName, "n1"))
	evil := newAttackNode(t, cp, "evil", addr(corev1.NodeInternalIP, "198.51.100.66"), addr(corev1.NodeHostName, "evil"), addr(corev1.NodeExternalIP, "10.96.0.1"))
	cp.InstallMachines(t)
	framework.SetMachine(t, cp.Dynamic, "c1", "c1-n1", "n1", [2]string{"InternalIP", "198.51.100.11"})
	framework.SetMachine(t, cp.Dynamic, "c1", "c1-evil", "evil", [2]string{"InternalIP", "198.51.100.66"})

	// Still signed by kube-controller-manager with the cluster CA: a
	// kubelet's client certificate.
	client, _ := framework.FileRequest(t, n1.client, certificatesv1.KubeAPIServerClientKubeletSignerName, "client", "n1", nil)
	approve(t, cp.Client, client, "a kubelet client certificate, approved as kube-controller-manager's csrapproving would")
	clientCert := waitSigned(t, cp.Client, client, kcm)
	if _, err := clientCert.Verify(x509.VerifyOptions{Roots: clusterPool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Fatalf("kube-controller-manager did not sign the kubelet client certificate with the cluster CA: %v", err)
	}

	// Someone with the approve verb approves evil's request for the
	// kubernetes Service's address before the approver runs:
	// kube-controller-manager must not sign it, nor the approver later.
	stolen := evil.file("approved-elsewhere", []string{"evil"}, "198.51.100.66", "10.96.0.1")
	approve(t, cp.Client, stolen, "approved by hand")

	// The control-plane Node (its label set by kubeadm as an admin, which
	// NodeRestriction forbids a kubelet) and kube-controller-manager's
	// mirror pod there, as the machine before the upgrade ran it.
	if _, err := cp.Client.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "cp", Labels: map[string]string{"node-role.kubernetes.io/control-plane": ""}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cp.ServiceAccount(t, metav1.NamespaceSystem, "default")
	kcmOld, err := cp.Client.CoreV1().Pods(metav1.NamespaceSystem).Create(ctx, kcmPod("kube-controller-manager-cp", "cp", framework.Args(cp.KubeadmControllerManagerArgs(kcmConfig))), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}

	_, services, _ := net.ParseCIDR("10.96.0.0/12")
	var log framework.LockedBuffer
	runCtx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() { cancel(); wg.Wait() }()
	wg.Add(1)
	go func() {
		defer wg.Done()
		a := &kubeletcsr.Approver{Client: cp.Client, Policy: kubeletcsr.Policy{ServiceCIDRs: []*net.IPNet{services}}, Machines: machinesOf(cp), Log: &log, CA: files}
		if err := a.Run(runCtx, 2*time.Second); err != nil {
			t.Errorf("approver: %v", err)
		}
	}()

	// While kube-controller-manager's pod on the control plane still
	// shows kubeadm's generic signer flag (a machine the upgrade has not
	// replaced yet), nothing is approved: the approval would reach it.
	own, key := framework.FileRequest(t, n1.client, certificatesv1.KubeletServingSignerName, "own", "n1", []string{"n1"}, "198.51.100.11")
	framework.WaitFor(t, "the approver holding approvals back", 30*time.Second, func() (bool, error) {
		return strings.Contains(log.String(), "waiting: kube-controller-manager on node cp runs with --cluster-signing-cert-file="), nil
	})
	if d := decision(t, cp.Client, own); d != "pending" {
		t.Fatalf("%s was decided (%s) while kube-controller-manager would sign it with the cluster CA", own, d)
	}
	// A mirror pod that a worker node writes does not count.
	workerPod := kcmPod("kube-controller-manager-n1", "n1", framework.Args(framework.NodePaths(rendered, paths)))
	if _, err := cp.Client.CoreV1().Pods(metav1.NamespaceSystem).Create(ctx, workerPod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * time.Second) // a pass or more (resync 2s)
	if d := decision(t, cp.Client, own); d != "pending" {
		t.Fatalf("%s was decided (%s) on a worker's pod", own, d)
	}
	// The control plane replaced: its pod runs with the rendered flags.
	live, err := cp.Client.CoreV1().Pods(metav1.NamespaceSystem).Get(ctx, kcmOld.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := cp.Client.CoreV1().Pods(metav1.NamespaceSystem).Delete(ctx, live.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
		t.Fatal(err)
	}
	if _, err := cp.Client.CoreV1().Pods(metav1.NamespaceSystem).Create(ctx, kcmPod("kube-controller-manager-cp", "cp", framework.Args(args)), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	leaf := waitSigned(t, cp.Client, own, kcm)
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: kubeletPool, DNSName: "198.51.100.11"}); err != nil {
		t.Fatalf("the node's own certificate does not verify with the kubelet-serving CA: %v", err)
	}
	if !strings.Contains(log.String(), "not signing approved csr=\""+stolen+"\"") {
		t.Errorf("the approver did not say why it leaves %s unsigned:\n%s", stolen, log.String())
	}
	if s := certificateOf(t, cp.Client, stolen); len(s) > 0 {
		t.Fatalf("a request approved elsewhere for the kubernetes Service's address was signed:\n%s", s)
	}

	// The kubelet's certificate, served on loopback as the kubelet serves
	// it, dialled as the node's address.
	served := serveCertificate(t, leaf, key)
	for _, c := range []struct {
		who        string
		roots      *x509.CertPool
		serverName string
		accept     bool
	}{
		{"a client trusting the cluster CA, for the node's address", clusterPool, "198.51.100.11", false},
		{"a client trusting the cluster CA, for the API server's name", clusterPool, "kubernetes.default.svc", false},
		{"a client trusting the cluster CA, for the kubernetes Service's address", clusterPool, "10.96.0.1", false},
		{"a client trusting the cluster CA, for loopback", clusterPool, "127.0.0.1", false},
		{"a kubelet scrape, for the API server's name", kubeletPool, "kubernetes.default.svc", false},
		{"a kubelet scrape, for the node's address", kubeletPool, "198.51.100.11", true},
	} {
		conn, err := tls.Dial("tcp", served, &tls.Config{RootCAs: c.roots, ServerName: c.serverName, MinVersion: tls.VersionTLS12})
		if err == nil {
			conn.Close()
		}
		if (err == nil) != c.accept {
			t.Errorf("%s: accepted %v (%v), want %v", c.who, err == nil, err, c.accept)
		}
	}
}

// serveCertificate serves a certificate and its key on loopback, as a
// kubelet serves its own, until the test ends, and returns the address.
func serveCertificate(t *testing.T, leaf *x509.Certificate, key *ecdsa.PrivateKey) string {
	t.Helper()
	l, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{leaf.Raw}, PrivateKey: key}}, MinVersion: tls.VersionTLS12})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			_ = c.(*tls.Conn).Handshake()
			c.Close()
		}
	}()
	return l.Addr().String()
}

// kcmPod is kube-controller-manager's mirror pod as kubeadm's static pod
// makes it, bound to node.
func kcmPod(name, node string, args []string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: metav1.NamespaceSystem, Labels: map[string]string{"component": "kube-controller-manager", "tier": "control-plane"}},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "kube-controller-manager", Image: "registry.k8s.io/kube-controller-manager:v1.37.0",
			Command: append([]string{"kube-controller-manager"}, args...)}}},
	}
}

func approve(t *testing.T, client kubernetes.Interface, name, why string) {
	t.Helper()
	csr, err := client.CertificatesV1().CertificateSigningRequests().Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	csr.Status.Conditions = append(csr.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
		Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue, Reason: "Test", Message: why})
	if _, err := client.CertificatesV1().CertificateSigningRequests().UpdateApproval(context.Background(), name, csr, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func certificateOf(t *testing.T, client kubernetes.Interface, name string) []byte {
	t.Helper()
	csr, err := client.CertificatesV1().CertificateSigningRequests().Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return csr.Status.Certificate
}

func waitSigned(t *testing.T, client kubernetes.Interface, name string, procs ...*framework.Process) *x509.Certificate {
	t.Helper()
	var leaf *x509.Certificate
	framework.WaitFor(t, "a certificate in "+name, 60*time.Second, func() (bool, error) {
		b := certificateOf(t, client, name)
		if len(b) == 0 {
			return false, nil
		}
		block, _ := pem.Decode(b)
		if block == nil {
			return false, nil
		}
		var err error
		leaf, err = x509.ParseCertificate(block.Bytes)
		return err == nil, err
	}, procs...)
	return leaf
}
