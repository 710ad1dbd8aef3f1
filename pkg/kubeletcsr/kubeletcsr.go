// Package kubeletcsr approves the serving-certificate requests of kubelets
// that run with serverTLSBootstrap: true, and nothing else.
//
// A kubelet with serverTLSBootstrap files a CertificateSigningRequest for
// the signer kubernetes.io/kubelet-serving and serves the certificate once
// the request is approved and signed; kube-controller-manager approves no
// such request itself (its csrapproving controller approves kubelet client
// certificates only: kubernetes
// pkg/controller/certificates/approver/sarapprove.go). The checks follow
// OpenShift's cluster-machine-approver for serving requests
// (openshift/cluster-machine-approver pkg/controller/csr_check.go,
// validateCSRContents and authorizeServingCertWithMachine): the request was
// filed by the node itself (user system:node:<name>, group system:nodes),
// its subject is that node, it asks for server auth and nothing a server
// certificate does not need, and each of its names and addresses is one the
// node's Cluster API Machine lists (status.nodeRef names the Node,
// status.addresses are written by the infrastructure provider).
//
// A Node's own status is never read for names: NodeRestriction lets a node
// update its own status. A request whose node has no Machine, or whose
// Machine does not list a name yet, waits for the Approver's Grace and is
// then denied. Whatever the Machines list, Policy never approves a name
// that would let a kubelet certificate pass for anything but that kubelet
// (the API server's names and Service IP, any Service, loopback and
// link-local addresses, the control-plane endpoint, wildcards), nor a name
// or address another, older, Machine lists.
package kubeletcsr

import (
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net"
	"slices"
	"strings"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/eksa-metrics/eksa-metrics/pkg/spec"
)

// Reason is the reason of the Approved or Denied condition eksa-metrics
// writes. The strings live in spec, so that PLAN.md (pkg/render) can name
// them without importing this package and its client.
const (
	ReasonApproved = spec.KubeletServingApproved
	ReasonDenied   = spec.KubeletServingRefused
)

// Limits on what a request may hold. A kubelet's request is a few hundred
// bytes and names its hostname and its node addresses (client-go's
// certificate manager, kubelet pkg/kubelet/certificate/kubelet.go): a
// request larger than MaxRequestBytes is denied without being parsed, and
// one that names more than MaxNames names and addresses is denied.
const (
	MaxRequestBytes = 8 << 10
	MaxNames        = 12
)

const nodePrefix = "system:node:"

// allowedUsages are what a kubelet's serving certificate may carry
// (client-go's certificate manager asks for digital signature and server
// auth, plus key encipherment for an RSA key).
var allowedUsages = []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageKeyEncipherment, certificatesv1.UsageServerAuth}

// Policy holds the names and addresses that are never approved, whatever a
// Node reports.
type Policy struct {
	// ClusterDomain is the cluster's DNS domain (default cluster.local):
	// no name under it is approved.
	ClusterDomain string
	// ServiceCIDRs are the cluster's Service ranges: no address in them is
	// approved.
	ServiceCIDRs []*net.IPNet
	// ControlPlaneEndpoint is the host (name or address) clients reach the
	// API server at: never approved.
	ControlPlaneEndpoint string
	// ServiceIPs are more addresses never approved (the kubernetes
	// Service's, read from the cluster where the ranges are not given).
	ServiceIPs []net.IP
}

func (p Policy) clusterDomain() string {
	if d := dnsKey(p.ClusterDomain); d != "" {
		return d
	}
	return "cluster.local"
}

// refuseDNS says why a DNS name is never approved ("" when it may be).
func (p Policy) refuseDNS(name string) string {
	d := dnsKey(name)
	labels := strings.Split(d, ".")
	switch {
	case strings.Contains(d, "*"):
		return "a wildcard"
	case len(validation.IsDNS1123Subdomain(d)) > 0:
		return "not a DNS name (RFC 1123)"
	case labels[0] == "kubernetes":
		return "a name of the API server's kubernetes Service"
	case slices.Contains(labels, "svc"):
		return "a Service's name"
	case d == p.clusterDomain() || strings.HasSuffix(d, "."+p.clusterDomain()):
		return "a name in the cluster domain " + p.clusterDomain()
	case d == "localhost" || strings.HasSuffix(d, ".localhost"):
		return "a loopback name"
	case p.ControlPlaneEndpoint != "" && d == dnsKey(p.ControlPlaneEndpoint):
		return "the cluster's control-plane endpoint"
	}
	return ""
}

// refuseIP says why an address is never approved ("" when it may be).
func (p Policy) refuseIP(ip net.IP) string {
	switch {
	case ip.IsLoopback():
		return "a loopback address"
	case ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast():
		return "a link-local address"
	case ip.IsUnspecified() || ip.IsMulticast():
		return "not a host's address"
	}
	for _, n := range p.ServiceCIDRs {
		if n.Contains(ip) {
			return "in the Service range " + n.String()
		}
	}
	if slices.ContainsFunc(p.ServiceIPs, ip.Equal) {
		return "the kubernetes Service's address"
	}
	if e := net.ParseIP(p.ControlPlaneEndpoint); e != nil && e.Equal(ip) {
		return "the cluster's control-plane endpoint"
	}
	return ""
}

// NodeOf names the node a request says it comes from (its requester,
// system:node:<name>), "" when a node did not file it.
func NodeOf(csr *certificatesv1.CertificateSigningRequest) string {
	if !strings.HasPrefix(csr.Spec.Username, nodePrefix) || !slices.Contains(csr.Spec.Groups, "system:nodes") {
		return ""
	}
	return strings.TrimPrefix(csr.Spec.Username, nodePrefix)
}

// NotVouched says that the Machines do not (yet) vouch for a requested
// name or address: the node has no Machine, or its Machine does not list it.
// Such a request waits (the infrastructure provider may not have written
// the Machine's addresses yet) and is denied after the grace.
type NotVouched struct{ Reason string }

func (e *NotVouched) Error() string { return e.Reason }

// Check says why a kubelet-serving request must not be approved for the
// live Node that filed it (nil: approve), under policy, machines being the
// Cluster API Machines of the cluster (the node's own, whose status.nodeRef
// names it, lists what it may be approved; an address two Machines list is
// the older one's). node is the Node named by the request's requester
// (NodeOf). A *NotVouched error says the Machines do not vouch for it yet.
func Check(csr *certificatesv1.CertificateSigningRequest, node *corev1.Node, machines []spec.Machine, policy Policy) error {
	_, err := check(csr, node, vouch(machines), policy)
	return err
}

// check is Check, and gives the parsed request when it passes.
func check(csr *certificatesv1.CertificateSigningRequest, node *corev1.Node, v vouched, policy Policy) (*x509.CertificateRequest, error) {
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
	if len(csr.Spec.Request) > MaxRequestBytes {
		return nil, &TooLarge{Size: len(csr.Spec.Request)}
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
		return nil, fmt.Errorf("subject O %q is not [system:nodes]", req.Subject.Organization)
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
		return nil, fmt.Errorf("asks for e-mail or URI names (%q %v), which a kubelet's serving certificate never holds", req.EmailAddresses, req.URIs)
	}
	if len(req.DNSNames) == 0 && len(req.IPAddresses) == 0 {
		return nil, fmt.Errorf("names no DNS name or IP address")
	}
	if n := len(req.DNSNames) + len(req.IPAddresses); n > MaxNames {
		return nil, fmt.Errorf("names %d names and addresses, more than a kubelet asks for (%d)", n, MaxNames)
	}
	m := v.byNode[name]
	var dns []string
	var ips []net.IP
	if m != nil {
		dns, ips = machineAddresses(m)
	}
	// Refusals first (never approved, another Machine's), then what the
	// node's Machine does not list yet.
	var missing []string
	for _, d := range req.DNSNames {
		if why := policy.refuseDNS(d); why != "" {
			return nil, fmt.Errorf("DNS name %q is never approved: %s", d, why)
		}
		if o := v.owner[dnsKey(d)]; o != "" && (m == nil || o != m.Name) {
			return nil, fmt.Errorf("DNS name %q is listed by Machine %s, not node %s's", d, o, name)
		}
		if !slices.Contains(dns, dnsKey(d)) {
			missing = append(missing, fmt.Sprintf("DNS name %q", d))
		}
	}
	for _, ip := range req.IPAddresses {
		if why := policy.refuseIP(ip); why != "" {
			return nil, fmt.Errorf("IP address %s is never approved: %s", ip, why)
		}
		if o := v.owner[ip.String()]; o != "" && (m == nil || o != m.Name) {
			return nil, fmt.Errorf("IP address %s is listed by Machine %s, not node %s's", ip, o, name)
		}
		if !slices.ContainsFunc(ips, ip.Equal) {
			missing = append(missing, "IP address "+ip.String())
		}
	}
	if m == nil {
		return nil, &NotVouched{Reason: fmt.Sprintf("no Cluster API Machine has node %s as its status.nodeRef, so nothing the node cannot write vouches for its names", name)}
	}
	if len(missing) > 0 {
		return nil, &NotVouched{Reason: fmt.Sprintf("%s not listed in the status.addresses of Machine %s (node %s's: %q %v)", strings.Join(missing, ", "), m.Name, name, dns, ips)}
	}
	return req, nil
}

// dnsKey is a DNS name as compared: lower case, without a final dot.
func dnsKey(name string) string { return strings.ToLower(strings.TrimSuffix(name, ".")) }

// TooLarge is the denial of a request larger than any kubelet's, which is
// not read; Size is its length, 0 when the cache dropped its body
// (trimRequest) before it was measured here.
type TooLarge struct{ Size int }

func (e *TooLarge) Error() string {
	if e.Size == 0 {
		return fmt.Sprintf("spec.request is larger than any kubelet's request (%d bytes): not read", MaxRequestBytes)
	}
	return fmt.Sprintf("spec.request is %d bytes, more than any kubelet's request (%d): not read", e.Size, MaxRequestBytes)
}
