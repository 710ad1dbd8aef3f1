package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/eksa-metrics/eksa-metrics/pkg/components"
	"github.com/eksa-metrics/eksa-metrics/pkg/templates"
	"github.com/eksa-metrics/eksa-metrics/test/framework"
)

var certificateRequestGVR = schema.GroupVersionResource{Group: "cert-manager.io", Version: "v1", Resource: "certificaterequests"}

// tenantCannotUseTheCA: someone who may create Certificates in a namespace of
// their own only (what the edit role aggregates from cert-manager's
// ClusterRoles) asks eksa-metrics' CA issuer, as a ClusterIssuer and as an
// Issuer, for a certificate for a name the scrapers verify. With it, from a
// network position, they could take the scraper's token. cert-manager, which
// approves every request by default, finds no such issuer for that namespace,
// says so on each CertificateRequest, and issues nothing. Against the
// ClusterIssuer eksa-metrics rendered before, the first request is signed
// and this fails.
func tenantCannotUseTheCA(t *testing.T, cp *framework.ControlPlane, certManager *framework.Process) {
	t.Helper()
	ctx := context.Background()
	const tenant, user = "tenant", "tenant-dev"
	if _, err := cp.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: tenant}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// cert-manager v1.20.2's cert-manager-edit ClusterRole, which aggregates
	// to edit, for Certificates and CertificateRequests, bound in the
	// tenant's namespace only.
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "cert-manager-edit", Namespace: tenant}, Rules: []rbacv1.PolicyRule{{
		APIGroups: []string{"cert-manager.io"}, Resources: []string{"certificates", "certificaterequests", "issuers"},
		Verbs: []string{"create", "delete", "deletecollection", "patch", "update", "get", "list", "watch"}}}}
	if _, err := cp.Client.RbacV1().Roles(tenant).Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: user, Namespace: tenant},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name},
		Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}}}
	if _, err := cp.Client.RbacV1().RoleBindings(tenant).Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", cp.Kubeconfig(t, user, user))
	if err != nil {
		t.Fatal(err)
	}
	as, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}

	dnsName := templates.ServingName(components.KubeProxy)
	attacks := map[string]string{"via-clusterissuer": "ClusterIssuer", "via-issuer": "Issuer"} // Certificate (and Secret) -> issuer kind
	certificate := func(ns, name, kind string) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "cert-manager.io/v1", "kind": "Certificate",
			"metadata": map[string]any{"name": name, "namespace": ns},
			"spec": map[string]any{"secretName": name, "dnsNames": []any{dnsName}, "usages": []any{"digital signature", "server auth"},
				"issuerRef": map[string]any{"group": "cert-manager.io", "kind": kind, "name": templates.CAIssuer}}}}
	}
	// Where eksa-metrics' Issuers are, the tenant may not ask them.
	if _, err := as.Resource(certificateGVR).Namespace(templates.SystemNS).Create(ctx, certificate(templates.SystemNS, "via-issuer", "Issuer"), metav1.CreateOptions{}); !apierrors.IsForbidden(err) {
		t.Fatalf("the tenant creating a Certificate in %s: %v, want forbidden", templates.SystemNS, err)
	}
	for name, kind := range attacks {
		if _, err := as.Resource(certificateGVR).Namespace(tenant).Create(ctx, certificate(tenant, name, kind), metav1.CreateOptions{}); err != nil {
			t.Fatalf("the tenant creating Certificate %s/%s: %v", tenant, name, err)
		}
	}

	// Until cert-manager has answered every request, and at every look, no
	// certificate was issued into the tenant's Secrets.
	refused := map[string]string{}
	framework.WaitFor(t, "cert-manager to find no issuer for the tenant's Certificates", 90*time.Second, func() (bool, error) {
		noIssuedSecret(t, cp, tenant, attacks)
		crs, err := cp.Dynamic.Resource(certificateRequestGVR).Namespace(tenant).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		for _, cr := range crs.Items {
			name := cr.GetAnnotations()[templates.CertManagerCertificateAnnotation]
			kind, ok := attacks[name]
			if !ok {
				continue
			}
			// cert-manager v1.20.2 pkg/controller/certificaterequests/sync.go:
			// Ready False, reason Pending, "Referenced "<kind>" not found: ...".
			conds, _, _ := unstructured.NestedSlice(cr.Object, "status", "conditions")
			for _, c := range conds {
				m, _ := c.(map[string]any)
				if m["type"] != "Ready" {
					continue
				}
				msg, _ := m["message"].(string)
				switch {
				case m["status"] == "False" && m["reason"] == "Pending" && strings.HasPrefix(msg, fmt.Sprintf("Referenced %q not found", kind)):
					refused[name] = msg
				case m["status"] == "True" || m["reason"] == "Issued":
					t.Fatalf("cert-manager issued the tenant's CertificateRequest %s for %s from %s %s: %v", cr.GetName(), dnsName, kind, templates.CAIssuer, msg)
				}
			}
		}
		return len(refused) == len(attacks), fmt.Errorf("refused so far: %v", refused)
	}, certManager)
	noIssuedSecret(t, cp, tenant, attacks)
	for name, msg := range refused {
		t.Logf("%s: %s", name, msg)
	}

	// Gone again, so that what follows counts eksa-metrics' Certificates only.
	for name := range attacks {
		if err := as.Resource(certificateGVR).Namespace(tenant).Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}

// noIssuedSecret fails the test when a Secret of the attacks' names, or any
// Secret holding a certificate, is in the namespace (cert-manager's
// temporary private keys hold none).
func noIssuedSecret(t *testing.T, cp *framework.ControlPlane, ns string, attacks map[string]string) {
	t.Helper()
	list, err := cp.Client.CoreV1().Secrets(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range list.Items {
		if _, ok := attacks[s.Name]; ok || len(s.Data[corev1.TLSCertKey]) > 0 {
			t.Fatalf("cert-manager issued Secret %s/%s for the tenant (annotations %v)", ns, s.Name, s.Annotations)
		}
	}
}
