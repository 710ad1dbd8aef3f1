package integration

import (
	"context"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/eksa-metrics/eksa-metrics/pkg/templates"
	"github.com/eksa-metrics/eksa-metrics/test/framework"
)

// dockerManagementCluster is a real API server with the CRDs and the
// KubeadmControlPlane EKS-A renders for the docker fixture (v1beta2), and an
// admin kubeconfig for it.
func dockerManagementCluster(t *testing.T) (*framework.ControlPlane, string) {
	t.Helper()
	cp := framework.StartControlPlane(t, framework.ControlPlaneOptions{Version: kubeVersion})
	cp.InstallCRDs(t, "v1beta2")
	if err := cp.Apply(context.Background(), "eks-a-controller", true, eksaKCP(t, "docker.v1beta2", "v1beta2")); err != nil {
		t.Fatal(err)
	}
	// The scrapers the tests' specs name, as the monitoring stack creates
	// them before eksa-metrics is applied (apply refuses a token Secret for
	// a ServiceAccount that does not exist).
	cp.ServiceAccount(t, "monitoring", "prometheus")
	cp.ServiceAccount(t, "monitoring", "prometheus-k8s")
	return cp, cp.Kubeconfig(t, "admin", "kubernetes-admin", "system:masters")
}

// apply prunes what a changed spec no longer renders: the objects in its
// inventory (its labels and field manager) and nothing else.
func TestApplyPrunesWhatIsNoLongerRendered(t *testing.T) {
	ctx := context.Background()
	cp, kubeconfig := dockerManagementCluster(t)
	proxy := writeSpecVersion(t, "docker", "  scrapers: [{kind: Group, name: g}]\n  exposure: proxy\n", "1.36", "v0.26.1")
	if code, stderr, _ := apply(t, 0, "-f", proxy, "--kubeconfig", kubeconfig); code != 0 {
		t.Fatalf("exit %d:\n%s", code, stderr)
	}
	// An object someone else made, with eksa-metrics' labels copied onto it.
	lookalike := &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: "lookalike", Namespace: "kube-system",
		Labels: map[string]string{templates.ManagedByLabel: templates.Prefix, templates.ClusterLabel: "test"}},
		Spec: appsv1.DaemonSetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"a": "b"}}, Template: corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"a": "b"}}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "x.invalid/c:1"}}}}}}
	if _, err := cp.Client.AppsV1().DaemonSets("kube-system").Create(ctx, lookalike, metav1.CreateOptions{FieldManager: "someone"}); err != nil {
		t.Fatal(err)
	}

	if _, err := cp.Client.CoreV1().ConfigMaps("kube-system").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "kube-proxy", Namespace: "kube-system"},
		Data: map[string]string{"config.conf": framework.KubeadmKubeProxyConfig}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// bindAddress needs no proxies: their DaemonSets, ConfigMap, ServiceAccount and binding go.
	bind := writeSpecVersion(t, "docker", "  scrapers: [{kind: Group, name: g}]\n  exposure: bindAddress\n  allowInsecure: true\n", "1.36", "v0.26.1")
	code, stderr, _ := apply(t, 0, "-f", bind, "--kubeconfig", kubeconfig, "--dry-run=client")
	for _, want := range []string{"- prune DaemonSet kube-system/eksa-metrics-control-plane-proxy", "- prune DaemonSet kube-system/eksa-metrics-kube-proxy-proxy",
		"- prune ClusterRoleBinding eksa-metrics-proxy:auth-delegator", "- prune ServiceAccount kube-system/eksa-metrics-proxy", "to delete"} {
		if code != 0 || !strings.Contains(stderr, want) {
			t.Fatalf("plan lacks %q (exit %d):\n%s", want, code, stderr)
		}
	}
	if strings.Contains(stderr, "lookalike") || strings.Contains(stderr, "prune KubeadmControlPlane") {
		t.Fatalf("the plan deletes what eksa-metrics did not create:\n%s", stderr)
	}
	if code, stderr, _ = apply(t, 0, "-f", bind, "--kubeconfig", kubeconfig, "--allow-control-plane-rollout"); code != 0 {
		t.Fatalf("exit %d:\n%s", code, stderr)
	}
	for _, name := range []string{templates.ControlPlaneDS, templates.NodeDS} {
		if _, err := cp.Client.AppsV1().DaemonSets("kube-system").Get(ctx, name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("DaemonSet %s still there: %v", name, err)
		}
	}
	if _, err := cp.Client.AppsV1().DaemonSets("kube-system").Get(ctx, "lookalike", metav1.GetOptions{}); err != nil {
		t.Fatalf("pruned an object eksa-metrics did not create: %v", err)
	}
	if _, err := cp.Client.RbacV1().ClusterRoles().Get(ctx, templates.ReaderRole, metav1.GetOptions{}); err != nil {
		t.Fatalf("pruned what is still rendered: %v", err)
	}
	code, stderr, again := apply(t, 0, "-f", bind, "--kubeconfig", kubeconfig)
	if code != 0 || again.writes != 0 || !strings.Contains(stderr, "0 to delete") {
		t.Fatalf("second apply: exit %d, %d writes:\n%s", code, again.writes, stderr)
	}
}
