package templates

import (
	"slices"

	"github.com/eksa-metrics/eksa-metrics/pkg/spec"
)

// cert-manager (tls.certificates: cert-manager): the issuers and
// Certificates eksa-metrics renders for the cert-manager running in the
// cluster. In every namespace that holds a serving certificate
// (IssuerNamespaces), a self-signed Issuer issues that namespace's CA (a
// Certificate there, whose Secret the CA Issuer next to it reads), and the CA
// Issuer issues the Certificates of that namespace, into the same Secret
// (name, keys tls.crt and tls.key) and for the same DNS name that apply would
// have made. apply, and the controller, publish the CA bundle (every
// namespace's CA) from the CAs' Secrets and restart HAProxy when cert-manager
// renews its certificate.
//
// The issuers are namespaced Issuers, never ClusterIssuers: cert-manager
// approves every request by default, so anyone who may create a Certificate
// in some namespace (the edit role aggregates it) could have a ClusterIssuer
// sign one for a verified server name such as
// eksa-metrics-kube-proxy.kube-system.svc, and with it take the scraper's
// token from a network position. An Issuer signs only the Certificates of its
// own namespace, where only those who administer the proxies write.
const (
	// CertManagerAPIVersion is the group/version of the objects rendered
	// for cert-manager (served since cert-manager 1.0).
	CertManagerAPIVersion = "cert-manager.io/v1"
	// CertManagerNS is cert-manager's namespace as EKS Anywhere installs it
	// (its cluster resource namespace). Before the issuers were namespaced,
	// eksa-metrics' CA was there, issued as Secret ServingCA for the
	// ClusterIssuers SelfSignedIssuer and CAIssuer; apply prunes those, and
	// leaves that Secret, which no bundle trusts any more.
	CertManagerNS = "cert-manager"
	// SelfSignedIssuer is the Issuer, in each of IssuerNamespaces, that
	// issues that namespace's CA, and only the CA.
	SelfSignedIssuer = Prefix + "-selfsigned"
	// CAIssuer is the Issuer, in each of IssuerNamespaces, that issues the
	// serving certificates of that namespace from its CA (IssuerCA).
	CAIssuer = Prefix + "-ca"
	// IssuerCA is the Certificate, and its Secret, of a namespace's CA that
	// cert-manager issues. A name of its own, so that it never meets apply's
	// CA (Secret ServingCA in kube-system) when a cluster moves from
	// tls.certificates: eksa-metrics to cert-manager.
	IssuerCA = Prefix + "-issuer-ca"
	// CertManagerCertificateAnnotation is the annotation cert-manager sets
	// on a Secret it issued, naming its Certificate (with issuer-name and
	// issuer-kind: cert-manager v1.20.2 pkg/apis/certmanager/v1/types.go:87-96).
	CertManagerCertificateAnnotation = "cert-manager.io/certificate-name"

	// CADuration matches the CA apply makes (client-go's self-signed CA:
	// ten years); ServingDuration and ServingRenewBefore match apply's
	// serving certificates (a year, renewed with a third left).
	CADuration         = "87600h"
	ServingDuration    = "8760h"
	ServingRenewBefore = "2920h"
)

// CertManagerObjects are the Issuers and Certificates of tls.certificates:
// cert-manager: none otherwise, or when no proxy serves a certificate.
func CertManagerObjects(c *spec.Config) []Object {
	if !c.CertManager {
		return nil
	}
	all := ServingSecrets(c)
	var out []Object
	for _, ns := range IssuerNamespaces(all) {
		out = append(out,
			certManagerObject("Issuer", ns, SelfSignedIssuer, Object{"selfSigned": Object{}}),
			certManagerObject("Certificate", ns, IssuerCA, Object{
				"isCA":           true,
				"commonName":     IssuerCA + "." + ns,
				"secretName":     IssuerCA,
				"duration":       CADuration,
				"privateKey":     Object{"algorithm": "ECDSA", "size": int64(256)},
				"issuerRef":      IssuerRef(SelfSignedIssuer),
				"secretTemplate": issuedLabels(),
			}),
			certManagerObject("Issuer", ns, CAIssuer, Object{"ca": Object{"secretName": IssuerCA}}),
		)
	}
	for _, s := range all {
		out = append(out, certManagerObject("Certificate", s.Namespace, s.Name, Object{
			"secretName":     s.Name,
			"dnsNames":       []any{s.DNSName},
			"duration":       ServingDuration,
			"renewBefore":    ServingRenewBefore,
			"usages":         []any{"digital signature", "server auth"},
			"privateKey":     Object{"algorithm": "ECDSA", "size": int64(256), "rotationPolicy": "Always"},
			"issuerRef":      IssuerRef(CAIssuer),
			"secretTemplate": issuedLabels(),
		}))
	}
	return out
}

// issuedLabels label the Secrets cert-manager issues from eksa-metrics'
// Certificates, by the same labels as apply's own certificates: apply
// never writes them while tls.certificates is cert-manager, and replaces or
// deletes them (with their Certificates gone) when it leaves cert-manager.
func issuedLabels() Object {
	return Object{"labels": Object{ManagedByLabel: Prefix, CertificateLabel: "cert-manager"}}
}

// IssuerNamespaces are the namespaces of the serving certificates, sorted,
// each once: where tls.certificates: cert-manager has its Issuers and a CA.
func IssuerNamespaces(served []ServedSecret) []string {
	var out []string
	for _, s := range served {
		if !slices.Contains(out, s.Namespace) {
			out = append(out, s.Namespace)
		}
	}
	slices.Sort(out)
	return out
}

func certManagerObject(kind, namespace, name string, spec Object) Object {
	md := Object{"name": name, "labels": Object{ManagedByLabel: Prefix}}
	if namespace != "" {
		md["namespace"] = namespace
	}
	return Object{"apiVersion": CertManagerAPIVersion, "kind": kind, "metadata": md, "spec": spec}
}

// IssuerRef names the Issuer of that name in the Certificate's own
// namespace: a namespaced Issuer, never a ClusterIssuer.
func IssuerRef(name string) Object {
	return Object{"group": "cert-manager.io", "kind": "Issuer", "name": name}
}
