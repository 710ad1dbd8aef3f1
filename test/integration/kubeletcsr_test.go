package integration

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"net"
	"net/url"
	"strings"
	"testing"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/eksa-metrics/eksa-metrics/pkg/kubeletcsr"
	"github.com/eksa-metrics/eksa-metrics/test/framework"
)

// The kubelet-serving approver on a real API server (Node,RBAC
// authorization): each request is filed as the kubelet files it, by a
// client acting as the node (system:node:<name>, group system:nodes), so
// the API server, not the test, sets who asked. It approves a node's own
// request for its own names and addresses, and denies, each for its own
// reason: a foreign IP address, a foreign DNS name, a client-auth usage, a
// request a user (not a node) filed, also in another node's name, a subject
// outside system:nodes, a URI name, no name at all (a node's request in
// another node's name the API server refuses itself); it leaves a request of a node that is not
// registered pending, and never reads another signer's request.
func TestKubeletServingApproverOnARealAPIServer(t *testing.T) {
	ctx := context.Background()
	cp := framework.StartControlPlane(t, framework.ControlPlaneOptions{Version: kubeVersion})
	cp.InstallMachines(t)
	// n4 also reports n2's address, as a node's kubelet can in its own
	// status; their Machines list each node's own.
	for _, n := range []struct{ name, ip, claimed string }{{"n1", "198.51.100.11", ""}, {"n2", "198.51.100.12", ""}, {"n4", "198.51.100.14", "198.51.100.12"}} {
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n.name}}
		created, err := cp.Client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		created.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: n.ip}, {Type: corev1.NodeHostName, Address: n.name + ".example.internal"}}
		if n.claimed != "" {
			created.Status.Addresses = append(created.Status.Addresses, corev1.NodeAddress{Type: corev1.NodeExternalIP, Address: n.claimed})
		}
		if _, err := cp.Client.CoreV1().Nodes().UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		framework.SetMachine(t, cp.Dynamic, "c1", "c1-"+n.name, n.name, [2]string{"InternalIP", n.ip}, [2]string{"Hostname", n.name + ".example.internal"})
	}
	as := func(user string, groups ...string) kubernetes.Interface {
		cfg := rest.CopyConfig(cp.Admin)
		cfg.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: append(groups, "system:authenticated")}
		return kubernetes.NewForConfigOrDie(cfg)
	}
	node1 := as("system:node:n1", "system:nodes")
	fileErr := func(client kubernetes.Interface, name, cn string, org []string, dns []string, ips []string, usages ...certificatesv1.KeyUsage) error {
		t.Helper()
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		tmpl := &x509.CertificateRequest{Subject: pkix.Name{CommonName: cn, Organization: org}, DNSNames: dns}
		for _, ip := range ips {
			tmpl.IPAddresses = append(tmpl.IPAddresses, net.ParseIP(ip))
		}
		if name == "uri" {
			tmpl.URIs = []*url.URL{{Scheme: "spiffe", Host: "example.internal", Path: "/n1"}}
		}
		der, err := x509.CreateCertificateRequest(rand.Reader, tmpl, key)
		if err != nil {
			t.Fatal(err)
		}
		if len(usages) == 0 {
			usages = []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageServerAuth}
		}
		signer := certificatesv1.KubeletServingSignerName
		if name == "other-signer" {
			signer = certificatesv1.KubeAPIServerClientKubeletSignerName
			usages = []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth}
		}
		csr := &certificatesv1.CertificateSigningRequest{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: certificatesv1.CertificateSigningRequestSpec{Request: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}), SignerName: signer, Usages: usages}}
		_, err = client.CertificatesV1().CertificateSigningRequests().Create(ctx, csr, metav1.CreateOptions{})
		return err
	}
	file := func(client kubernetes.Interface, name, cn string, org []string, dns []string, ips []string, usages ...certificatesv1.KeyUsage) {
		t.Helper()
		if err := fileErr(client, name, cn, org, dns, ips, usages...); err != nil {
			t.Fatalf("filing %s: %v", name, err)
		}
	}
	nodesOrg := []string{"system:nodes"}
	file(node1, "own", "system:node:n1", nodesOrg, []string{"n1", "n1.example.internal"}, []string{"198.51.100.11"})
	file(node1, "foreign-ip", "system:node:n1", nodesOrg, []string{"n1"}, []string{"198.51.100.12"})
	file(node1, "foreign-dns", "system:node:n1", nodesOrg, []string{"n2.example.internal"}, []string{"198.51.100.11"})
	// The API server itself refuses a node's request in another node's name
	// (NodeRestriction); a user's is the approver's to deny (from-a-user).
	if err := fileErr(node1, "other-node", "system:node:n2", nodesOrg, []string{"n2"}, []string{"198.51.100.12"}); !apierrors.IsForbidden(err) {
		t.Errorf("node n1 filed a request as n2: %v", err)
	}
	file(cp.Client, "user-as-other-node", "system:node:n2", nodesOrg, []string{"n2"}, []string{"198.51.100.12"})
	file(node1, "client-auth", "system:node:n1", nodesOrg, []string{"n1"}, []string{"198.51.100.11"}, certificatesv1.UsageDigitalSignature, certificatesv1.UsageServerAuth, certificatesv1.UsageClientAuth)
	file(node1, "wrong-org", "system:node:n1", []string{"system:masters"}, []string{"n1"}, []string{"198.51.100.11"})
	file(node1, "uri", "system:node:n1", nodesOrg, []string{"n1"}, []string{"198.51.100.11"})
	file(node1, "no-names", "system:node:n1", nodesOrg, nil, nil)
	file(cp.Client, "from-a-user", "system:node:n1", nodesOrg, []string{"n1"}, []string{"198.51.100.11"})
	file(as("system:node:n3", "system:nodes"), "unregistered", "system:node:n3", nodesOrg, []string{"n3"}, []string{"198.51.100.13"})
	file(node1, "other-signer", "system:node:n1", nodesOrg, nil, nil)
	file(as("system:node:n4", "system:nodes"), "claimed-ip", "system:node:n4", nodesOrg, []string{"n4"}, []string{"198.51.100.14", "198.51.100.12"})

	res, err := kubeletcsr.Pass(ctx, cp.Client, machinesOf(cp), kubeletcsr.Policy{})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("approved %v; denied %v; waiting %v", res.Approved, res.Denied, res.Waiting)
	want := map[string]string{
		"own":                "Approved",
		"foreign-ip":         "IP address 198.51.100.12 is listed by Machine c1-n2, not node n1's",
		"foreign-dns":        `DNS name "n2.example.internal" is listed by Machine c1-n2, not node n1's`,
		"user-as-other-node": "not by a node",
		"client-auth":        `usage "client auth" is not one a serving certificate needs`,
		"wrong-org":          `subject O ["system:masters"] is not [system:nodes]`,
		"uri":                "asks for e-mail or URI names",
		"no-names":           "names no DNS name or IP address",
		"from-a-user":        "not by a node",
		"unregistered":       "pending",
		"other-signer":       "pending",
		"claimed-ip":         "IP address 198.51.100.12 is listed by Machine c1-n2, not node n4's",
	}
	for name, w := range want {
		csr, err := cp.Client.CertificatesV1().CertificateSigningRequests().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		got := "pending"
		for _, c := range csr.Status.Conditions {
			switch c.Type {
			case certificatesv1.CertificateApproved:
				got = "Approved"
				if c.Reason != kubeletcsr.ReasonApproved {
					t.Errorf("%s: reason %s", name, c.Reason)
				}
			case certificatesv1.CertificateDenied:
				got = "Denied: " + c.Message
				if c.Reason != kubeletcsr.ReasonDenied {
					t.Errorf("%s: reason %s", name, c.Reason)
				}
			}
		}
		if got != w && !(strings.HasPrefix(got, "Denied: ") && strings.Contains(got, w)) {
			t.Errorf("%s: %s, want %s", name, got, w)
		}
	}
	if len(res.Approved) != 1 || len(res.Denied) != len(want)-3 || len(res.Waiting) != 1 {
		t.Errorf("pass: %d approved, %d denied, %d waiting; want 1, %d, 1", len(res.Approved), len(res.Denied), len(res.Waiting), len(want)-3)
	}
	// A second pass decides nothing again.
	if again, err := kubeletcsr.Pass(ctx, cp.Client, machinesOf(cp), kubeletcsr.Policy{}); err != nil || len(again.Approved)+len(again.Denied) != 0 {
		t.Errorf("second pass: %+v, %v", again, err)
	}
}
