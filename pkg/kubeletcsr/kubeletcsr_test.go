package kubeletcsr

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/eksa-metrics/eksa-metrics/pkg/spec"
)

func TestPolicyNeverApproves(t *testing.T) {
	_, services, _ := net.ParseCIDR("10.96.0.0/12")
	p := Policy{ServiceCIDRs: []*net.IPNet{services}, ControlPlaneEndpoint: "API.Example.Internal.", ServiceIPs: []net.IP{net.ParseIP("172.20.0.1")}}
	for _, d := range []string{"*.kube-system.svc", "*", "node-*.example.internal", "kubernetes", "KUBERNETES.default", "kubernetes.default.svc.cluster.local.",
		"prometheus.monitoring.svc", "x.svc.example.internal", "cluster.local", "n1.cluster.local", "localhost", "a.localhost", "api.example.internal",
		"x\napproved", "-bad.example", strings.Repeat("a", 254)} {
		if p.refuseDNS(d) == "" {
			t.Errorf("DNS name %q is approved", d)
		}
	}
	for _, d := range []string{"n1", "ip-10-0-0-5.ec2.internal", "kubernetes-worker-1", "worker.example.internal", "svc-node-1"} {
		if why := p.refuseDNS(d); why != "" {
			t.Errorf("DNS name %q refused: %s", d, why)
		}
	}
	for _, ip := range []string{"127.0.0.1", "127.8.0.1", "::1", "169.254.169.254", "fe80::1", "0.0.0.0", "::", "224.0.0.1", "10.96.0.1", "10.111.255.254", "172.20.0.1"} {
		if p.refuseIP(net.ParseIP(ip)) == "" {
			t.Errorf("IP address %s is approved", ip)
		}
	}
	for _, ip := range []string{"10.0.0.5", "10.95.255.255", "10.112.0.1", "198.51.100.11", "2001:db8::5"} {
		if why := p.refuseIP(net.ParseIP(ip)); why != "" {
			t.Errorf("IP address %s refused: %s", ip, why)
		}
	}
	if (Policy{ControlPlaneEndpoint: "198.51.100.2"}).refuseIP(net.ParseIP("198.51.100.2")) == "" {
		t.Error("the control-plane endpoint's address is approved")
	}
	if (Policy{ClusterDomain: "corp.internal"}).refuseDNS("x.corp.internal") == "" {
		t.Error("a name in a cluster domain given is approved")
	}
}

func TestAnAddressIsTheOldestMachines(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	machine := func(name, node string, created time.Time, ips ...string) spec.Machine {
		m := spec.Machine{Name: name, Node: node, Created: created.UTC().Format(time.RFC3339)}
		for _, ip := range ips {
			m.Addresses = append(m.Addresses, spec.MachineAddress{Type: "InternalIP", Address: ip})
		}
		return m
	}
	v := vouch([]spec.Machine{
		machine("m-evil", "evil", t0.Add(time.Minute), "198.51.100.66", "198.51.100.12", "198.51.100.13"),
		machine("m-n2", "n2", t0, "198.51.100.12"),
		machine("m-b", "b", t0.Add(2*time.Minute), "198.51.100.13"),
		machine("m-a", "a", t0.Add(2*time.Minute), "198.51.100.14"),
		machine("m-c", "c", t0.Add(2*time.Minute), "198.51.100.14"),
		{Name: "m-hostname", Node: "h", Addresses: []spec.MachineAddress{{Type: "Hostname", Address: "H.example.internal."}, {Type: "InternalIP", Address: "not an ip"}}},
	})
	for a, want := range map[string]string{"198.51.100.12": "m-n2", "198.51.100.66": "m-evil", "198.51.100.13": "m-evil", "198.51.100.14": "m-a", "n2": "m-n2", "h.example.internal": "m-hostname"} {
		if v.owner[a] != want {
			t.Errorf("%s: owner %q, want %q", a, v.owner[a], want)
		}
	}
	if v.byNode["evil"].Name != "m-evil" || v.byNode["nobody"] != nil {
		t.Errorf("Machines by node: %+v", v.byNode)
	}
}

// What the Machines vouch for is what is approved: a Node's own status is
// never read, a name its Machine does not list waits (NotVouched), an
// address another, older, Machine lists is denied.
func TestCheckTrustsTheMachineNotTheNode(t *testing.T) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	request := func(node string, ips ...string) *certificatesv1.CertificateSigningRequest {
		tmpl := &x509.CertificateRequest{Subject: pkix.Name{CommonName: nodePrefix + node, Organization: []string{"system:nodes"}}, DNSNames: []string{node}}
		for _, ip := range ips {
			tmpl.IPAddresses = append(tmpl.IPAddresses, net.ParseIP(ip))
		}
		der, err := x509.CreateCertificateRequest(rand.Reader, tmpl, key)
		if err != nil {
			t.Fatal(err)
		}
		return &certificatesv1.CertificateSigningRequest{Spec: certificatesv1.CertificateSigningRequestSpec{
			SignerName: certificatesv1.KubeletServingSignerName, Username: nodePrefix + node, Groups: []string{"system:nodes", "system:authenticated"},
			Usages:  []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageServerAuth},
			Request: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})}}
	}
	node := func(name string, status ...string) *corev1.Node {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
		for _, a := range status {
			n.Status.Addresses = append(n.Status.Addresses, corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: a})
		}
		return n
	}
	t0 := time.Unix(1_700_000_000, 0).UTC()
	machines := []spec.Machine{
		{Name: "m-n1", Node: "n1", Created: t0.Format(time.RFC3339), Addresses: []spec.MachineAddress{{Type: "InternalIP", Address: "198.51.100.11"}}},
		{Name: "m-n2", Node: "n2", Created: t0.Add(time.Minute).Format(time.RFC3339), Addresses: []spec.MachineAddress{{Type: "InternalIP", Address: "198.51.100.12"}, {Type: "InternalIP", Address: "198.51.100.11"}}},
	}
	for _, c := range []struct {
		name    string
		csr     *certificatesv1.CertificateSigningRequest
		node    *corev1.Node
		wait    bool
		refused string // "" approves
	}{
		{"its Machine's address", request("n1", "198.51.100.11"), node("n1"), false, ""},
		{"its own name only", request("n1"), node("n1"), false, ""},
		{"an address only its Node status reports", request("n1", "198.51.100.50"), node("n1", "198.51.100.50"), true, "not listed"},
		{"no Machine", request("n3", "198.51.100.13"), node("n3", "198.51.100.13"), true, "no Cluster API Machine"},
		{"another Machine's address", request("n1", "198.51.100.12"), node("n1", "198.51.100.12"), false, "listed by Machine m-n2"},
		{"an older Machine's address its own lists too", request("n2", "198.51.100.11"), node("n2"), false, "listed by Machine m-n1"},
		{"the API server's Service address, listed or not", request("n1", "10.96.0.1"), node("n1", "10.96.0.1"), false, "never approved"},
	} {
		err := Check(c.csr, c.node, machines, Policy{ServiceIPs: []net.IP{net.ParseIP("10.96.0.1")}})
		var notYet *NotVouched
		switch {
		case c.refused == "" && err != nil:
			t.Errorf("%s: refused: %v", c.name, err)
		case c.refused != "" && (err == nil || !strings.Contains(err.Error(), c.refused)):
			t.Errorf("%s: %v, want %q", c.name, err, c.refused)
		case err != nil && errors.As(err, &notYet) != c.wait:
			t.Errorf("%s: waits %v, want %v (%v)", c.name, !c.wait, c.wait, err)
		}
	}
}

func TestTrimmedRequestsHoldNoLargeRequest(t *testing.T) {
	big := &certificatesv1.CertificateSigningRequest{Spec: certificatesv1.CertificateSigningRequestSpec{Request: make([]byte, MaxRequestBytes+1)},
		ObjectMeta: metav1.ObjectMeta{ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "x"}}}}
	got := trimRequest(big)
	if got.Spec.Request != nil || got.ManagedFields != nil {
		t.Errorf("a large request is kept: %d bytes", len(got.Spec.Request))
	}
	small := trimRequest(&certificatesv1.CertificateSigningRequest{Spec: certificatesv1.CertificateSigningRequestSpec{Request: []byte("x")}})
	if string(small.Spec.Request) != "x" {
		t.Errorf("a small request is changed: %+v", small)
	}
	n := trimNode(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: map[string]string{"a": "b"}},
		Status: corev1.NodeStatus{Images: []corev1.ContainerImage{{Names: []string{"x"}}}, Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "198.51.100.11"}}}})
	if n.Name != "n1" || len(n.Status.Images) != 0 || n.Labels != nil || len(n.Status.Addresses) != 0 {
		t.Errorf("trimmed Node: %+v", n)
	}
}

// Approvals wait while a control-plane kube-controller-manager would sign
// them with the cluster CA, in either form of the flag, and when none is
// seen; a pod on a worker Node never decides it either way.
func TestClusterCASigning(t *testing.T) {
	nodes := map[string]*corev1.Node{
		"cp":     {ObjectMeta: metav1.ObjectMeta{Name: "cp", Labels: map[string]string{controlPlaneLabel: ""}}},
		"worker": {ObjectMeta: metav1.ObjectMeta{Name: "worker"}},
	}
	pod := func(node string, args ...string) *corev1.Pod {
		return &corev1.Pod{Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Command: append([]string{"kube-controller-manager"}, args...)}}}}
	}
	signing := "--cluster-signing-kubelet-client-cert-file=/etc/kubernetes/pki/ca.crt"
	for _, c := range []struct {
		name string
		pods []*corev1.Pod
		hold bool
	}{
		{"none seen", nil, true},
		{"only a worker's pod", []*corev1.Pod{pod("worker", signing)}, true},
		{"the rendered flags", []*corev1.Pod{pod("cp", "--cluster-signing-cert-file=", signing)}, false},
		{"kubeadm's generic flag", []*corev1.Pod{pod("cp", "--cluster-signing-cert-file=/etc/kubernetes/pki/ca.crt")}, true},
		{"the flag and its value apart", []*corev1.Pod{pod("cp", "--cluster-signing-cert-file", "/etc/kubernetes/pki/ca.crt")}, true},
		{"a serving signer of its own", []*corev1.Pod{pod("cp", "--cluster-signing-kubelet-serving-cert-file=/x.crt")}, true},
		{"one old machine left", []*corev1.Pod{pod("cp", signing), pod("cp", "--cluster-signing-cert-file=/etc/kubernetes/pki/ca.crt")}, true},
		{"a worker's pod does not unblock", []*corev1.Pod{pod("worker", signing), pod("cp", "--cluster-signing-cert-file=/ca.crt")}, true},
	} {
		if got := clusterCASigning(c.pods, nodes); (got != "") != c.hold {
			t.Errorf("%s: %q, want hold %v", c.name, got, c.hold)
		}
	}
}
