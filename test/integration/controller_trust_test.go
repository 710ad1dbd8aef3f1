package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/eksa-metrics/eksa-metrics/pkg/templates"
)

// putMetricsConfig applies a MetricsConfig namespace/name with a spec.
func (f *fleet) putMetricsConfig(t testing.TB, namespace, name string, spec map[string]any) {
	t.Helper()
	mc := map[string]any{"apiVersion": "metrics.anywhere.eks.amazonaws.com/v1alpha1", "kind": "MetricsConfig",
		"metadata": map[string]any{"name": name, "namespace": namespace}, "spec": spec}
	if err := f.mgmt.Apply(context.Background(), "someone", true, mc); err != nil {
		t.Fatal(err)
	}
}

// clusterCondition waits until the status of MetricsConfig namespace/name
// has, for the Cluster, a condition of that type with that reason whose
// message holds want.
func (f *fleet) clusterCondition(t testing.TB, namespace, name, cluster, condType, reason, want string) {
	t.Helper()
	f.waitFor(t, fmt.Sprintf("%s/%s: %s %s %s", namespace, name, cluster, condType, reason), func() error {
		mc, err := f.mgmt.Dynamic.Resource(metricsConfigGVR).Namespace(namespace).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		clusters, _, _ := unstructured.NestedSlice(mc.Object, "status", "clusters")
		for _, c := range clusters {
			c := c.(map[string]any)
			if c["name"] != cluster {
				continue
			}
			conds, _ := c["conditions"].([]any)
			for _, cond := range conds {
				cond := cond.(map[string]any)
				if cond["type"] == condType && cond["reason"] == reason && strings.Contains(fmt.Sprint(cond["message"]), want) {
					return nil
				}
			}
			return fmt.Errorf("%v", c)
		}
		return fmt.Errorf("no status for %s: %v", cluster, mc.Object["status"])
	})
}

// The controller is a trust boundary: each attack a MetricsConfig author
// (or whoever writes a Cluster or a kubeconfig Secret) could make is
// refused with a status condition that says why, on the real management
// API server and a real workload API server, with the RBAC and admission
// policy `controller manifests` prints; and the controller's own identity
// can do no more than what it renders.
func TestControllerRefusesWhatItsAuthorsMayNotDo(t *testing.T) {
	ctx := context.Background()
	f := newFleet(t, "w1")
	f.startController(t, &counter{reqs: map[string]int{}})

	// An image from the custom resource: refused, whatever the namespace.
	f.putMetricsConfig(t, "default", "evil-image", map[string]any{"clusterRef": map[string]any{"kind": "Cluster", "name": "w1"},
		"scrapers": []any{map[string]any{"kind": "Group", "name": "metrics-readers"}},
		"images":   map[string]any{"kubeRBACProxy": "evil.example/kube-rbac-proxy:1"}})
	f.clusterCondition(t, "default", "evil-image", "w1", "Rendered", "NotAllowed", "spec.images")

	// A tenant's Cluster that shares the workload cluster's name: the
	// eksa-system objects of that name are default/w1's.
	f.eksaCluster(t, "team-a", "w1", "mgmt", nil)
	// A tenant's Cluster that says it manages itself.
	f.eksaCluster(t, "team-a", "evil", "evil", nil)
	f.putMetricsConfig(t, "team-a", "tenant", map[string]any{"clusterSelector": map[string]any{"matchLabels": map[string]any{"metrics": "on"}},
		"scrapers": []any{map[string]any{"kind": "ServiceAccount", "name": "prometheus", "namespace": "monitoring"}}})
	f.clusterCondition(t, "team-a", "tenant", "w1", "Rendered", "ClusterNotOwned", "belongs to the EKS Anywhere Cluster default/w1")
	f.clusterCondition(t, "team-a", "tenant", "evil", "Rendered", "NotAllowed", "a Cluster is the management cluster only when it is that one")

	// An empty selector selects nothing (it would be every Cluster of the
	// namespace, the management cluster's included).
	f.putMetricsConfig(t, "default", "everything", map[string]any{"clusterSelector": map[string]any{},
		"scrapers": []any{map[string]any{"kind": "Group", "name": "metrics-readers"}}})
	f.waitFor(t, "the empty selector reconciled", func() error {
		mc, err := f.mgmt.Dynamic.Resource(metricsConfigGVR).Namespace("default").Get(ctx, "everything", metav1.GetOptions{})
		if err != nil {
			return err
		}
		st, _, _ := unstructured.NestedMap(mc.Object, "status")
		if g, _, _ := unstructured.NestedInt64(st, "observedGeneration"); g != mc.GetGeneration() || st["selectedClusters"] != nil || st["clusters"] != nil {
			return fmt.Errorf("status %v", st)
		}
		return nil
	})

	// Kubeconfig Secrets with an exec plugin and with a tokenFile, for
	// Clusters that are default's own: refused before anything is run or
	// sent.
	l := newListener(t)
	dir := t.TempDir()
	marker := filepath.Join(dir, "exec-ran")
	tokenFile := filepath.Join(dir, "token")
	if err := os.WriteFile(tokenFile, []byte("eksa-metrics-marker-token-77c1"), 0o600); err != nil {
		t.Fatal(err)
	}
	f.eksaCluster(t, "default", "w-exec", "mgmt", l.kubeconfig(t, &clientcmdapi.AuthInfo{Exec: &clientcmdapi.ExecConfig{
		APIVersion: "client.authentication.k8s.io/v1", Command: "/bin/sh", InteractiveMode: clientcmdapi.NeverExecInteractiveMode,
		Args: []string{"-c", `touch "` + marker + `"`}}}))
	f.eksaCluster(t, "default", "w-token", "mgmt", l.kubeconfig(t, &clientcmdapi.AuthInfo{TokenFile: tokenFile}))
	for _, c := range []string{"w-exec", "w-token"} {
		f.putMetricsConfig(t, "default", c, map[string]any{"clusterRef": map[string]any{"kind": "Cluster", "name": c},
			"scrapers": []any{map[string]any{"kind": "Group", "name": "metrics-readers"}}})
	}
	f.clusterCondition(t, "default", "w-exec", "w-exec", "Applied", "KubeconfigRefused", "sets exec")
	f.clusterCondition(t, "default", "w-token", "w-token", "Applied", "KubeconfigRefused", "sets tokenFile")
	if _, err := os.Stat(marker); err == nil {
		t.Error("the exec plugin of a kubeconfig Secret ran in the controller")
	}
	if conns, auth := l.seen(); conns > 0 {
		t.Errorf("the server a kubeconfig Secret names was contacted %d times (Authorization %q)", conns, auth)
	}

	// Nothing of the refused MetricsConfigs reached the real w1.
	if objs := objects(t, f.workloads["w1"]); len(objs) > 0 {
		t.Errorf("w1 has %v although every MetricsConfig for it was refused", objs)
	}
	// What proves the test can fail: the platform team's own MetricsConfig
	// for w1 does reach it.
	f.putMetricsConfig(t, "default", "w1", map[string]any{"clusterRef": map[string]any{"kind": "Cluster", "name": "w1"},
		"scrapers": []any{map[string]any{"kind": "Group", "name": "metrics-readers"}}})
	f.waitFor(t, "default/w1 applied to w1", func() error {
		if objs := objects(t, f.workloads["w1"]); !has(objs, "ClusterRole/"+templates.ReaderRole) {
			mc, err := f.mgmt.Dynamic.Resource(metricsConfigGVR).Namespace("default").Get(ctx, "w1", metav1.GetOptions{})
			return fmt.Errorf("w1 has %v; MetricsConfig default/w1: %v %v", objs, err, mc.Object["status"])
		}
		return nil
	})

	// The controller's own identity: no cluster-wide Secrets, no DaemonSet
	// outside kube-system, none there as another ServiceAccount, no
	// Deployment made to run as another ServiceAccount.
	cfg, err := clientcmd.BuildConfigFromFlags("", f.controllerKubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	as, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := as.CoreV1().Secrets("").List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("the controller lists Secrets cluster-wide: %v", err)
	}
	if _, err := as.CoreV1().Secrets("kube-public").Get(ctx, "x", metav1.GetOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("the controller reads Secrets in kube-public: %v", err)
	}
	ds := func(ns, sa string) *appsv1.DaemonSet {
		l := map[string]string{"app": "probe"}
		return &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: "probe", Namespace: ns}, Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: l},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: l}, Spec: corev1.PodSpec{ServiceAccountName: sa,
				Containers: []corev1.Container{{Name: "c", Image: "registry.example/probe:1"}}}}}}
	}
	dry := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}
	if _, err := as.AppsV1().DaemonSets("kube-system").Create(ctx, ds("kube-system", "clusterrole-aggregation-controller"), dry); !apierrors.IsForbidden(err) && !apierrors.IsInvalid(err) {
		t.Errorf("the controller may run a DaemonSet in kube-system as another ServiceAccount: %v", err)
	} else if err != nil && !strings.Contains(err.Error(), templates.ProxySA) {
		t.Errorf("refused, but not by the admission policy: %v", err)
	}
	if _, err := as.AppsV1().DaemonSets("kube-system").Create(ctx, ds("kube-system", templates.ProxySA), dry); err != nil {
		t.Errorf("the controller may not create its own proxy DaemonSet: %v", err)
	}
	if _, err := as.AppsV1().DaemonSets("default").Create(ctx, ds("default", templates.ProxySA), dry); !apierrors.IsForbidden(err) {
		t.Errorf("the controller may create DaemonSets in default: %v", err)
	}
	// It cannot mint a token of another ServiceAccount through a token
	// Secret, only of the sidecar's.
	tokenSecret := func(sa string) *corev1.Secret {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "probe-token", Namespace: "kube-system", Annotations: map[string]string{corev1.ServiceAccountNameKey: sa}},
			Type: corev1.SecretTypeServiceAccountToken}
	}
	if _, err := as.CoreV1().Secrets("kube-system").Create(ctx, tokenSecret("clusterrole-aggregation-controller"), dry); !apierrors.IsForbidden(err) && !apierrors.IsInvalid(err) {
		t.Errorf("the controller may mint a token of another ServiceAccount: %v", err)
	}
	if _, err := as.CoreV1().Secrets("kube-system").Create(ctx, tokenSecret(templates.SidecarSA), dry); err != nil {
		t.Errorf("the controller may not write the sidecar's token Secret: %v", err)
	}
	// A management Deployment it edits keeps its ServiceAccount.
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "eksa-controller-manager", Namespace: "eksa-system"}, Spec: appsv1.DeploymentSpec{
		Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "m"}},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "m"}}, Spec: corev1.PodSpec{ServiceAccountName: "eksa-controller-manager",
			Containers: []corev1.Container{{Name: "manager", Image: "registry.example/m:1"}}}}}}
	if _, err := f.mgmt.Client.AppsV1().Deployments("eksa-system").Create(ctx, d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	patch := func(sa string) error {
		body := fmt.Sprintf(`{"spec":{"template":{"spec":{"serviceAccountName":%q}}}}`, sa)
		_, err := as.AppsV1().Deployments("eksa-system").Patch(ctx, "eksa-controller-manager", "application/strategic-merge-patch+json", []byte(body), metav1.PatchOptions{DryRun: []string{metav1.DryRunAll}})
		return err
	}
	if err := patch("capi-manager"); !apierrors.IsForbidden(err) && !apierrors.IsInvalid(err) {
		t.Errorf("the controller may make a management Deployment run as another ServiceAccount: %v", err)
	}
	if err := patch("eksa-controller-manager"); err != nil {
		t.Errorf("the controller may not edit a management Deployment it edits: %v", err)
	}
}
