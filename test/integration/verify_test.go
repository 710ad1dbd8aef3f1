package integration

import (
	"context"
	"strings"
	"testing"
	"time"

	metricsv1alpha1 "github.com/eksa-metrics/eksa-metrics/pkg/apis/metrics/v1alpha1"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/eksa-metrics/eksa-metrics/pkg/templates"
	"github.com/eksa-metrics/eksa-metrics/pkg/verify"
	"github.com/eksa-metrics/eksa-metrics/test/framework"
)

// verify's tokens are bound to temporary Secrets: cleanup deletes every
// temporary object, and the tokens stop working at once.
func TestVerifyIdentitiesAreRevokedByCleanup(t *testing.T) {
	ctx := context.Background()
	cp := framework.StartControlPlane(t, framework.ControlPlaneOptions{Version: kubeVersion})
	cp.ServiceAccount(t, "monitoring", "prometheus-k8s")
	for _, scrapers := range [][]metricsv1alpha1.Scraper{
		{{Kind: metricsv1alpha1.ScraperServiceAccount, Name: "prometheus-k8s", Namespace: "monitoring"}},
		{{Kind: metricsv1alpha1.ScraperGroup, Name: "platform:metrics"}},
	} {
		ids, err := verify.NewIdentities(ctx, cp.Client, scrapers)
		if err != nil {
			t.Fatal(err)
		}
		for _, tok := range []string{ids.ScraperToken, ids.UnboundToken} {
			if !authenticated(t, cp, tok) {
				t.Fatalf("%v: a fresh token is not accepted", scrapers)
			}
		}
		if err := ids.Cleanup(ctx); err != nil {
			t.Fatal(err)
		}
		// The API server learns of the deletion through its informers, within moments.
		framework.WaitFor(t, "the tokens to be revoked", 15*time.Second, func() (bool, error) {
			return !authenticated(t, cp, ids.ScraperToken) && !authenticated(t, cp, ids.UnboundToken), nil
		})
		left := leftovers(t, cp)
		if len(left) > 0 {
			t.Fatalf("%v: cleanup left %v", scrapers, left)
		}
	}
	// A failure half way (the scraper ServiceAccount does not exist) leaves nothing.
	ids, err := verify.NewIdentities(ctx, cp.Client, []metricsv1alpha1.Scraper{{Kind: metricsv1alpha1.ScraperServiceAccount, Name: "missing", Namespace: "monitoring"}})
	if err == nil || !strings.Contains(err.Error(), "monitoring/missing") {
		t.Fatalf("err = %v", err)
	}
	if err := ids.Cleanup(ctx); err != nil {
		t.Fatal(err)
	}
	if left := leftovers(t, cp); len(left) > 0 {
		t.Fatalf("a failed start left %v", left)
	}
}

func authenticated(t *testing.T, cp *framework.ControlPlane, token string) bool {
	t.Helper()
	tr, err := cp.Client.AuthenticationV1().TokenReviews().Create(context.Background(), &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: token}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return tr.Status.Authenticated
}

// leftovers lists the objects labelled as eksa-metrics' in the namespaces verify uses.
func leftovers(t *testing.T, cp *framework.ControlPlane) []string {
	t.Helper()
	ctx := context.Background()
	sel := metav1.ListOptions{LabelSelector: templates.ManagedByLabel + "=" + templates.Prefix}
	var out []string
	for _, ns := range []string{"monitoring", verify.Namespace} {
		secrets, _ := cp.Client.CoreV1().Secrets(ns).List(ctx, sel)
		for _, s := range secrets.Items {
			out = append(out, "Secret "+ns+"/"+s.Name)
		}
		sas, _ := cp.Client.CoreV1().ServiceAccounts(ns).List(ctx, sel)
		for _, s := range sas.Items {
			out = append(out, "ServiceAccount "+ns+"/"+s.Name)
		}
	}
	crbs, _ := cp.Client.RbacV1().ClusterRoleBindings().List(ctx, sel)
	for _, b := range crbs.Items {
		out = append(out, "ClusterRoleBinding "+b.Name)
	}
	return out
}
