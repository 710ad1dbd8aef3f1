package integration

import (
	"context"
	"fmt"
	"maps"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/eksa-metrics/eksa-metrics/pkg/kubeletcsr"
	"github.com/eksa-metrics/eksa-metrics/pkg/spec"
	"github.com/eksa-metrics/eksa-metrics/test/framework"
)

// attackNode is a node's kubelet on the real API server: its own
// credentials (system:node:<name> in system:nodes, so the Node authorizer
// and NodeRestriction judge it), its own Node object, which it registers
// and whose status it writes.
type attackNode struct {
	t      *testing.T
	name   string
	client kubernetes.Interface
}

func newAttackNode(t *testing.T, cp *framework.ControlPlane, name string, addresses ...corev1.NodeAddress) *attackNode {
	t.Helper()
	cfg := rest.CopyConfig(cp.Admin)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: "system:node:" + name, Groups: []string{"system:nodes", "system:authenticated"}}
	n := &attackNode{t: t, name: name, client: kubernetes.NewForConfigOrDie(cfg)}
	ctx := context.Background()
	created, err := n.client.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("node %s registering itself: %v", name, err)
	}
	n.report(created, addresses...)
	return n
}

// report writes addresses into the node's own status, as NodeRestriction
// lets a kubelet.
func (n *attackNode) report(node *corev1.Node, addresses ...corev1.NodeAddress) {
	n.t.Helper()
	ctx := context.Background()
	if node == nil {
		var err error
		if node, err = n.client.CoreV1().Nodes().Get(ctx, n.name, metav1.GetOptions{}); err != nil {
			n.t.Fatal(err)
		}
	}
	node.Status.Addresses = addresses
	if _, err := n.client.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{}); err != nil {
		n.t.Fatalf("node %s writing its own status: %v", n.name, err)
	}
}

// file files a kubelet-serving request for names as the node's kubelet
// does, and returns its name.
func (n *attackNode) file(prefix string, dns []string, ips ...string) string {
	n.t.Helper()
	return framework.FileServingRequest(n.t, n.client, prefix, n.name, dns, ips...)
}

func addr(t corev1.NodeAddressType, a string) corev1.NodeAddress {
	return corev1.NodeAddress{Type: t, Address: a}
}

// decision is a request's outcome: "Approved", "Denied: <message>" or
// "pending".
func decision(t *testing.T, client kubernetes.Interface, name string) string {
	t.Helper()
	csr, err := client.CertificatesV1().CertificateSigningRequests().Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range csr.Status.Conditions {
		switch c.Type {
		case certificatesv1.CertificateApproved:
			return "Approved"
		case certificatesv1.CertificateDenied:
			return "Denied: " + c.Message
		}
	}
	return "pending"
}

// machinesOf is the approver's source for the Machines of Cluster c1, as
// it reads them in a self-managed cluster.
func machinesOf(cp *framework.ControlPlane) kubeletcsr.MachineSource {
	return &kubeletcsr.ClusterMachines{Client: cp.Dynamic, Resource: framework.MachineGVR, Namespace: spec.MachinesNamespace, Cluster: "c1"}
}

// A compromised node on the real API server (Node,RBAC authorization,
// NodeRestriction) writes into its own Node status every name that would
// let a kubelet certificate pass for the API server or a Service, and files
// a request for each; its Machine (written by the infrastructure provider)
// even lists some of them. The approver, running as it runs in the cluster
// (watches, the policy its Deployment is given, the Machines of its
// Cluster), denies every one of them, each with its reason in the
// condition, an event and one escaped log line, while the node's request
// for the names its Machine lists is approved. What only the Node's status
// says, or a Machine of another Cluster, or nothing (a node without a
// Machine), is denied once the grace is over; an address another Machine
// lists is denied at once. A request filed before its Machine lists its
// address is approved when the Machine does. A request larger than any
// kubelet's is denied without being read.
func TestKubeletServingApproverRefusesAnImpersonatingNode(t *testing.T) {
	ctx := context.Background()
	cp := framework.StartControlPlane(t, framework.ControlPlaneOptions{Version: kubeVersion})
	cp.InstallMachines(t)
	const endpoint = "198.51.100.2"
	_, services, _ := net.ParseCIDR("10.96.0.0/12")
	policy := kubeletcsr.Policy{ServiceCIDRs: []*net.IPNet{services}, ControlPlaneEndpoint: endpoint}

	n1 := newAttackNode(t, cp, "n1", addr(corev1.NodeInternalIP, "198.51.100.11"), addr(corev1.NodeHostName, "n1"))
	framework.SetMachine(t, cp.Dynamic, "c1", "c1-n1", "n1", [2]string{"InternalIP", "198.51.100.11"}, [2]string{"Hostname", "n1"})
	claims := []string{"kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local",
		"prometheus.monitoring.svc", "etcd.cluster.local", "localhost", "*.kube-system.svc", "*.example.internal", "cp.example.internal"}
	ips := []string{"10.96.0.1", "10.100.4.2", "127.0.0.1", "169.254.169.254", endpoint, "198.51.100.11", "::1", "fe80::1"}
	addrs := []corev1.NodeAddress{addr(corev1.NodeInternalIP, "198.51.100.66"), addr(corev1.NodeHostName, "evil"), addr(corev1.NodeInternalIP, "198.51.100.77")}
	for _, c := range claims {
		addrs = append(addrs, addr(corev1.NodeInternalDNS, c))
	}
	for _, ip := range ips {
		addrs = append(addrs, addr(corev1.NodeExternalIP, ip))
	}
	evil := newAttackNode(t, cp, "evil", addrs...)
	time.Sleep(1100 * time.Millisecond) // creation times have one-second steps: evil's Machine is the younger
	// What the guest reports may reach its Machine (on vSphere, VMware
	// Tools' addresses): the never-approved names stay refused.
	framework.SetMachine(t, cp.Dynamic, "c1", "c1-evil", "evil", [2]string{"InternalIP", "198.51.100.66"}, [2]string{"Hostname", "evil"},
		[2]string{"InternalDNS", "kubernetes.default.svc"}, [2]string{"ExternalIP", "10.96.0.1"}, [2]string{"ExternalIP", "127.0.0.1"}, [2]string{"ExternalIP", "198.51.100.11"})
	framework.SetMachine(t, cp.Dynamic, "other", "other-evil", "evil", [2]string{"InternalIP", "198.51.100.99"})
	nomachine := newAttackNode(t, cp, "no-machine", addr(corev1.NodeInternalIP, "198.51.100.88"))
	policyWithEndpointName := policy
	policyWithEndpointName.ControlPlaneEndpoint = "cp.example.internal"

	var log framework.LockedBuffer
	recorder, stopEvents := kubeletcsr.NewEvents(cp.Client)
	defer stopEvents()
	// Every approver of this test counts into one registry.
	reg := prometheus.NewRegistry()
	metrics, err := kubeletcsr.NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() { cancel(); wg.Wait() }()
	run := func(p kubeletcsr.Policy) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			a := &kubeletcsr.Approver{Client: cp.Client, Policy: p, Machines: machinesOf(cp), Log: &log, Events: recorder, Metrics: metrics}
			if err := a.Run(runCtx, 5*time.Second); err != nil {
				t.Errorf("approver: %v", err)
			}
		}()
	}
	run(policy)

	want := map[string]string{}
	want[n1.file("own", []string{"n1"}, "198.51.100.11")] = "Approved"
	want[evil.file("own", []string{"evil"}, "198.51.100.66")] = "Approved"
	for _, c := range claims[:len(claims)-1] {
		want[evil.file("dns", []string{"evil", c}, "198.51.100.66")] = "is never approved"
	}
	for _, ip := range ips {
		w := "is never approved"
		if ip == "198.51.100.11" {
			w = "is listed by Machine c1-n1, not node evil's"
		}
		want[evil.file("ip", []string{"evil"}, "198.51.100.66", ip)] = w
	}
	// More names than a kubelet asks for.
	many := []string{"evil"}
	for i := range kubeletcsr.MaxNames {
		many = append(many, fmt.Sprintf("evil-%d", i))
	}
	want[evil.file("many", many, "198.51.100.66")] = "more than a kubelet asks for"
	// A request larger than any kubelet's, not parsed: about 40 KiB of names.
	var big []string
	for i := range 2000 {
		big = append(big, fmt.Sprintf("evil-%04d.example.internal", i))
	}
	want[evil.file("big", big, "198.51.100.66")] = "not read"
	// A name that would start a line of its own in a log.
	want[evil.file("log", []string{"evil", "x\napproved kube-apiserver-impersonation"}, "198.51.100.66")] = "is never approved"
	// Waiting for a Machine to vouch: what only the Node's status says, a
	// Machine of another Cluster, no Machine at all.
	waiting := map[string]string{
		evil.file("status-only", []string{"evil"}, "198.51.100.77"):    "not listed in the status.addresses of Machine c1-evil",
		evil.file("other-cluster", []string{"evil"}, "198.51.100.99"):  "not listed in the status.addresses of Machine c1-evil",
		nomachine.file("own", []string{"no-machine"}, "198.51.100.88"): "no Cluster API Machine has node no-machine",
	}
	// Filed before the Machine lists the address: approved once it does.
	later := n1.file("later", []string{"n1"}, "198.51.100.11", "198.51.100.21")

	for name, w := range want {
		framework.WaitFor(t, "a decision on "+name, 60*time.Second, func() (bool, error) {
			got := decision(t, cp.Client, name)
			if got == "pending" {
				return false, nil
			}
			if got == w || (strings.HasPrefix(got, "Denied: ") && w != "Approved" && strings.Contains(got, w)) {
				t.Logf("%s: %s", name, got)
				return true, nil
			}
			return false, fmt.Errorf("%s: %s, want %s", name, got, w)
		})
	}
	for name := range waiting {
		if got := decision(t, cp.Client, name); got != "pending" {
			t.Errorf("%s, which the Machines do not vouch for yet: %s, want pending", name, got)
		}
	}
	if got := decision(t, cp.Client, later); got != "pending" {
		t.Errorf("%s before its Machine lists its address: %s", later, got)
	}
	framework.SetMachine(t, cp.Dynamic, "c1", "c1-n1", "n1", [2]string{"InternalIP", "198.51.100.11"}, [2]string{"Hostname", "n1"}, [2]string{"InternalIP", "198.51.100.21"})
	framework.WaitFor(t, later+" approved once its Machine lists its address", 30*time.Second, func() (bool, error) {
		got := decision(t, cp.Client, later)
		if strings.HasPrefix(got, "Denied") {
			return false, fmt.Errorf("%s", got)
		}
		return got == "Approved", nil
	})
	// A decision is counted just after it is written: wait for the counts
	// to reach what the API server shows before the approver is stopped
	// (a write in flight at the stop lands uncounted).
	approved := 1 // later
	for _, w := range want {
		if w == "Approved" {
			approved++
		}
	}
	refused := len(want) - (approved - 1) - 1 // all but the approved and the size attack
	waitCount(t, reg, "approved/", approved)
	waitCount(t, reg, "denied/refused", refused)
	cancel()
	wg.Wait()

	// The grace over: denied, with the reason.
	if _, err := (&kubeletcsr.Approver{Client: cp.Client, Machines: machinesOf(cp), Grace: time.Nanosecond, Log: &log, Metrics: metrics}).Pass(ctx); err != nil {
		t.Fatal(err)
	}
	for name, w := range waiting {
		if got := decision(t, cp.Client, name); !strings.HasPrefix(got, "Denied: ") || !strings.Contains(got, w) {
			t.Errorf("%s after the grace: %s, want denied: %s", name, got, w)
		}
	}

	// The control-plane endpoint given as a name.
	runCtx, cancel = context.WithCancel(ctx)
	run(policyWithEndpointName)
	name := evil.file("endpoint-name", []string{"evil", "cp.example.internal"}, "198.51.100.66")
	framework.WaitFor(t, "the endpoint's name refused", 60*time.Second, func() (bool, error) {
		got := decision(t, cp.Client, name)
		return strings.Contains(got, "the cluster's control-plane endpoint"), nil
	})
	waitCount(t, reg, "denied/refused", refused+1)
	cancel()
	wg.Wait()

	// A count per decision, by cause: the size attack unread, the three
	// that waited for a Machine unvouched, every other denial refused.
	wantCounts := map[string]float64{
		"approved/": float64(approved), "signed/": 0,
		"denied/size": 1, "denied/unvouched": float64(len(waiting)), "denied/refused": float64(refused + 1), // + the endpoint's name
	}
	if got := decisionCounts(t, reg); !maps.Equal(got, wantCounts) {
		t.Errorf("eksa_metrics_kubelet_serving_decisions_total %v, want %v", got, wantCounts)
	}

	// No line of the log starts with a decision it did not make.
	for _, l := range strings.Split(log.String(), "\n") {
		if strings.HasPrefix(l, "approved kube-apiserver") || (l != "" && !strings.HasPrefix(l, "approved csr=") && !strings.HasPrefix(l, "denied csr=") && !strings.HasPrefix(l, "approving ") && !strings.HasPrefix(l, "error: ")) {
			t.Errorf("a log line the approver did not write as such: %q", l)
		}
	}
	// An event per decision, in the default namespace.
	framework.WaitFor(t, "an event on every request decided", 30*time.Second, func() (bool, error) {
		list, err := cp.Client.EventsV1().Events(metav1.NamespaceDefault).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		seen := map[string]bool{}
		for _, e := range list.Items {
			if e.ReportingController == kubeletcsr.Component && e.Regarding.Kind == "CertificateSigningRequest" {
				seen[e.Regarding.Name] = true
			}
		}
		for n := range want {
			if !seen[n] {
				return false, nil
			}
		}
		return true, nil
	})
}

// The older Machine keeps its address: a node whose (younger) Machine
// lists it too is denied it, and the older Machine's node's later requests
// (a renewal) are approved; what a node writes in its own status changes
// nothing for anyone.
func TestKubeletServingApproverKeepsAnAddressWithItsOlderMachine(t *testing.T) {
	cp := framework.StartControlPlane(t, framework.ControlPlaneOptions{Version: kubeVersion})
	cp.InstallMachines(t)
	n2 := newAttackNode(t, cp, "n2")
	framework.SetMachine(t, cp.Dynamic, "c1", "c1-n2", "n2", [2]string{"InternalIP", "198.51.100.12"})
	time.Sleep(1100 * time.Millisecond)
	evil := newAttackNode(t, cp, "evil", addr(corev1.NodeInternalIP, "198.51.100.66"), addr(corev1.NodeExternalIP, "198.51.100.12"))
	framework.SetMachine(t, cp.Dynamic, "c1", "c1-evil", "evil", [2]string{"InternalIP", "198.51.100.66"}, [2]string{"ExternalIP", "198.51.100.12"})
	claim := evil.file("claim", []string{"evil"}, "198.51.100.66", "198.51.100.12")
	own := n2.file("own", []string{"n2"}, "198.51.100.12")
	if _, err := kubeletcsr.Pass(context.Background(), cp.Client, machinesOf(cp), kubeletcsr.Policy{}); err != nil {
		t.Fatal(err)
	}
	renewal := n2.file("renewal", []string{"n2"}, "198.51.100.12")
	if _, err := kubeletcsr.Pass(context.Background(), cp.Client, machinesOf(cp), kubeletcsr.Policy{}); err != nil {
		t.Fatal(err)
	}
	for name, w := range map[string]string{claim: "is listed by Machine c1-n2, not node evil's", own: "Approved", renewal: "Approved"} {
		if got := decision(t, cp.Client, name); got != w && !(w != "Approved" && strings.Contains(got, w)) {
			t.Errorf("%s: %s, want %s", name, got, w)
		}
	}
}

// decisionCounts are eksa_metrics_kubelet_serving_decisions_total's
// values in reg, by "decision/cause".
func decisionCounts(t *testing.T, reg *prometheus.Registry) map[string]float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, f := range families {
		if f.GetName() != "eksa_metrics_kubelet_serving_decisions_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			l := map[string]string{}
			for _, p := range m.GetLabel() {
				l[p.GetName()] = p.GetValue()
			}
			out[l["decision"]+"/"+l["cause"]] = m.GetCounter().GetValue()
		}
	}
	return out
}

// waitCount waits until decisionCounts(reg)[key] is n.
func waitCount(t *testing.T, reg *prometheus.Registry, key string, n int) {
	t.Helper()
	framework.WaitFor(t, fmt.Sprintf("%d decisions %s counted", n, key), 30*time.Second, func() (bool, error) {
		got := decisionCounts(t, reg)[key]
		return got == float64(n), fmt.Errorf("%v counted", got)
	})
}
