package controller

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
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
// ServiceAccount may do, they may do. Reading or watching Secrets; running,
// entering, attaching to or debugging pods; reaching nodes, pods or
// Services through the API server's proxy; minting tokens; changing Nodes,
// workloads or Jobs (which run pods); granting, escalating or
// impersonating; approving or signing certificates; admitting requests.
var harmful = func() []authorizationv1.ResourceAttributes {
	var out []authorizationv1.ResourceAttributes
	add := func(group, resource, sub string, verbs ...string) {
		for _, v := range verbs {
			out = append(out, authorizationv1.ResourceAttributes{Verb: v, Group: group, Resource: resource, Subresource: sub})
		}
	}
	add("", "secrets", "", "get", "list", "watch")
	add("", "pods", "", "create")
	for _, sub := range []string{"exec", "attach", "portforward", "proxy"} {
		add("", "pods", sub, "create", "get")
	}
	add("", "pods", "ephemeralcontainers", "patch", "update")
	add("", "services", "proxy", "create", "get")
	add("", "nodes", "proxy", "create", "get")
	add("", "nodes", "", "patch", "update")
	add("", "serviceaccounts", "token", "create")
	add("", "persistentvolumes", "", "create")
	for _, r := range []string{"daemonsets", "deployments", "statefulsets", "replicasets"} {
		add("apps", r, "", "create", "patch", "update")
	}
	add("", "replicationcontrollers", "", "create", "patch", "update")
	add("batch", "jobs", "", "create", "patch")
	add("batch", "cronjobs", "", "create", "patch")
	for _, r := range []string{"clusterroles", "roles"} {
		add("rbac.authorization.k8s.io", r, "", "escalate", "bind", "create", "patch", "update")
	}
	for _, r := range []string{"clusterrolebindings", "rolebindings"} {
		add("rbac.authorization.k8s.io", r, "", "create", "patch", "update")
	}
	for _, r := range []string{"users", "groups", "serviceaccounts", "uids"} {
		add("", r, "", "impersonate")
	}
	add("certificates.k8s.io", "certificatesigningrequests", "approval", "update")
	add("certificates.k8s.io", "signers", "", "approve", "sign")
	for _, r := range []string{"mutatingwebhookconfigurations", "validatingwebhookconfigurations", "validatingadmissionpolicies", "validatingadmissionpolicybindings", "mutatingadmissionpolicies", "mutatingadmissionpolicybindings"} {
		add("admissionregistration.k8s.io", r, "", "create", "patch", "update", "delete")
	}
	return out
}()

// ScraperNotHarmlessError says that the ServiceAccount a scraper token
// Secret would be written for may do more than scrape.
type ScraperNotHarmlessError struct {
	ServiceAccount, Cluster string
	Can                     []string
	// Withdrawn: the token Secret written before was deleted.
	Withdrawn bool
}

func (e *ScraperNotHarmlessError) Error() string {
	withdrawn := ""
	if e.Withdrawn {
		withdrawn = " (its token Secret " + templates.ScraperTokenSecret + ", written while it could not, was withdrawn)"
	}
	return field.Forbidden(field.NewPath("spec", "scrapers"), fmt.Sprintf(
		"ServiceAccount %s in the %s can %s%s: a never-expiring token of it would be given to the monitoring agent and sent to every scrape target; name a ServiceAccount that only scrapes (the one a Prometheus or agent runs as), or set scrapeConfig.credentialsFile",
		e.ServiceAccount, e.Cluster, strings.Join(e.Can, ", "), withdrawn)).Error()
}

// ScraperRecheck is how often the controller asks again what a scraper's
// ServiceAccount may do once its token Secret exists (ControllerOptions).
const ScraperRecheck = 10 * time.Minute

// harmChecks remembers when each scraper ServiceAccount of each cluster was
// last found harmless.
type harmChecks struct {
	mu    sync.Mutex
	at    map[string]time.Time
	every time.Duration
}

// due says whether a ServiceAccount's rights must be asked now: always
// before its token Secret is first written, and once every period after.
// A Secret first seen by this process (after a restart) counts as checked
// now, so that the restart of a converged fleet sends no review at once.
func (h *harmChecks) due(key string, exists bool, now time.Time) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.at == nil {
		h.at = map[string]time.Time{}
	}
	last, seen := h.at[key]
	switch {
	case !exists:
		return true
	case !seen:
		h.at[key] = now
		return false
	}
	return now.Sub(last) >= h.every
}

func (h *harmChecks) checked(key string, now time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.at[key] = now
}

// scraperTokenHarmless checks, before the scraper token Secret is first
// written for a ServiceAccount and then once every checks.every, that its
// token carries none of the harmful rights, by SubjectAccessReviews in the
// cluster that issues it: in every namespace, the ServiceAccount's own,
// kube-system, and each namespace where a RoleBinding names the
// ServiceAccount or a group it is in. When the answer is no longer
// harmless, the token Secret eksa-metrics wrote is withdrawn (deleted: the
// agent's token stops working once it is gone) and the error says why.
func scraperTokenHarmless(ctx context.Context, cl *cluster.Cluster, res *render.Result, checks *harmChecks) error {
	now := time.Now()
	for _, o := range res.Objects {
		if o.Destination == render.Management || o.Kind() != "Secret" || o.Name() != templates.ScraperTokenSecret {
			continue
		}
		md, _ := o.Object["metadata"].(map[string]any)
		ann, _ := md["annotations"].(map[string]any)
		sa, _ := ann[corev1.ServiceAccountNameKey].(string)
		ns := o.Namespace()
		live, err := cl.Core.CoreV1().Secrets(ns).Get(ctx, o.Name(), metav1.GetOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("reading Secret %s/%s in the %s: %w", ns, o.Name(), cl, err)
		}
		exists := err == nil && live.Annotations[corev1.ServiceAccountNameKey] == sa
		key := cl.String() + "/" + ns + "/" + sa
		if !checks.due(key, exists, now) {
			continue
		}
		can, err := scraperRights(ctx, cl, ns, sa)
		if err != nil {
			return err
		}
		if len(can) == 0 {
			checks.checked(key, now)
			continue
		}
		harm := &ScraperNotHarmlessError{ServiceAccount: ns + "/" + sa, Cluster: cl.String(), Can: can}
		if exists && live.Labels[templates.ManagedByLabel] == templates.Prefix {
			uid := live.UID
			err := cl.Core.CoreV1().Secrets(ns).Delete(ctx, live.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
			if err != nil && !apierrors.IsNotFound(err) {
				return fmt.Errorf("withdrawing Secret %s/%s in the %s (%v): %w", ns, live.Name, cl, harm, err)
			}
			harm.Withdrawn = true
		}
		return harm
	}
	return nil
}

// scraperRights are the harmful rights ServiceAccount ns/sa has in cl.
func scraperRights(ctx context.Context, cl *cluster.Cluster, ns, sa string) ([]string, error) {
	user := fmt.Sprintf("system:serviceaccount:%s:%s", ns, sa)
	groups := []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"}
	where := []string{"", ns, metav1.NamespaceSystem}
	bindings, err := cl.Core.RbacV1().RoleBindings("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing the RoleBindings of the %s: %w", cl, err)
	}
	for _, b := range bindings.Items {
		for _, s := range b.Subjects {
			named := (s.Kind == rbacv1.ServiceAccountKind && s.Name == sa && s.Namespace == ns) || (s.Kind == rbacv1.UserKind && s.Name == user) ||
				(s.Kind == rbacv1.GroupKind && slices.Contains(groups, s.Name))
			if named && !slices.Contains(where, b.Namespace) {
				where = append(where, b.Namespace)
			}
		}
	}
	var can []string
	for _, attrs := range harmful {
		for _, w := range where {
			a := attrs
			a.Namespace = w
			review, err := cl.Core.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{
				Spec: authorizationv1.SubjectAccessReviewSpec{User: user, Groups: groups, ResourceAttributes: &a}}, metav1.CreateOptions{})
			if err != nil {
				return nil, fmt.Errorf("asking the %s what ServiceAccount %s/%s may do: %w", cl, ns, sa, err)
			}
			if review.Status.Allowed {
				can = append(can, describe(a))
				break
			}
		}
	}
	return can, nil
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
