package verify

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"

	metricsv1alpha1 "github.com/eksa-metrics/eksa-metrics/pkg/apis/metrics/v1alpha1"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/eksa-metrics/eksa-metrics/pkg/templates"
)

// Namespace is where verify's temporary ServiceAccounts live.
const Namespace = "kube-system"

// tokenSeconds is the shortest lifetime the TokenRequest API grants.
const tokenSeconds = 600

// Identities are the tokens verify scrapes with, and the temporary objects
// behind them. Every token is bound to a temporary Secret, so deleting it in
// Cleanup revokes the token at once, whatever its expiry.
type Identities struct {
	ScraperToken string
	UnboundToken string

	core   kubernetes.Interface
	suffix string
	undo   []func(context.Context) error
}

// NewIdentities creates a token for the scraper (the scraper ServiceAccount's
// own, or a temporary ServiceAccount bound to the reader role for User and
// Group scrapers) and one for a temporary ServiceAccount with no binding.
// Call Cleanup afterwards, also when this fails: what was made is deleted.
func NewIdentities(ctx context.Context, core kubernetes.Interface, scrapers []metricsv1alpha1.Scraper) (*Identities, error) {
	ids := &Identities{core: core, suffix: randomSuffix()}
	var sa *metricsv1alpha1.Scraper
	for i := range scrapers {
		if scrapers[i].Kind == metricsv1alpha1.ScraperServiceAccount {
			sa = &scrapers[i]
			break
		}
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
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{templates.ManagedByLabel: templates.Prefix}},
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

func randomSuffix() string {
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func (ids *Identities) serviceAccount(ctx context.Context, name string) error {
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: Namespace, Labels: map[string]string{templates.ManagedByLabel: templates.Prefix}}}
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
		ObjectMeta: metav1.ObjectMeta{Name: anchor, Namespace: ns, Labels: map[string]string{templates.ManagedByLabel: templates.Prefix},
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
