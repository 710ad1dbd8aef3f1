package framework

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"net"
	"testing"

	certificatesv1 "k8s.io/api/certificates/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// FileServingRequest files, with client (a node's kubelet's credentials),
// a kubernetes.io/kubelet-serving request for node with the given names, as
// a kubelet does (a fresh P-256 key, CN system:node:<node>, O system:nodes,
// digital signature and server auth), and returns its name.
func FileServingRequest(t testing.TB, client kubernetes.Interface, prefix, node string, dns []string, ips ...string) string {
	t.Helper()
	name, _ := FileRequest(t, client, certificatesv1.KubeletServingSignerName, prefix, node, dns, ips...)
	return name
}

// FileRequest is FileServingRequest for any signer (server auth for the
// serving signer, client auth otherwise), and also returns the key.
func FileRequest(t testing.TB, client kubernetes.Interface, signer, prefix, node string, dns []string, ips ...string) (string, *ecdsa.PrivateKey) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.CertificateRequest{Subject: pkix.Name{CommonName: "system:node:" + node, Organization: []string{"system:nodes"}}, DNSNames: dns}
	for _, ip := range ips {
		tmpl.IPAddresses = append(tmpl.IPAddresses, net.ParseIP(ip))
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, tmpl, key)
	if err != nil {
		t.Fatal(err)
	}
	usage := certificatesv1.UsageClientAuth
	if signer == certificatesv1.KubeletServingSignerName {
		usage = certificatesv1.UsageServerAuth
	}
	csr, err := client.CertificatesV1().CertificateSigningRequests().Create(context.Background(), &certificatesv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{GenerateName: prefix + "-"},
		Spec: certificatesv1.CertificateSigningRequestSpec{
			Request:    pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}),
			SignerName: signer,
			Usages:     []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, usage},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("node %s filing a %s request %s: %v", node, signer, prefix, err)
	}
	return csr.Name, key
}
