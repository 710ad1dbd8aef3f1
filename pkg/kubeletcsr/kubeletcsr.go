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
	if csr.Spec.SignerName != certificatesv1.KubeletServingSignerName {
		return fmt.Errorf("signer %s, not %s", csr.Spec.SignerName, certificatesv1.KubeletServingSignerName)
	}
	name := NodeOf(csr)
	if name == "" {
		return fmt.Errorf("filed by %s (groups %v), not by a node (system:node:<name> in group system:nodes)", csr.Spec.Username, csr.Spec.Groups)
	}
	if node == nil || node.Name != name {
		return fmt.Errorf("filed by node %s, which does not exist", name)
	}
	block, _ := pem.Decode(csr.Spec.Request)
	if block == nil || block.Type != "CERTIFICATE REQUEST" {
		return fmt.Errorf("spec.request holds no PEM CERTIFICATE REQUEST")
	}
	req, err := x509.ParseCertificateRequest(block.Bytes)
	if err != nil {
		return fmt.Errorf("spec.request does not parse: %w", err)
	}
	if err := req.CheckSignature(); err != nil {
		return fmt.Errorf("spec.request is not signed by its own key: %w", err)
	}
	if req.Subject.CommonName != csr.Spec.Username {
		return fmt.Errorf("subject CN %q is not its requester %s", req.Subject.CommonName, csr.Spec.Username)
	}
	if !slices.Equal(req.Subject.Organization, []string{"system:nodes"}) {
		return fmt.Errorf("subject O %v is not [system:nodes]", req.Subject.Organization)
	}
	if !slices.Contains(csr.Spec.Usages, certificatesv1.UsageServerAuth) {
		return fmt.Errorf("usages %v lack server auth", csr.Spec.Usages)
	}
	for _, u := range csr.Spec.Usages {
		if !slices.Contains(allowedUsages, u) {
			return fmt.Errorf("usage %q is not one a serving certificate needs (%v)", u, allowedUsages)
		}
	}
	if len(req.EmailAddresses) > 0 || len(req.URIs) > 0 {
		return fmt.Errorf("asks for e-mail or URI names (%v %v), which a kubelet's serving certificate never holds", req.EmailAddresses, req.URIs)
	}
	if len(req.DNSNames) == 0 && len(req.IPAddresses) == 0 {
		return fmt.Errorf("names no DNS name or IP address")
	}
	dns, ips := []string{node.Name}, []net.IP{}
	for _, a := range node.Status.Addresses {
		switch a.Type {
		case corev1.NodeHostName, corev1.NodeInternalDNS, corev1.NodeExternalDNS:
			dns = append(dns, a.Address)
		case corev1.NodeInternalIP, corev1.NodeExternalIP:
			if ip := net.ParseIP(a.Address); ip != nil {
				ips = append(ips, ip)
			}
		}
	}
	for _, d := range req.DNSNames {
		if !slices.ContainsFunc(dns, func(n string) bool { return strings.EqualFold(strings.TrimSuffix(n, "."), d) }) {
			return fmt.Errorf("DNS name %s is not a name of node %s (%v)", d, name, dns)
		}
	}
	for _, ip := range req.IPAddresses {
		if !slices.ContainsFunc(ips, ip.Equal) {
			return fmt.Errorf("IP address %s is not an address of node %s (%v)", ip, name, ips)
		}
	}
	return nil
}

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
	var res Result
	list, err := client.CertificatesV1().CertificateSigningRequests().List(ctx, metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("spec.signerName", certificatesv1.KubeletServingSignerName).String()})
	if err != nil {
		return res, fmt.Errorf("listing the %s CertificateSigningRequests: %w", certificatesv1.KubeletServingSignerName, err)
	}
	nodes, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return res, fmt.Errorf("listing the Nodes: %w", err)
	}
	byName, owners := map[string]*corev1.Node{}, map[string][]string{}
	for i := range nodes.Items {
		n := &nodes.Items[i]
		byName[n.Name] = n
		for _, a := range names(n) {
			owners[a] = append(owners[a], n.Name)
		}
	}
	for i := range list.Items {
		csr := &list.Items[i]
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
		cond := certificatesv1.CertificateSigningRequestCondition{Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue, Reason: ReasonApproved,
			Message: "eksa-metrics: the node's own serving certificate, for its own names and addresses"}
		why := Check(csr, node)
		if why == nil {
			why = claimedByOthers(csr, node.Name, owners)
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

// names are the names and addresses a Node reports, normalised as Check
// compares them.
func names(n *corev1.Node) []string {
	out := []string{strings.ToLower(n.Name)}
	for _, a := range n.Status.Addresses {
		if ip := net.ParseIP(a.Address); ip != nil {
			out = append(out, ip.String())
		} else {
			out = append(out, strings.ToLower(strings.TrimSuffix(a.Address, ".")))
		}
	}
	return out
}

// claimedByOthers refuses a name or address that another Node reports too:
// a Node's addresses are its kubelet's own report, so a node could claim
// another's address in its status; such a request is denied rather than
// given a certificate that would pass for the other node's.
func claimedByOthers(csr *certificatesv1.CertificateSigningRequest, node string, owners map[string][]string) error {
	block, _ := pem.Decode(csr.Spec.Request)
	req, err := x509.ParseCertificateRequest(block.Bytes) // Check parsed it already
	if err != nil {
		return err
	}
	asked := []string{}
	for _, d := range req.DNSNames {
		asked = append(asked, strings.ToLower(d))
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

// Run approves for as long as ctx lasts: a pass whenever a kubelet-serving
// request is filed or changes (a watch of that signer's requests only), and
// every resync period for those left waiting for their Node. Each decision
// is written to log, one line each.
func Run(ctx context.Context, client kubernetes.Interface, resync time.Duration, log io.Writer) error {
	trigger := make(chan struct{}, 1)
	poke := func() {
		select {
		case trigger <- struct{}{}:
		default: // a pass is due already
		}
	}
	factory := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithTweakListOptions(func(o *metav1.ListOptions) {
		o.FieldSelector = fields.OneTermEqualSelector("spec.signerName", certificatesv1.KubeletServingSignerName).String()
	}))
	inf := factory.Certificates().V1().CertificateSigningRequests().Informer()
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { poke() },
		UpdateFunc: func(any, any) { poke() },
	}); err != nil {
		return err
	}
	factory.Start(ctx.Done())
	defer factory.Shutdown()
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
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
			res, err := Pass(ctx, client)
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
