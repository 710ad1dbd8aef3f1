package templates

import (
	"github.com/eksa-metrics/eksa-metrics/pkg/spec"
)

// cert-manager (tls.certificates: cert-manager): the issuers and
// Certificates eksa-metrics renders for the cert-manager running in the
// cluster. A self-signed ClusterIssuer issues eksa-metrics' CA (a Certificate
// in cert-manager's cluster resource namespace, where a CA ClusterIssuer
// reads it); the CA ClusterIssuer issues a Certificate per proxy, into the
// same Secret (name, keys tls.crt and tls.key) and for the same DNS name
// that apply would have made. apply, and the controller, publish the CA
// bundle from the CA's Secret and restart HAProxy when cert-manager renews
// its certificate.
const (
	// CertManagerAPIVersion is the group/version of the objects rendered
	// for cert-manager (served since cert-manager 1.0).
	CertManagerAPIVersion = "cert-manager.io/v1"
	// CertManagerNS is cert-manager's cluster resource namespace as EKS
	// Anywhere installs it: where a ClusterIssuer of type CA reads its
	// Secret, so where the CA's Certificate is.
	CertManagerNS = "cert-manager"
	// SelfSignedIssuer issues the CA, and only the CA.
	SelfSignedIssuer = Prefix + "-selfsigned"
	// CAIssuer issues the proxies' serving certificates from ServingCA.
	CAIssuer = Prefix + "-ca"
	// CertManagerCertificateAnnotation is the annotation cert-manager sets
	// on a Secret it issued, naming its Certificate (with issuer-name and
	// issuer-kind: cert-manager v1.20.2 pkg/apis/certmanager/v1/types.go:87-96).
	CertManagerCertificateAnnotation = "cert-manager.io/certificate-name"

	// caDuration matches the CA apply makes (client-go's self-signed CA:
	// ten years); servingDuration and servingRenewBefore match apply's
	// serving certificates (a year, renewed with a third left).
	caDuration         = "87600h"
	servingDuration    = "8760h"
	servingRenewBefore = "2920h"
)

// CertManagerObjects are the ClusterIssuers and Certificates of
// tls.certificates: cert-manager: none otherwise, or when no proxy serves a
// certificate.
func CertManagerObjects(c *spec.Config) []Object {
	if !c.CertManager {
		return nil
	}
	all := ServingSecrets(c)
	if len(all) == 0 {
		return nil
	}
	out := []Object{
		certManagerObject("ClusterIssuer", "", SelfSignedIssuer, Object{"selfSigned": Object{}}),
		certManagerObject("Certificate", CertManagerNS, ServingCA, Object{
			"isCA":       true,
			"commonName": ServingCA,
			"secretName": ServingCA,
			"duration":   caDuration,
			"privateKey": Object{"algorithm": "ECDSA", "size": int64(256)},
			"issuerRef":  issuerRef(SelfSignedIssuer),
		}),
		certManagerObject("ClusterIssuer", "", CAIssuer, Object{"ca": Object{"secretName": ServingCA}}),
	}
	for _, s := range all {
		out = append(out, certManagerObject("Certificate", s.Namespace, s.Name, Object{
			"secretName":  s.Name,
			"dnsNames":    []any{s.DNSName},
			"duration":    servingDuration,
			"renewBefore": servingRenewBefore,
			"usages":      []any{"digital signature", "server auth"},
			"privateKey":  Object{"algorithm": "ECDSA", "size": int64(256), "rotationPolicy": "Always"},
			"issuerRef":   issuerRef(CAIssuer),
			// Found by the same labels as apply's own certificates; they
			// stay cert-manager's (apply never writes nor deletes them).
			"secretTemplate": Object{"labels": Object{ManagedByLabel: Prefix, CertificateLabel: "cert-manager"}},
		}))
	}
	return out
}

// ServingCANamespace is where the Secret of the proxies' CA is: kube-system
// (apply's own), or cert-manager's cluster resource namespace.
func ServingCANamespace(c *spec.Config) string {
	if c.CertManager {
		return CertManagerNS
	}
	return SystemNS
}

func certManagerObject(kind, namespace, name string, spec Object) Object {
	md := Object{"name": name, "labels": Object{ManagedByLabel: Prefix}}
	if namespace != "" {
		md["namespace"] = namespace
	}
	return Object{"apiVersion": CertManagerAPIVersion, "kind": kind, "metadata": md, "spec": spec}
}

func issuerRef(name string) Object {
	return Object{"group": "cert-manager.io", "kind": "ClusterIssuer", "name": name}
}
