package integration

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/eksa-metrics/eksa-metrics/internal/testutil"
	"github.com/eksa-metrics/eksa-metrics/pkg/spec"
	"github.com/eksa-metrics/eksa-metrics/pkg/templates"
	"github.com/eksa-metrics/eksa-metrics/pkg/validate"
	"github.com/eksa-metrics/eksa-metrics/test/framework"
)

// The security finding, on a real API server holding cert-manager and the
// curated-packages controller as EKS-A v0.26 ships them: after apply, a Pod
// made from each Deployment apply gave a sidecar, created in the API server
// (the ServiceAccount admission plugin runs on Pod create, not on
// Deployment), has the pod ServiceAccount's token (kube-api-access-*)
// mounted into the controller's container and not into the sidecar, which
// mounts its own ServiceAccount's token Secret at that path instead. The
// real token controller of kube-controller-manager fills that Secret; its
// token, with the CA it carries, authenticates as the sidecar's
// ServiceAccount, which may review tokens and access and may not read the
// Secrets cert-manager's token may. A second apply writes nothing; leaving
// cert-manager's controllers out prunes that namespace's sidecar identity
// and keeps the other's.
func TestManagementSidecarHasATokenOfItsOwn(t *testing.T) {
	ctx := context.Background()
	const saDir = "/var/run/secrets/kubernetes.io/serviceaccount"
	cp := framework.StartControlPlane(t, framework.ControlPlaneOptions{Version: kubeVersion})
	cp.InstallCRDs(t, spec.CAPIv1beta2)
	kubeconfig := cp.Kubeconfig(t, "admin", "kubernetes-admin", "system:masters")
	cp.InstallUpstream(t, "cert-manager-v1.20.2.yaml", "eks-anywhere-packages-v0.4.17.yaml")
	tokens := cp.StartTokenController(t, kubeconfig)
	cp.ServiceAccount(t, "monitoring", "prometheus-k8s")
	example := filepath.Join(testutil.RepoRoot(), "examples", "vsphere-management.yaml")
	if code, stderr, _ := apply(t, 0, "-f", example, "--kubeconfig", kubeconfig); code != 0 {
		t.Fatalf("apply: exit %d\n%s", code, stderr)
	}

	sidecars := map[string][]string{"cert-manager": {"cert-manager", "cert-manager-cainjector", "cert-manager-webhook"}, "eksa-packages": {"eks-anywhere-packages"}}
	for ns, names := range sidecars {
		for _, name := range names {
			d, err := cp.Client.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			pod, err := cp.Client.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name + "-admitted", Namespace: ns}, Spec: d.Spec.Template.Spec}, metav1.CreateOptions{})
			if err != nil {
				t.Fatalf("creating a Pod from Deployment %s/%s: %v", ns, name, err)
			}
			podToken := false
			for _, v := range pod.Spec.Volumes {
				podToken = podToken || strings.HasPrefix(v.Name, "kube-api-access-") && v.Projected != nil
			}
			if !podToken {
				t.Errorf("Pod %s/%s: the admission plugin added no kube-api-access volume: %v", ns, pod.Name, pod.Spec.Volumes)
			}
			sidecarSeen := false
			for _, ct := range pod.Spec.Containers {
				var atPath []string
				for _, m := range ct.VolumeMounts {
					if m.MountPath == saDir {
						atPath = append(atPath, m.Name)
					}
				}
				if ct.Name != templates.SidecarName {
					if len(atPath) != 1 || !strings.HasPrefix(atPath[0], "kube-api-access-") {
						t.Errorf("Pod %s/%s: the controller's container %s mounts %v at %s, want its pod ServiceAccount's token (kube-api-access-*) as shipped", ns, pod.Name, ct.Name, atPath, saDir)
					}
					continue
				}
				sidecarSeen = true
				for _, m := range ct.VolumeMounts {
					if strings.HasPrefix(m.Name, "kube-api-access-") {
						t.Errorf("Pod %s/%s: the sidecar mounts the token of the pod's ServiceAccount %s (volume %s at %s)", ns, pod.Name, pod.Spec.ServiceAccountName, m.Name, m.MountPath)
					}
				}
				if len(atPath) != 1 || atPath[0] != templates.SidecarTokenVolume {
					t.Errorf("Pod %s/%s: the sidecar mounts %v at %s, want only %s", ns, pod.Name, atPath, saDir, templates.SidecarTokenVolume)
				}
			}
			if !sidecarSeen {
				t.Errorf("Deployment %s/%s has no sidecar after apply", ns, name)
			}
		}
	}

	// The token controller fills the Secret; its token is the sidecar's
	// identity, and that identity can do what kube-rbac-proxy does, nothing else.
	for ns := range sidecars {
		s := cp.WaitServiceAccountToken(t, ns, templates.SidecarTokenSecret, tokens)
		user := "system:serviceaccount:" + ns + ":" + templates.SidecarSA
		if string(s.Data[corev1.ServiceAccountNamespaceKey]) != ns {
			t.Errorf("Secret %s/%s: namespace %q", ns, templates.SidecarTokenSecret, s.Data[corev1.ServiceAccountNamespaceKey])
		}
		sidecar, err := kubernetes.NewForConfig(&rest.Config{Host: cp.URL, BearerToken: string(s.Data[corev1.ServiceAccountTokenKey]),
			TLSClientConfig: rest.TLSClientConfig{CAData: s.Data[corev1.ServiceAccountRootCAKey]}})
		if err != nil {
			t.Fatal(err)
		}
		tr, err := sidecar.AuthenticationV1().TokenReviews().Create(ctx, &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: string(s.Data[corev1.ServiceAccountTokenKey])}}, metav1.CreateOptions{})
		if err != nil || !tr.Status.Authenticated || tr.Status.User.Username != user {
			t.Errorf("%s: a TokenReview with the sidecar's token, of itself: %v %+v", ns, err, tr)
		}
		if _, err := sidecar.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User: "system:serviceaccount:monitoring:prometheus-k8s", NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: "/metrics", Verb: "get"}}}, metav1.CreateOptions{}); err != nil {
			t.Errorf("%s: a SubjectAccessReview with the sidecar's token: %v", ns, err)
		}
		if _, err := sidecar.CoreV1().Secrets("kube-system").List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
			t.Errorf("%s: the sidecar's token lists the Secrets of kube-system: %v", ns, err)
		}
	}
	// What the sidecar held before: cert-manager's token reads every Secret.
	if !mayList(t, cp, "cert-manager", "cert-manager", "secrets", "kube-system") {
		t.Error("cert-manager's ServiceAccount may not list Secrets in kube-system: the contrast this test relies on is gone")
	}

	if _, stderr, again := apply(t, 0, "-f", example, "--kubeconfig", kubeconfig); again.writes != 0 {
		t.Fatalf("second apply, after the token controller filled the Secrets: %d writes:\n%s", again.writes, stderr)
	}
	if _, res, _ := runValidate(t, "-f", example, "--kubeconfig", kubeconfig); res["drift"].Status != validate.Pass || res["management-components"].Status != validate.Pass {
		t.Errorf("validate: drift=%+v management-components=%+v", res["drift"], res["management-components"])
	}

	// Without sidecars in cert-manager, its sidecar identity goes; the
	// curated-packages one stays.
	raw, err := os.ReadFile(example)
	if err != nil {
		t.Fatal(err)
	}
	excluded := filepath.Join(t.TempDir(), "mgmt.yaml")
	text := strings.Replace(string(raw), "  exposure: proxy\n", "  exposure: proxy\n  managementComponents:\n    exclude: [cert-manager/cert-manager, cert-manager/cert-manager-cainjector, cert-manager/cert-manager-webhook]\n", 1)
	if err := os.WriteFile(excluded, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	code, stderr, _ := apply(t, 0, "-f", excluded, "--kubeconfig", kubeconfig)
	for _, want := range []string{"- prune ServiceAccount cert-manager/" + templates.SidecarSA, "- prune Secret cert-manager/" + templates.SidecarTokenSecret,
		"- prune ClusterRoleBinding " + templates.SidecarSA + ":cert-manager:auth-delegator"} {
		if code != 0 || !strings.Contains(stderr, want) {
			t.Fatalf("apply with cert-manager excluded lacks %q (exit %d):\n%s", want, code, stderr)
		}
	}
	if strings.Contains(stderr, "prune ServiceAccount eksa-packages/") || strings.Contains(stderr, "prune Secret eksa-packages/") {
		t.Errorf("pruned the curated-packages sidecar's identity:\n%s", stderr)
	}
	if _, err := cp.Client.CoreV1().ServiceAccounts("cert-manager").Get(ctx, templates.SidecarSA, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("ServiceAccount cert-manager/%s still there: %v", templates.SidecarSA, err)
	}
	if _, err := cp.Client.CoreV1().Secrets("cert-manager").Get(ctx, templates.SidecarTokenSecret, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("Secret cert-manager/%s still there: %v", templates.SidecarTokenSecret, err)
	}
	if _, err := cp.Client.CoreV1().Secrets("eksa-packages").Get(ctx, templates.SidecarTokenSecret, metav1.GetOptions{}); err != nil {
		t.Errorf("Secret eksa-packages/%s: %v", templates.SidecarTokenSecret, err)
	}
}

// mayList asks the API server whether a ServiceAccount may list a resource
// in a namespace.
func mayList(t *testing.T, cp *framework.ControlPlane, namespace, sa, resource, in string) bool {
	t.Helper()
	res, err := cp.Client.AuthorizationV1().SubjectAccessReviews().Create(context.Background(), &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User: "system:serviceaccount:" + namespace + ":" + sa, Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + namespace, "system:authenticated"},
		ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "list", Resource: resource, Namespace: in},
	}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return res.Status.Allowed
}
