package e2e

import (
	"context"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/eksa-metrics/eksa-metrics/pkg/render"
	"github.com/eksa-metrics/eksa-metrics/test/framework"
)

type access struct {
	verb, resource, subresource, group, path string
	allowed                                  bool
}

// sarMatrix asks the API server, through SubjectAccessReviews, what each
// scraper may do once the rendered RBAC is applied: exactly the metrics
// paths and nodes/metrics (plus the kubelet z-page subresources), nothing else.
func sarMatrix(t *testing.T, cp *framework.ControlPlane, r *render.Result) int {

	checks := []access{
		{verb: "get", path: "/metrics", allowed: true},
		{verb: "get", path: "/metrics/slis", allowed: true},
		{verb: "get", path: "/metrics/resources", allowed: true},
		{verb: "get", path: "/statusz", allowed: r.Config.Statusz},
		{verb: "get", path: "/flagz", allowed: r.Config.Flagz},
		{verb: "get", resource: "nodes", subresource: "metrics", allowed: true},
		{verb: "get", resource: "nodes", subresource: "statusz", allowed: r.Config.Statusz},
		{verb: "get", resource: "nodes", subresource: "configz", allowed: r.Config.Flagz},
		{verb: "get", resource: "nodes", subresource: "proxy"},
		{verb: "create", resource: "nodes", subresource: "proxy"},
		{verb: "get", resource: "nodes", subresource: "log"},
		{verb: "get", resource: "nodes", subresource: "stats"},
		{verb: "create", resource: "pods", subresource: "exec"},
		{verb: "get", resource: "secrets"},
		{verb: "list", resource: "secrets"},
		{verb: "list", resource: "nodes"},
		{verb: "delete", resource: "nodes", subresource: "metrics"},
		{verb: "get", path: "/configz"},
		{verb: "get", path: "/debug/pprof/"},
		{verb: "put", path: "/debug/flags/v"},
		{verb: "post", path: "/metrics"},
		{verb: "delete", path: "/metrics"},
		{verb: "get", path: "/logs"}, // /api is every authenticated user's through system:discovery
		{verb: "impersonate", resource: "users"},
		{verb: "impersonate", resource: "serviceaccounts"},
		{verb: "bind", resource: "clusterroles", group: "rbac.authorization.k8s.io"},
		{verb: "escalate", resource: "clusterroles", group: "rbac.authorization.k8s.io"},
	}
	identities := []struct {
		name   string
		user   string
		groups []string
		bound  bool
	}{
		{"ServiceAccount scraper", "system:serviceaccount:" + scraperNS + ":" + scraperSA, []string{"system:serviceaccounts", "system:serviceaccounts:" + scraperNS, "system:authenticated"}, true},
		{"Group scraper", "someone", []string{scraperGroup, "system:authenticated"}, true},
		{"unbound ServiceAccount", "system:serviceaccount:" + unboundNS + ":" + unboundSA, []string{"system:serviceaccounts", "system:serviceaccounts:" + unboundNS, "system:authenticated"}, false},
	}
	n := 0
	for _, id := range identities {
		for _, c := range checks {
			sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{User: id.user, Groups: id.groups}}
			what := c.verb + " " + c.path
			if c.path != "" {
				sar.Spec.NonResourceAttributes = &authorizationv1.NonResourceAttributes{Verb: c.verb, Path: c.path}
			} else {
				sar.Spec.ResourceAttributes = &authorizationv1.ResourceAttributes{Verb: c.verb, Group: c.group, Resource: c.resource, Subresource: c.subresource, Name: "node-1"}
				what = c.verb + " " + c.resource + "/" + c.subresource
			}
			res, err := cp.Client.AuthorizationV1().SubjectAccessReviews().Create(context.Background(), sar, metav1.CreateOptions{})
			if err != nil {
				t.Fatalf("SubjectAccessReview: %v", err)
			}
			n++
			want := c.allowed && id.bound
			if res.Status.Allowed != want {
				t.Errorf("%s may %s: %t, want %t (%s)", id.name, what, res.Status.Allowed, want, res.Status.Reason)
			}
		}
	}
	return n
}
