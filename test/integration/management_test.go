package integration

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/eksa-metrics/eksa-metrics/internal/cli"
	"github.com/eksa-metrics/eksa-metrics/internal/testutil"
	metricsv1alpha1 "github.com/eksa-metrics/eksa-metrics/pkg/apis/metrics/v1alpha1"
	"github.com/eksa-metrics/eksa-metrics/pkg/components"
	"github.com/eksa-metrics/eksa-metrics/pkg/kubeadm"
	"github.com/eksa-metrics/eksa-metrics/pkg/spec"
	"github.com/eksa-metrics/eksa-metrics/pkg/templates"
	"github.com/eksa-metrics/eksa-metrics/pkg/validate"
	"github.com/eksa-metrics/eksa-metrics/test/framework"
)

// The manifests EKS-A v0.26 installs on a management cluster (CAPC: v0.6.1,
// the last one it shipped), as real upstream files.
var upstreamManifests = []string{
	"eksa-controller-manager-v0.26.1.yaml", "capi-core-v1.13.2.yaml", "capi-kubeadm-bootstrap-v1.13.2.yaml",
	"capi-kubeadm-control-plane-v1.13.2.yaml", "capv-v1.16.1.yaml", "capd-v1.13.2.yaml", "capc-v0.6.1.yaml",
	"capx-v1.6.1.yaml", "capt-v0.6.6.yaml", "capas-v0.3.3.yaml", "etcdadm-bootstrap-provider-v1.0.22.yaml",
	"etcdadm-controller-v1.0.28.yaml", "eks-anywhere-packages-v0.4.17.yaml", "cert-manager-v1.20.2.yaml",
}

// startRoleAggregation runs the real kube-controller-manager with only the
// controller that fills aggregated ClusterRoles (Cluster API's manager role
// is one).
func startRoleAggregation(t *testing.T, cp *framework.ControlPlane, kubeconfig string) {
	t.Helper()
	args := framework.Override(cp.KubeadmControllerManagerArgs(kubeconfig), kubeadm.Args{
		{Name: "controllers", Value: "clusterrole-aggregation"}, {Name: "leader-elect", Value: "false"},
		{Name: "secure-port", Value: "0"}, {Name: "use-service-account-credentials", Value: "false"},
	})
	p := framework.Start(t, "kube-controller-manager", framework.Binary(t, filepath.Join("k8s", kubeVersion, "kube-controller-manager")), framework.Args(args))
	framework.WaitFor(t, "the aggregated Cluster API manager role", 60*time.Second, func() (bool, error) {
		r, err := cp.Client.RbacV1().ClusterRoles().Get(context.Background(), "capi-aggregated-manager-role", metav1.GetOptions{})
		return err == nil && len(r.Rules) > 0, err
	}, p)
}

func mayReviewTokens(t *testing.T, cp *framework.ControlPlane, namespace, sa string) bool {
	t.Helper()
	for _, r := range []authorizationv1.ResourceAttributes{
		{Verb: "create", Group: "authentication.k8s.io", Resource: "tokenreviews"},
		{Verb: "create", Group: "authorization.k8s.io", Resource: "subjectaccessreviews"},
	} {
		res, err := cp.Client.AuthorizationV1().SubjectAccessReviews().Create(context.Background(), &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User: "system:serviceaccount:" + namespace + ":" + sa, Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + namespace, "system:authenticated"}, ResourceAttributes: &r,
		}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if !res.Status.Allowed {
			return false
		}
	}
	return true
}

// Who may review a scraper's token, asked of a real API server holding the
// real RBAC of every management component: as shipped, exactly the
// ServiceAccounts the catalog says lack it may not; with the rendered
// bindings every controller that serves metrics itself may, and so may the
// ServiceAccount of every sidecar, eksa-metrics' own: a controller behind a
// sidecar gains nothing.
func TestManagementTokenReviewRights(t *testing.T) {
	ctx := context.Background()
	cp := framework.StartControlPlane(t, framework.ControlPlaneOptions{Version: kubeVersion})
	kubeconfig := cp.Kubeconfig(t, "admin", "kubernetes-admin", "system:masters")
	cp.InstallUpstream(t, upstreamManifests...)
	startRoleAggregation(t, cp, kubeconfig)

	var configs []*spec.Config
	for _, p := range []spec.Provider{spec.ProviderVSphere, spec.ProviderDocker, spec.ProviderNutanix, spec.ProviderTinkerbell, spec.ProviderSnow, spec.ProviderCloudStack} {
		v, _ := spec.ParseEKSAVersion("v0.26.1")
		configs = append(configs, &spec.Config{ClusterName: "mgmt", Provider: p, Management: true, ManagementComponents: true, EKSAVersion: &v,
			TLSMinVersion: metricsv1alpha1.TLS12, Images: metricsv1alpha1.Images{KubeRBACProxy: spec.DefaultKubeRBACProxyImage}})
	}
	// As shipped, before any binding of eksa-metrics exists.
	for _, c := range configs {
		for _, m := range templates.ManagementComponents(c) {
			if has := mayReviewTokens(t, cp, m.Namespace, m.ServiceAccount); has == m.AuthDelegator {
				t.Errorf("%s (%s): ServiceAccount %s/%s may review tokens as shipped: %t; the catalog renders an auth-delegator binding: %t",
					m.ID(), m.Version, m.Namespace, m.ServiceAccount, has, m.AuthDelegator)
			}
		}
	}
	checked := 0
	for _, c := range configs {
		var objs []map[string]any
		for _, o := range templates.ManagementObjects(c) {
			objs = append(objs, o)
		}
		if err := cp.Apply(ctx, "eksa-metrics", false, objs...); err != nil {
			t.Fatal(err)
		}
		for _, m := range templates.ManagementComponents(c) {
			checked++
			sa := m.ServiceAccount
			if m.Method == components.Sidecar {
				if m.AuthDelegator && mayReviewTokens(t, cp, m.Namespace, m.ServiceAccount) {
					t.Errorf("%s: ServiceAccount %s/%s may review tokens now, though its sidecar reviews them as %s", m.ID(), m.Namespace, m.ServiceAccount, templates.SidecarSA)
				}
				sa = templates.SidecarSA // the sidecar reviews tokens as its own ServiceAccount
			}
			if !mayReviewTokens(t, cp, m.Namespace, sa) {
				t.Errorf("%s: ServiceAccount %s/%s still may not review tokens", m.ID(), m.Namespace, sa)
			}
		}
	}
	t.Logf("%d ServiceAccounts checked by SubjectAccessReview", checked)
}

// A management cluster as EKS-A v0.26 ships it: with tls.certificates: none
// apply changes only what is not secure already (the sidecars); with the
// default certificates it mounts each serving certificate into the
// controllers that serve metrics themselves, where their metrics server
// reads it, and changes nothing else of them; a second apply writes
// nothing; back to none, those Deployments are as shipped again; after
// `eksctl anywhere upgrade management-components` puts the shipped
// Deployments back, validate reports the lost edits as drift and apply
// restores them; a changed ServiceAccount or lost RBAC fails the
// management-components check.
func TestManagementComponentsAsShipped(t *testing.T) {
	ctx := context.Background()
	cp := framework.StartControlPlane(t, framework.ControlPlaneOptions{Version: kubeVersion})
	cp.InstallCRDs(t, spec.CAPIv1beta2)
	kubeconfig := cp.Kubeconfig(t, "admin", "kubernetes-admin", "system:masters")
	shipped := cp.InstallUpstream(t, upstreamManifests...)
	startRoleAggregation(t, cp, kubeconfig)
	cp.ServiceAccount(t, "monitoring", "prometheus-k8s")
	p := filepath.Join(testutil.RepoRoot(), "examples", "vsphere-management.yaml")
	raw, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	none := filepath.Join(t.TempDir(), "vsphere-management.yaml")
	if err := os.WriteFile(none, []byte(strings.Replace(string(raw), "  tls:\n    minVersion: VersionTLS12\n", "  tls:\n    minVersion: VersionTLS12\n    certificates: none\n", 1)), 0o644); err != nil {
		t.Fatal(err)
	}

	live := func(id string) *appsv1.Deployment {
		ns, name, _ := strings.Cut(id, "/")
		d, err := cp.Client.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	// Serve metrics securely as shipped: only their certificate is mounted.
	secure := []string{"eksa-system/eksa-controller-manager", "capi-system/capi-controller-manager", "capv-system/capv-controller-manager",
		"etcdadm-controller-system/etcdadm-controller-controller-manager", "etcdadm-bootstrap-provider-system/etcdadm-bootstrap-provider-controller-manager"}
	edited := []string{"eksa-packages/eks-anywhere-packages", "cert-manager/cert-manager", "cert-manager/cert-manager-cainjector", "cert-manager/cert-manager-webhook"}
	before := map[string]int64{}
	for _, id := range append(secure, edited...) {
		before[id] = live(id).Generation
	}

	code, stderr, _ := apply(t, 0, "-f", none, "--kubeconfig", kubeconfig)
	if code != 0 {
		t.Fatalf("apply with certificates none: exit %d\n%s", code, stderr)
	}
	base := map[string]corev1.PodTemplateSpec{} // as shipped, with the API server's defaults
	for _, id := range secure {
		d := live(id)
		if d.Generation != before[id] || !strings.Contains(stderr, "= unchanged Deployment "+id) {
			t.Errorf("%s was changed (generation %d -> %d), though it serves metrics securely as shipped\n%s", id, before[id], d.Generation, stderr)
		}
		base[id] = d.Spec.Template
	}
	for _, id := range edited {
		if g := live(id).Generation; g == before[id] || !strings.Contains(stderr, "~ edit Deployment "+id) {
			t.Errorf("%s was not edited\n%s", id, stderr)
		}
	}

	code, stderr, _ = apply(t, 0, "-f", p, "--kubeconfig", kubeconfig)
	if code != 0 {
		t.Fatalf("apply: exit %d\n%s", code, stderr)
	}
	for _, id := range secure {
		d := live(id)
		if !strings.Contains(stderr, "~ edit Deployment "+id) {
			t.Errorf("%s: the certificate was not mounted\n%s", id, stderr)
		}
		ctr := d.Spec.Template.Spec.Containers[0]
		mount := slices.IndexFunc(ctr.VolumeMounts, func(m corev1.VolumeMount) bool {
			return m.Name == templates.ServingVolume && m.MountPath == components.ControllerRuntimeCertDir && m.ReadOnly
		})
		vol := slices.IndexFunc(d.Spec.Template.Spec.Volumes, func(v corev1.Volume) bool {
			return v.Name == templates.ServingVolume && v.Secret != nil && strings.HasSuffix(v.Secret.SecretName, "-serving")
		})
		if mount < 0 || vol < 0 {
			t.Errorf("%s: container %s mounts %+v, volumes %+v", id, ctr.Name, ctr.VolumeMounts, d.Spec.Template.Spec.Volumes)
			continue
		}
		if _, err := cp.Client.CoreV1().Secrets(d.Namespace).Get(ctx, d.Spec.Template.Spec.Volumes[vol].Secret.SecretName, metav1.GetOptions{}); err != nil {
			t.Errorf("%s: the mounted Secret: %v", id, err)
		}
		// Nothing else differs from the shipped Deployment.
		ctr.VolumeMounts = slices.Delete(ctr.VolumeMounts, mount, mount+1)
		d.Spec.Template.Spec.Containers[0] = ctr
		d.Spec.Template.Spec.Volumes = slices.Delete(d.Spec.Template.Spec.Volumes, vol, vol+1)
		if !equality.Semantic.DeepEqual(d.Spec.Template, base[id]) {
			t.Errorf("%s: the edit changed more than the certificate's mount", id)
		}
	}
	if _, stderr, again := apply(t, 0, "-f", p, "--kubeconfig", kubeconfig); again.writes != 0 {
		t.Fatalf("second apply: %d writes:\n%s", again.writes, stderr)
	}
	// Back to certificates none: the mounts are given back.
	if code, stderr, _ := apply(t, 0, "-f", none, "--kubeconfig", kubeconfig); code != 0 {
		t.Fatalf("apply with certificates none again: exit %d\n%s", code, stderr)
	}
	for _, id := range secure {
		d := live(id)
		if _, recorded := d.Annotations[templates.EditRecordAnnotation]; recorded || !equality.Semantic.DeepEqual(d.Spec.Template, base[id]) {
			t.Errorf("%s is not as shipped after the mount was given back: %+v", id, d.Spec.Template.Spec.Containers[0].VolumeMounts)
		}
	}
	if code, stderr, _ := apply(t, 0, "-f", p, "--kubeconfig", kubeconfig); code != 0 {
		t.Fatalf("apply: exit %d\n%s", code, stderr)
	}
	edited = append(edited, secure...)
	code, res, _ := runValidate(t, "-f", p, "--kubeconfig", kubeconfig)
	if code != 0 || res["drift"].Status != validate.Pass || res["management-components"].Status != validate.Pass {
		t.Fatalf("after apply: exit %d drift=%+v management=%+v", code, res["drift"], res["management-components"])
	}

	// eksctl anywhere upgrade management-components: the shipped
	// Deployments come back, without the sidecars and mounts.
	for _, id := range edited {
		ns, name, _ := strings.Cut(id, "/")
		d := testutil.UpstreamDeployment(t, []map[string]any{shipped[id]}, ns, name)
		live, err := cp.Client.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		live.Spec = d.Spec
		if _, err := cp.Client.AppsV1().Deployments(ns).Update(ctx, live, metav1.UpdateOptions{FieldManager: "eksctl-anywhere"}); err != nil {
			t.Fatal(err)
		}
	}
	code, res, _ = runValidate(t, "-f", p, "--kubeconfig", kubeconfig)
	if code != cli.ExitInvalid || res["drift"].Status != validate.Fail {
		t.Fatalf("after the upgrade: exit %d drift=%+v", code, res["drift"])
	}
	for _, id := range edited {
		if !slices.ContainsFunc(res["drift"].Details, func(d string) bool { return strings.HasPrefix(d, "Deployment "+id+" ") }) {
			t.Errorf("drift does not name %s: %v", id, res["drift"].Details)
		}
	}
	if code, stderr, _ := apply(t, 0, "-f", p, "--kubeconfig", kubeconfig); code != 0 || strings.Count(stderr, "~ edit Deployment") != len(edited) {
		t.Fatalf("apply after the upgrade: exit %d\n%s", code, stderr)
	}
	if code, res, _ = runValidate(t, "-f", p, "--kubeconfig", kubeconfig); code != 0 {
		t.Fatalf("after apply again: exit %d drift=%+v", code, res["drift"])
	}

	// What the management-components check catches.
	d, err := cp.Client.AppsV1().Deployments("capv-system").Get(ctx, "capv-controller-manager", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	d.Spec.Template.Spec.ServiceAccountName = "default" // CAPV before v1.15 (EKS-A v0.24)
	if _, err := cp.Client.AppsV1().Deployments("capv-system").Update(ctx, d, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := cp.Client.RbacV1().ClusterRoleBindings().Delete(ctx, "capi-manager-rolebinding", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	code, res, _ = runValidate(t, "-f", p, "--kubeconfig", kubeconfig)
	details := strings.Join(res["management-components"].Details, "\n")
	if code != cli.ExitInvalid || res["management-components"].Status != validate.Fail ||
		!strings.Contains(details, "capv-system/capv-controller-manager runs as ServiceAccount default, but eksa-metrics expects capv-manager") ||
		!strings.Contains(details, "capi-system/capi-controller-manager: ServiceAccount capi-system/capi-manager may not create tokenreviews.authentication.k8s.io") {
		t.Fatalf("exit %d: %+v", code, res["management-components"])
	}
}
