package verify

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	metricsv1alpha1 "github.com/eksa-metrics/eksa-metrics/pkg/apis/metrics/v1alpha1"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	typedrbacv1 "k8s.io/client-go/kubernetes/typed/rbac/v1"

	"github.com/eksa-metrics/eksa-metrics/pkg/templates"
)

// Namespace is where verify's temporary ServiceAccounts live.
const Namespace = "kube-system"

// tokenSeconds is the shortest lifetime the TokenRequest API grants.
const tokenSeconds = 600

// RunLabel is on every temporary object of a verify run (with the
// app.kubernetes.io/managed-by label); its value is the run's id.
const RunLabel = "eksa-metrics/verify-run"

// StaleAfter is the age from which a temporary object of another verify run
// is a leftover (of a run that was killed, SIGKILL or a lost machine, before
// its cleanup): that run's tokens expired after tokenSeconds, and a run uses
// its tokens only while it runs, so no verify still running needs it. Five
// minutes more absorb a clock skew between this machine and the API server.
// Two verify runs at once keep each other's objects.
const StaleAfter = tokenSeconds*time.Second + 5*time.Minute

// IdentityOptions control NewIdentities.
type IdentityOptions struct {
	// StaleAfter replaces the package's StaleAfter (tests).
	StaleAfter time.Duration
	// Removed is told of each leftover deleted, as "Kind namespace/name".
	Removed func(object string)
	// Failed is told why leftovers could not be listed or deleted; the run
	// goes on.
	Failed func(error)
}

// Identities are the tokens verify scrapes with, and the temporary objects
// behind them. Every token is bound to a temporary Secret, so deleting it in
// Cleanup revokes the token at once, whatever its expiry.
type Identities struct {
	ScraperToken string
	UnboundToken string

	core   Clients
	suffix string
	undo   []func(context.Context) error
}

// Clients are the typed clients identities are made and removed with (a
// kubernetes.Interface is one).
type Clients interface {
	CoreV1() typedcorev1.CoreV1Interface
	RbacV1() typedrbacv1.RbacV1Interface
}

// NewIdentities creates a token for the scraper (the scraper ServiceAccount's
// own, or a temporary ServiceAccount bound to the reader role for User and
// Group scrapers) and one for a temporary ServiceAccount with no binding,
// each object labelled with RunLabel. First it deletes what earlier runs
// left (DeleteLeftovers). Call Cleanup afterwards, also when this fails:
// what was made is deleted.
func NewIdentities(ctx context.Context, core Clients, scrapers []metricsv1alpha1.Scraper, opts IdentityOptions) (*Identities, error) {
	ids := &Identities{core: core, suffix: randomSuffix()}
	var sa *metricsv1alpha1.Scraper
	for i := range scrapers {
		if scrapers[i].Kind == metricsv1alpha1.ScraperServiceAccount {
			sa = &scrapers[i]
			break
		}
	}
	stale := opts.StaleAfter
	if stale == 0 {
		stale = StaleAfter
	}
	namespaces := []string{Namespace}
	if sa != nil && sa.Namespace != Namespace {
		namespaces = append(namespaces, sa.Namespace)
	}
	removed, leftErr := DeleteLeftovers(ctx, core, namespaces, ids.suffix, time.Now().Add(-stale))
	for _, r := range removed {
		if opts.Removed != nil {
			opts.Removed(r)
		}
	}
	if leftErr != nil && opts.Failed != nil {
		opts.Failed(fmt.Errorf("deleting what earlier verify runs left: %w", leftErr))
	}
	var err error
	if sa != nil {
		if ids.ScraperToken, err = ids.token(ctx, sa.Namespace, sa.Name); err != nil {
			return ids, fmt.Errorf("the scraper ServiceAccount %s/%s: %w; create it (it is the identity Prometheus runs as) or fix spec.scrapers", sa.Namespace, sa.Name, err)
		}
	} else {
		name := templates.Prefix + "-verify-scraper-" + ids.suffix
		if err := ids.serviceAccount(ctx, name); err != nil {
			return ids, err
		}
		crb := &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: ids.labels()},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: templates.ReaderRole},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: name, Namespace: Namespace}},
		}
		ids.later(func(c context.Context) error {
			return ids.core.RbacV1().ClusterRoleBindings().Delete(c, name, metav1.DeleteOptions{})
		})
		if _, err := ids.core.RbacV1().ClusterRoleBindings().Create(ctx, crb, metav1.CreateOptions{}); err != nil {
			return ids, fmt.Errorf("binding a temporary scraper for the User/Group scrapers: %w", err)
		}
		if ids.ScraperToken, err = ids.token(ctx, Namespace, name); err != nil {
			return ids, err
		}
	}
	unbound := templates.Prefix + "-verify-unbound-" + ids.suffix
	if err := ids.serviceAccount(ctx, unbound); err != nil {
		return ids, err
	}
	ids.UnboundToken, err = ids.token(ctx, Namespace, unbound)
	return ids, err
}

// later registers an undo step before the object it undoes is created, so
// that nothing is left behind whatever fails in between.
func (ids *Identities) later(f func(context.Context) error) {
	ids.undo = append(ids.undo, func(c context.Context) error {
		if err := f(c); err != nil && !apierrors.IsNotFound(err) {
			return err
		}
		return nil
	})
}

// Cleanup deletes what was made, newest first. Pass a context of its own so
// that it also runs after Ctrl-C cancelled the work.
func (ids *Identities) Cleanup(ctx context.Context) error {
	var errs []error
	for i := len(ids.undo) - 1; i >= 0; i-- {
		errs = append(errs, ids.undo[i](ctx))
	}
	ids.undo = nil
	return errors.Join(errs...)
}

// labels are those of every temporary object of the run.
func (ids *Identities) labels() map[string]string {
	return map[string]string{templates.ManagedByLabel: templates.Prefix, RunLabel: ids.suffix}
}

// verifyPrefix starts the name of every temporary object of verify (also
// those of versions before RunLabel, which carry only managed-by).
const verifyPrefix = templates.Prefix + "-verify-"

// leftover reports whether an object is a temporary object of another
// verify run, created before cutoff. Rendered objects carry managed-by too,
// never RunLabel or a name starting with verifyPrefix.
func leftover(md metav1.Object, run string, cutoff time.Time) bool {
	id, labelled := md.GetLabels()[RunLabel]
	if !labelled && !strings.HasPrefix(md.GetName(), verifyPrefix) || labelled && id == run {
		return false
	}
	return md.GetCreationTimestamp().Time.Before(cutoff)
}

// DeleteLeftovers deletes the temporary Secrets, ServiceAccounts and
// ClusterRoleBindings of verify runs other than run that were created
// before cutoff, and returns what it deleted. It looks for Secrets and
// ServiceAccounts in every namespace, or, when it may not list them there,
// in namespaces (the ones this run uses). Each deletion is conditional on
// the object's UID; one that is gone already (another run deleted it) is
// no error.
func DeleteLeftovers(ctx context.Context, core Clients, namespaces []string, run string, cutoff time.Time) ([]string, error) {
	sel := metav1.ListOptions{LabelSelector: templates.ManagedByLabel + "=" + templates.Prefix}
	var removed []string
	var errs []error
	del := func(kind, ns, name string, uid types.UID, f func(context.Context, string, metav1.DeleteOptions) error) {
		err := f(ctx, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
		switch {
		case err == nil:
			removed = append(removed, templates.ObjectName(kind, ns, name))
		case apierrors.IsNotFound(err) || apierrors.IsConflict(err):
		default:
			errs = append(errs, fmt.Errorf("deleting %s: %w", templates.ObjectName(kind, ns, name), err))
		}
	}
	inNamespaces := func(list func(ns string) error) {
		err := list(metav1.NamespaceAll)
		if !apierrors.IsForbidden(err) {
			if err != nil {
				errs = append(errs, err)
			}
			return
		}
		for _, ns := range namespaces {
			if err := list(ns); err != nil {
				errs = append(errs, err)
			}
		}
	}
	inNamespaces(func(ns string) error {
		l, err := core.CoreV1().Secrets(ns).List(ctx, sel)
		if err != nil {
			return err
		}
		for i := range l.Items {
			if s := &l.Items[i]; leftover(s, run, cutoff) {
				del("Secret", s.Namespace, s.Name, s.UID, core.CoreV1().Secrets(s.Namespace).Delete)
			}
		}
		return nil
	})
	inNamespaces(func(ns string) error {
		l, err := core.CoreV1().ServiceAccounts(ns).List(ctx, sel)
		if err != nil {
			return err
		}
		for i := range l.Items {
			if s := &l.Items[i]; leftover(s, run, cutoff) {
				del("ServiceAccount", s.Namespace, s.Name, s.UID, core.CoreV1().ServiceAccounts(s.Namespace).Delete)
			}
		}
		return nil
	})
	if l, err := core.RbacV1().ClusterRoleBindings().List(ctx, sel); err != nil {
		errs = append(errs, err)
	} else {
		for i := range l.Items {
			if b := &l.Items[i]; leftover(b, run, cutoff) {
				del("ClusterRoleBinding", "", b.Name, b.UID, core.RbacV1().ClusterRoleBindings().Delete)
			}
		}
	}
	sort.Strings(removed)
	return removed, errors.Join(errs...)
}

func randomSuffix() string {
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func (ids *Identities) serviceAccount(ctx context.Context, name string) error {
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: Namespace, Labels: ids.labels()}}
	ids.later(func(c context.Context) error {
		return ids.core.CoreV1().ServiceAccounts(Namespace).Delete(c, name, metav1.DeleteOptions{})
	})
	if _, err := ids.core.CoreV1().ServiceAccounts(Namespace).Create(ctx, sa, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating the temporary ServiceAccount %s/%s: %w", Namespace, name, err)
	}
	return nil
}

// token issues a short-lived token for a ServiceAccount, bound to a temporary
// Secret in its namespace (TokenRequest binds only to objects there).
func (ids *Identities) token(ctx context.Context, ns, name string) (string, error) {
	anchor := fmt.Sprintf("%s-verify-%s-%s", templates.Prefix, ids.suffix, name)
	if len(anchor) > 253 {
		anchor = anchor[:253]
	}
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: anchor, Namespace: ns, Labels: ids.labels(),
			Annotations: map[string]string{"eksa-metrics/purpose": "eksa-metrics verify binds its short-lived tokens to this empty Secret; deleting it revokes them"}},
		Type: corev1.SecretTypeOpaque,
	}
	ids.later(func(c context.Context) error {
		return ids.core.CoreV1().Secrets(ns).Delete(c, anchor, metav1.DeleteOptions{})
	})
	created, err := ids.core.CoreV1().Secrets(ns).Create(ctx, secret, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("creating the temporary Secret %s/%s that its token is bound to: %w", ns, anchor, err)
	}
	exp := int64(tokenSeconds)
	tr, err := ids.core.CoreV1().ServiceAccounts(ns).CreateToken(ctx, name, &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
		ExpirationSeconds: &exp,
		BoundObjectRef:    &authenticationv1.BoundObjectReference{Kind: "Secret", APIVersion: "v1", Name: anchor, UID: types.UID(created.UID)},
	}}, metav1.CreateOptions{})
	if err != nil {
		return "", err
	}
	return tr.Status.Token, nil
}
