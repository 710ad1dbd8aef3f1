package controller

import (
	"context"
	"fmt"
	"strings"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/eksa-metrics/eksa-metrics/pkg/cluster"
	"github.com/eksa-metrics/eksa-metrics/pkg/render"
	"github.com/eksa-metrics/eksa-metrics/pkg/templates"
)

// harmful are rights a scraper's token must not carry: the token Secret
// (kubernetes.io/service-account-token, which never expires) is read by the
// monitoring agent and sent to every scrape target, so whatever the
// ServiceAccount may do, they may do. Reading Secrets, running or entering
// pods, minting tokens, reaching nodes, granting or impersonating, approving
// certificates, admitting requests.
var harmful = []authorizationv1.ResourceAttributes{
	{Verb: "get", Resource: "secrets"},
	{Verb: "list", Resource: "secrets"},
	{Verb: "create", Resource: "pods"},
	{Verb: "create", Resource: "pods", Subresource: "exec"},
	{Verb: "create", Resource: "serviceaccounts", Subresource: "token"},
	{Verb: "create", Resource: "nodes", Subresource: "proxy"},
	{Verb: "patch", Resource: "nodes"},
	{Verb: "create", Group: "apps", Resource: "daemonsets"},
	{Verb: "create", Group: "apps", Resource: "deployments"},
	{Verb: "escalate", Group: "rbac.authorization.k8s.io", Resource: "clusterroles"},
	{Verb: "bind", Group: "rbac.authorization.k8s.io", Resource: "clusterroles"},
	{Verb: "create", Group: "rbac.authorization.k8s.io", Resource: "rolebindings"},
	{Verb: "impersonate", Resource: "serviceaccounts"},
	{Verb: "impersonate", Resource: "users"},
	{Verb: "impersonate", Resource: "groups"},
	{Verb: "update", Group: "certificates.k8s.io", Resource: "certificatesigningrequests", Subresource: "approval"},
	{Verb: "create", Group: "admissionregistration.k8s.io", Resource: "mutatingwebhookconfigurations"},
}

// ScraperNotHarmlessError says that the ServiceAccount a scraper token
// Secret would be written for may do more than scrape.
type ScraperNotHarmlessError struct {
	ServiceAccount, Cluster string
	Can                     []string
}

func (e *ScraperNotHarmlessError) Error() string {
	return field.Forbidden(field.NewPath("spec", "scrapers"), fmt.Sprintf(
		"ServiceAccount %s in the %s can %s: a never-expiring token of it would be given to the monitoring agent and sent to every scrape target; name a ServiceAccount that only scrapes (the one a Prometheus or agent runs as), or set scrapeConfig.credentialsFile",
		e.ServiceAccount, e.Cluster, strings.Join(e.Can, ", "))).Error()
}

// scraperTokenHarmless checks, before the scraper token Secret is first
// written for a ServiceAccount, that its token carries none of the harmful
// rights, by SubjectAccessReviews in the cluster that issues it (all
// namespaces, the ServiceAccount's own, kube-system). A token Secret that
// is there already for the same ServiceAccount is not checked again (its
// token exists; the reconcile of a converged cluster sends no review).
func scraperTokenHarmless(ctx context.Context, cl *cluster.Cluster, res *render.Result) error {
	for _, o := range res.Objects {
		if o.Destination == render.Management || o.Kind() != "Secret" || o.Name() != templates.ScraperTokenSecret {
			continue
		}
		md, _ := o.Object["metadata"].(map[string]any)
		ann, _ := md["annotations"].(map[string]any)
		sa, _ := ann[corev1.ServiceAccountNameKey].(string)
		ns := o.Namespace()
		live, err := cl.Core.CoreV1().Secrets(ns).Get(ctx, o.Name(), metav1.GetOptions{})
		switch {
		case err == nil && live.Annotations[corev1.ServiceAccountNameKey] == sa:
			continue
		case err != nil && !apierrors.IsNotFound(err):
			return fmt.Errorf("reading Secret %s/%s in the %s: %w", ns, o.Name(), cl, err)
		}
		user := fmt.Sprintf("system:serviceaccount:%s:%s", ns, sa)
		groups := []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"}
		var can []string
		for _, attrs := range harmful {
			for _, where := range []string{"", ns, "kube-system"} {
				a := attrs
				a.Namespace = where
				review, err := cl.Core.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{
					Spec: authorizationv1.SubjectAccessReviewSpec{User: user, Groups: groups, ResourceAttributes: &a}}, metav1.CreateOptions{})
				if err != nil {
					return fmt.Errorf("asking the %s what ServiceAccount %s/%s may do: %w", cl, ns, sa, err)
				}
				if review.Status.Allowed {
					can = append(can, describe(a))
					break
				}
			}
		}
		if len(can) > 0 {
			return &ScraperNotHarmlessError{ServiceAccount: ns + "/" + sa, Cluster: cl.String(), Can: can}
		}
	}
	return nil
}

func describe(a authorizationv1.ResourceAttributes) string {
	res := a.Resource
	if a.Subresource != "" {
		res += "/" + a.Subresource
	}
	where := "in every namespace"
	if a.Namespace != "" {
		where = "in " + a.Namespace
	}
	return a.Verb + " " + res + " " + where
}
