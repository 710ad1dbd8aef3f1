// Package kubeletcsr approves the serving-certificate requests of kubelets
// that run with serverTLSBootstrap: true, and nothing else.
//
// A kubelet with serverTLSBootstrap files a CertificateSigningRequest for
// the signer kubernetes.io/kubelet-serving and serves the certificate
// kube-controller-manager signs with the cluster CA once the request is
// approved; kube-controller-manager approves no such request itself
// (its csrapproving controller approves kubelet client certificates only:
// kubernetes pkg/controller/certificates/approver/sarapprove.go). The checks
// follow OpenShift's cluster-machine-approver for serving requests
// (openshift/cluster-machine-approver pkg/controller/csr_check.go,
// validateCSRContents and authorizeServingCertWithMachine): the request was
// filed by the node itself (user system:node:<name>, group system:nodes),
// its subject is that node, it asks for server auth and nothing a server
// certificate does not need, and each of its names and addresses is one the
// live Node object reports. OpenShift reads the addresses from the Machine
// instead, which the node cannot write; a Node's status addresses are the
// kubelet's own report.
package kubeletcsr

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"io"
	"net"
	"slices"
	"strings"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// Reason is the reason of the Approved or Denied condition eksa-metrics
// writes.
const (
	ReasonApproved = "EksaMetricsKubeletServing"
	ReasonDenied   = "EksaMetricsKubeletServingRefused"
)

const nodePrefix = "system:node:"

// allowedUsages are what a kubelet's serving certificate may carry
// (client-go's certificate manager asks for digital signature and server
// auth, plus key encipherment for an RSA key).
var allowedUsages = []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageKeyEncipherment, certificatesv1.UsageServerAuth}

// NodeOf names the node a request says it comes from (its requester,
// system:node:<name>), "" when a node did not file it.
func NodeOf(csr *certificatesv1.CertificateSigningRequest) string {
	if !strings.HasPrefix(csr.Spec.Username, nodePrefix) || !slices.Contains(csr.Spec.Groups, "system:nodes") {
		return ""
	}
	return strings.TrimPrefix(csr.Spec.Username, nodePrefix)
}

// Check says why a kubelet-serving request must not be approved for the
// live Node that filed it (nil: approve). node is the Node named by the
// request's requester (NodeOf).
func Check(csr *certificatesv1.CertificateSigningRequest, node *corev1.Node) error {
	_, err := check(csr, node)
	return err
}

// check is Check, with the request it parsed.
func check(csr *certificatesv1.CertificateSigningRequest, node *corev1.Node) (*x509.CertificateRequest, error) {
	if csr.Spec.SignerName != certificatesv1.KubeletServingSignerName {
		return nil, fmt.Errorf("signer %s, not %s", csr.Spec.SignerName, certificatesv1.KubeletServingSignerName)
	}
	name := NodeOf(csr)
	if name == "" {
		return nil, fmt.Errorf("filed by %s (groups %v), not by a node (system:node:<name> in group system:nodes)", csr.Spec.Username, csr.Spec.Groups)
	}
	if node == nil || node.Name != name {
		return nil, fmt.Errorf("filed by node %s, which does not exist", name)
	}
	block, _ := pem.Decode(csr.Spec.Request)
	if block == nil || block.Type != "CERTIFICATE REQUEST" {
		return nil, fmt.Errorf("spec.request holds no PEM CERTIFICATE REQUEST")
	}
	req, err := x509.ParseCertificateRequest(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("spec.request does not parse: %w", err)
	}
	if err := req.CheckSignature(); err != nil {
		return nil, fmt.Errorf("spec.request is not signed by its own key: %w", err)
	}
	if req.Subject.CommonName != csr.Spec.Username {
		return nil, fmt.Errorf("subject CN %q is not its requester %s", req.Subject.CommonName, csr.Spec.Username)
	}
	if !slices.Equal(req.Subject.Organization, []string{"system:nodes"}) {
		return nil, fmt.Errorf("subject O %v is not [system:nodes]", req.Subject.Organization)
	}
	if !slices.Contains(csr.Spec.Usages, certificatesv1.UsageServerAuth) {
		return nil, fmt.Errorf("usages %v lack server auth", csr.Spec.Usages)
	}
	for _, u := range csr.Spec.Usages {
		if !slices.Contains(allowedUsages, u) {
			return nil, fmt.Errorf("usage %q is not one a serving certificate needs (%v)", u, allowedUsages)
		}
	}
	if len(req.EmailAddresses) > 0 || len(req.URIs) > 0 {
		return nil, fmt.Errorf("asks for e-mail or URI names (%v %v), which a kubelet's serving certificate never holds", req.EmailAddresses, req.URIs)
	}
	if len(req.DNSNames) == 0 && len(req.IPAddresses) == 0 {
		return nil, fmt.Errorf("names no DNS name or IP address")
	}
	dns, ips := addresses(node)
	for _, d := range req.DNSNames {
		if !slices.Contains(dns, dnsKey(d)) {
			return nil, fmt.Errorf("DNS name %s is not a name of node %s (%v)", d, name, dns)
		}
	}
	for _, ip := range req.IPAddresses {
		if !slices.ContainsFunc(ips, ip.Equal) {
			return nil, fmt.Errorf("IP address %s is not an address of node %s (%v)", ip, name, ips)
		}
	}
	return req, nil
}

// addresses are the DNS names (its own name first, in dnsKey form) and the
// IP addresses a Node reports.
func addresses(node *corev1.Node) (dns []string, ips []net.IP) {
	dns = []string{dnsKey(node.Name)}
	for _, a := range node.Status.Addresses {
		switch a.Type {
		case corev1.NodeHostName, corev1.NodeInternalDNS, corev1.NodeExternalDNS:
			dns = append(dns, dnsKey(a.Address))
		case corev1.NodeInternalIP, corev1.NodeExternalIP:
			if ip := net.ParseIP(a.Address); ip != nil {
				ips = append(ips, ip)
			}
		}
	}
	return dns, ips
}

// dnsKey is a DNS name as compared: lower case, without a final dot.
func dnsKey(name string) string { return strings.ToLower(strings.TrimSuffix(name, ".")) }

// Result is what one pass decided.
type Result struct {
	Approved, Denied []string
	// Waiting are requests left pending: their node is not registered yet.
	Waiting []string
}

// Pass decides every pending kubelet-serving request once: approves those
// that pass Check and name nothing another Node reports too, denies the
// others (a denied request is final; the kubelet files a new one), and
// leaves pending those whose node does not exist yet. Requests of other
// signers are never read.
func Pass(ctx context.Context, client kubernetes.Interface) (Result, error) {
	list, err := client.CertificatesV1().CertificateSigningRequests().List(ctx, metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("spec.signerName", certificatesv1.KubeletServingSignerName).String()})
	if err != nil {
		return Result{}, fmt.Errorf("listing the %s CertificateSigningRequests: %w", certificatesv1.KubeletServingSignerName, err)
	}
	nodes, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return Result{}, fmt.Errorf("listing the Nodes: %w", err)
	}
	csrs := make([]*certificatesv1.CertificateSigningRequest, len(list.Items))
	for i := range list.Items {
		csrs[i] = &list.Items[i]
	}
	ns := make([]*corev1.Node, len(nodes.Items))
	for i := range nodes.Items {
		ns[i] = &nodes.Items[i]
	}
	return decide(ctx, client, csrs, ns)
}

// decide decides the pending requests among csrs against nodes, every Node
// of the cluster, and writes each decision.
func decide(ctx context.Context, client kubernetes.Interface, csrs []*certificatesv1.CertificateSigningRequest, nodes []*corev1.Node) (Result, error) {
	var res Result
	byName, owners := map[string]*corev1.Node{}, map[string][]string{}
	for _, n := range nodes {
		byName[n.Name] = n
		dns, ips := addresses(n)
		for _, ip := range ips {
			dns = append(dns, ip.String())
		}
		for _, a := range dns {
			owners[a] = append(owners[a], n.Name)
		}
	}
	for _, csr := range csrs {
		if decided(csr) {
			continue
		}
		var node *corev1.Node
		if name := NodeOf(csr); name != "" {
			if node = byName[name]; node == nil {
				res.Waiting = append(res.Waiting, csr.Name)
				continue
			}
		}
		csr = csr.DeepCopy() // a cache's object is never written to
		cond := certificatesv1.CertificateSigningRequestCondition{Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue, Reason: ReasonApproved,
			Message: "eksa-metrics: the node's own serving certificate, for its own names and addresses"}
		req, why := check(csr, node)
		if why == nil {
			why = claimedByOthers(req, node.Name, owners)
		}
		if why != nil {
			cond.Type, cond.Reason, cond.Message = certificatesv1.CertificateDenied, ReasonDenied, "eksa-metrics: "+why.Error()
		}
		csr.Status.Conditions = append(csr.Status.Conditions, cond)
		if _, err := client.CertificatesV1().CertificateSigningRequests().UpdateApproval(ctx, csr.Name, csr, metav1.UpdateOptions{}); err != nil {
			if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
				continue // decided or gone meanwhile; the next pass sees it
			}
			return res, fmt.Errorf("writing the decision on CertificateSigningRequest %s: %w", csr.Name, err)
		}
		if cond.Type == certificatesv1.CertificateApproved {
			res.Approved = append(res.Approved, csr.Name)
		} else {
			res.Denied = append(res.Denied, csr.Name+": "+cond.Message)
		}
	}
	return res, nil
}

// claimedByOthers refuses a name or address that another Node reports too:
// a Node's addresses are its kubelet's own report, so a node could claim
// another's address in its status; such a request is denied rather than
// given a certificate that would pass for the other node's.
func claimedByOthers(req *x509.CertificateRequest, node string, owners map[string][]string) error {
	var asked []string
	for _, d := range req.DNSNames {
		asked = append(asked, dnsKey(d))
	}
	for _, ip := range req.IPAddresses {
		asked = append(asked, ip.String())
	}
	for _, a := range asked {
		for _, other := range owners[a] {
			if other != node {
				return fmt.Errorf("%s is also an address of node %s: nodes report their own addresses, so neither gets a certificate for it", a, other)
			}
		}
	}
	return nil
}

func decided(csr *certificatesv1.CertificateSigningRequest) bool {
	return slices.ContainsFunc(csr.Status.Conditions, func(c certificatesv1.CertificateSigningRequestCondition) bool {
		return c.Type == certificatesv1.CertificateApproved || c.Type == certificatesv1.CertificateDenied
	})
}

// Run approves for as long as ctx lasts, from watches: of that signer's
// requests only, and of the Nodes. A pass runs whenever a request is filed
// or changes and whenever a Node registers (a request may wait for it),
// and every resync period; each decision is written to log, one line each.
func Run(ctx context.Context, client kubernetes.Interface, resync time.Duration, log io.Writer) error {
	trigger := make(chan struct{}, 1)
	poke := func() {
		select {
		case trigger <- struct{}{}:
		default: // a pass is due already
		}
	}
	onChange := cache.ResourceEventHandlerFuncs{AddFunc: func(any) { poke() }, UpdateFunc: func(any, any) { poke() }}
	csrFactory := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithTweakListOptions(func(o *metav1.ListOptions) {
		o.FieldSelector = fields.OneTermEqualSelector("spec.signerName", certificatesv1.KubeletServingSignerName).String()
	}))
	csrs := csrFactory.Certificates().V1().CertificateSigningRequests()
	nodeFactory := informers.NewSharedInformerFactory(client, 0)
	nodes := nodeFactory.Core().V1().Nodes()
	if _, err := csrs.Informer().AddEventHandler(onChange); err != nil {
		return err
	}
	if _, err := nodes.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: func(any) { poke() }}); err != nil {
		return err
	}
	for _, f := range []informers.SharedInformerFactory{csrFactory, nodeFactory} {
		f.Start(ctx.Done())
		defer f.Shutdown()
	}
	if !cache.WaitForCacheSync(ctx.Done(), csrs.Informer().HasSynced, nodes.Informer().HasSynced) {
		return ctx.Err()
	}
	fmt.Fprintf(log, "approving %s requests of nodes for their own names and addresses\n", certificatesv1.KubeletServingSignerName)
	tick := time.NewTicker(resync)
	defer tick.Stop()
	poke()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
			poke()
		case <-trigger:
			pending, err := csrs.Lister().List(labels.Everything())
			if err != nil {
				return err
			}
			all, err := nodes.Lister().List(labels.Everything())
			if err != nil {
				return err
			}
			res, err := decide(ctx, client, pending, all)
			for _, n := range res.Approved {
				fmt.Fprintf(log, "approved %s\n", n)
			}
			for _, d := range res.Denied {
				fmt.Fprintf(log, "denied %s\n", d)
			}
			if err != nil {
				// The next event or tick tries again.
				fmt.Fprintf(log, "error: %v\n", err)
			}
		}
	}
}
