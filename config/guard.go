package config

import (
	"context"
	"fmt"
	"strings"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// AdmissionPolicyError says why the live admission policy does not hold
// the controller as shipped.
type AdmissionPolicyError struct{ Why string }

func (e *AdmissionPolicyError) Error() string {
	return "the controller's admission policy does not hold it: " + e.Why + "; nothing is written until ValidatingAdmissionPolicy and ValidatingAdmissionPolicyBinding " + ControllerName +
		" are the ones `eksa-metrics controller manifests` prints with the same policy flags (apply them again)"
}

// ControllerNamespace asks the API server who client is (a
// SelfSubjectReview, which persists nothing) and returns the namespace of
// the controller's ServiceAccount; an AdmissionPolicyError when client is
// not that ServiceAccount, which the policy alone holds.
func ControllerNamespace(ctx context.Context, client kubernetes.Interface) (string, error) {
	review, err := client.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("asking the management cluster who the controller is (SelfSubjectReview): %w", err)
	}
	user := review.Status.UserInfo.Username
	ns, name, ok := strings.Cut(strings.TrimPrefix(user, "system:serviceaccount:"), ":")
	if !ok || !strings.HasPrefix(user, "system:serviceaccount:") || name != ControllerName {
		return "", &AdmissionPolicyError{Why: fmt.Sprintf("it runs as %s, and the policy holds ServiceAccount %s only", user, ControllerName)}
	}
	return ns, nil
}

// CheckAdmissionPolicy says how the live ValidatingAdmissionPolicy and its
// binding differ from the ones the manifests ship for o (nil: as shipped):
// the policy's match rules, match conditions, validations and failure
// policy, and a binding that denies, with no parameters and no narrower
// match. o.Namespace is the controller's (ControllerNamespace).
func CheckAdmissionPolicy(ctx context.Context, client kubernetes.Interface, o Options) error {
	objs := admissionPolicy(o.withDefaults(), nil)
	want, wantBinding := objs[0].(*admissionv1.ValidatingAdmissionPolicy), objs[1].(*admissionv1.ValidatingAdmissionPolicyBinding)

	live, err := client.AdmissionregistrationV1().ValidatingAdmissionPolicies().Get(ctx, ControllerName, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return &AdmissionPolicyError{Why: "ValidatingAdmissionPolicy " + ControllerName + " does not exist (a management cluster below Kubernetes 1.30 serves none: run with --without-admission-policy there)"}
	case err != nil:
		return fmt.Errorf("reading ValidatingAdmissionPolicy %s: %w", ControllerName, err)
	}
	got := live.Spec
	switch {
	case got.FailurePolicy == nil || *got.FailurePolicy != admissionv1.Fail:
		return &AdmissionPolicyError{Why: "its failurePolicy is not Fail"}
	case !apiequality.Semantic.DeepEqual(normalRules(got.MatchConstraints), normalRules(want.Spec.MatchConstraints)):
		return &AdmissionPolicyError{Why: "its matchConstraints are not the ones shipped"}
	case !apiequality.Semantic.DeepEqual(got.MatchConditions, want.Spec.MatchConditions):
		return &AdmissionPolicyError{Why: "its matchConditions are not the ones shipped (they name who it holds)"}
	case !apiequality.Semantic.DeepEqual(got.Validations, want.Spec.Validations):
		return &AdmissionPolicyError{Why: "its validations are not the ones shipped"}
	case len(got.Variables) > 0 || got.ParamKind != nil:
		return &AdmissionPolicyError{Why: "it has variables or parameters the shipped one has not"}
	}
	binding, err := client.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Get(ctx, ControllerName, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return &AdmissionPolicyError{Why: "ValidatingAdmissionPolicyBinding " + ControllerName + " does not exist, so the policy holds nothing"}
	case err != nil:
		return fmt.Errorf("reading ValidatingAdmissionPolicyBinding %s: %w", ControllerName, err)
	}
	b := binding.Spec
	switch {
	case b.PolicyName != wantBinding.Spec.PolicyName:
		return &AdmissionPolicyError{Why: "its binding binds policy " + b.PolicyName}
	case !apiequality.Semantic.DeepEqual(b.ValidationActions, wantBinding.Spec.ValidationActions):
		return &AdmissionPolicyError{Why: fmt.Sprintf("its binding's validationActions are %v, not [Deny]", b.ValidationActions)}
	case b.ParamRef != nil:
		return &AdmissionPolicyError{Why: "its binding has a paramRef"}
	case !everything(b.MatchResources):
		return &AdmissionPolicyError{Why: "its binding narrows what the policy matches (matchResources)"}
	}
	return nil
}

// normalRules is a policy's match constraints with the API server's
// defaults filled in (matchPolicy Equivalent, empty selectors, scope *).
func normalRules(m *admissionv1.MatchResources) admissionv1.MatchResources {
	var out admissionv1.MatchResources
	if m != nil {
		out = *m.DeepCopy()
	}
	if out.MatchPolicy == nil {
		p := admissionv1.Equivalent
		out.MatchPolicy = &p
	}
	if out.NamespaceSelector == nil {
		out.NamespaceSelector = &metav1.LabelSelector{}
	}
	if out.ObjectSelector == nil {
		out.ObjectSelector = &metav1.LabelSelector{}
	}
	for i := range out.ResourceRules {
		if out.ResourceRules[i].Scope == nil {
			s := admissionv1.AllScopes
			out.ResourceRules[i].Scope = &s
		}
	}
	return out
}

// everything: a binding's matchResources narrows nothing.
func everything(m *admissionv1.MatchResources) bool {
	if m == nil {
		return true
	}
	n := normalRules(m)
	return len(n.ResourceRules) == 0 && len(n.ExcludeResourceRules) == 0 &&
		len(n.NamespaceSelector.MatchLabels)+len(n.NamespaceSelector.MatchExpressions) == 0 &&
		len(n.ObjectSelector.MatchLabels)+len(n.ObjectSelector.MatchExpressions) == 0
}
