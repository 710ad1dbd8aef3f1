package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/eksa-metrics/eksa-metrics/internal/cli"
	"github.com/eksa-metrics/eksa-metrics/internal/testutil"
	"github.com/eksa-metrics/eksa-metrics/pkg/kubeadm"
	"github.com/eksa-metrics/eksa-metrics/pkg/spec"
	"github.com/eksa-metrics/eksa-metrics/pkg/validate"
	"github.com/eksa-metrics/eksa-metrics/test/framework"
)

func runValidate(t *testing.T, args ...string) (int, map[string]validate.Result, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := cli.Main(context.Background(), append([]string{"validate", "-o", "json"}, args...), cli.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut})
	var rep validate.JSONReport
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("validate -o json (exit %d): %v\n%s\n%s", code, err, out.String(), errOut.String())
	}
	m := map[string]validate.Result{}
	if len(rep.Files) != 1 || rep.APIVersion != validate.JSONAPIVersion {
		t.Fatalf("validate -o json (exit %d): %d files, %s\n%s", code, len(rep.Files), rep.APIVersion, out.String())
	}
	for _, r := range rep.Files[0].Results {
		m[r.Name] = r
	}
	return code, m, errOut.String()
}

// The online checks on a real API server: drift made by hand (an item
// removed from the KubeadmControlPlane, a binding changed) fails with the
// object and the field named.
func TestValidateOnline(t *testing.T) {
	ctx := context.Background()
	cp := framework.StartControlPlane(t, framework.ControlPlaneOptions{Version: kubeVersion})
	cp.InstallCRDs(t, spec.CAPIv1beta2)
	kubeconfig := cp.Kubeconfig(t, "admin", "kubernetes-admin", "system:masters")
	if err := cp.Apply(ctx, "eks-a-controller", true, eksaKCP(t, "docker.v1beta2", spec.CAPIv1beta2)); err != nil {
		t.Fatal(err)
	}
	p := writeSpecVersion(t, "docker", zPagesOn, "1.34", "v0.26.1")

	code, res, _ := runValidate(t, "-f", p, "--kubeconfig", kubeconfig)
	if code != cli.ExitInvalid || res["drift"].Status != validate.Fail || res["scraper-identities"].Status != validate.Fail || res["management-components"].Status != validate.Pass {
		t.Fatalf("before apply: exit %d drift=%+v scrapers=%+v management=%+v", code, res["drift"], res["scraper-identities"], res["management-components"])
	}
	// The scraper exists before apply asks for its token, as its stack
	// creates it.
	cp.ServiceAccount(t, "monitoring", "prometheus-k8s")
	if code, stderr, _ := apply(t, 0, "-f", p, "--kubeconfig", kubeconfig, "--allow-control-plane-rollout"); code != 0 {
		t.Fatalf("apply: %d\n%s", code, stderr)
	}
	code, res, _ = runValidate(t, "-f", p, "--kubeconfig", kubeconfig)
	for name, want := range map[string]validate.Status{"drift": validate.Pass, "scraper-identities": validate.Pass, "prometheus-operator-crds": validate.Pass,
		"cluster-not-paused": validate.Skipped, "management-components": validate.Pass} {
		if res[name].Status != want {
			t.Errorf("%s: %s %q %v, want %s", name, res[name].Status, res[name].Message, res[name].Details, want)
		}
	}
	if code != 0 {
		t.Fatalf("after apply: exit %d", code)
	}

	// Drift 1: someone removes an item eksa-metrics owns.
	live := liveKCP(t, cp, spec.CAPIv1beta2)
	args := liveArgList(t, live.Object, kubeadm.ControllerManager.Path())
	idx := -1
	for i, a := range args {
		if a.(map[string]any)["name"] == "feature-gates" {
			idx = i
		}
	}
	patch := `[{"op":"remove","path":"/spec/kubeadmConfigSpec/clusterConfiguration/controllerManager/extraArgs/` + itoa(idx) + `"}]`
	if _, err := cp.Dynamic.Resource(kcpGVR(spec.CAPIv1beta2)).Namespace("eksa-system").Patch(ctx, "test", types.JSONPatchType, []byte(patch), metav1.PatchOptions{FieldManager: "someone"}); err != nil {
		t.Fatal(err)
	}
	// Drift 2: someone changes the reader binding.
	crb, err := cp.Client.RbacV1().ClusterRoleBindings().Get(ctx, "eksa-metrics-reader", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	crb.Subjects[0].Name = "someone-else"
	if _, err := cp.Client.RbacV1().ClusterRoleBindings().Update(ctx, crb, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	code, res, _ = runValidate(t, "-f", p, "--kubeconfig", kubeconfig)
	d := strings.Join(res["drift"].Details, "\n")
	if code != cli.ExitInvalid || res["drift"].Status != validate.Fail ||
		!strings.Contains(d, "KubeadmControlPlane eksa-system/test (management cluster): spec.kubeadmConfigSpec.clusterConfiguration.controllerManager.extraArgs[name=feature-gates]") ||
		!strings.Contains(d, "ClusterRoleBinding eksa-metrics-reader (management cluster): subjects") {
		t.Fatalf("drift: exit %d %+v", code, res["drift"])
	}
	t.Logf("drift found:\n%s", d)

	// cluster-not-paused against EKS-A's own Cluster CRD (as shipped in eksa-components.yaml).
	for _, doc := range framework.ReadYAML(t, filepath.Join(testutil.SharedFixtures(t), "manifests", "eksa-components.yaml")) {
		if doc["kind"] == "CustomResourceDefinition" && doc["metadata"].(map[string]any)["name"] == "clusters.anywhere.eks.amazonaws.com" {
			cp.InstallStorageVersion(t, doc)
		}
	}
	eksaCluster := framework.ReadYAML(t, filepath.Join(testutil.SharedFixtures(t), "specs", "docker.yaml"))[0]
	eksaCluster["metadata"].(map[string]any)["namespace"] = "default"
	// The upstream test spec spells certSANs; the shipped CRD declares certSans.
	delete(eksaCluster["spec"].(map[string]any)["controlPlaneConfiguration"].(map[string]any), "certSANs")
	if err := cp.Apply(ctx, "eksctl", true, eksaCluster); err != nil {
		t.Fatal(err)
	}
	if _, res, _ = runValidate(t, "-f", p, "--kubeconfig", kubeconfig); res["cluster-not-paused"].Status != validate.Pass {
		t.Fatalf("cluster-not-paused on a running cluster: %+v", res["cluster-not-paused"])
	}
	eksaCluster["metadata"].(map[string]any)["annotations"] = map[string]any{"anywhere.eks.amazonaws.com/paused": "true"}
	if err := cp.Apply(ctx, "eksctl", true, eksaCluster); err != nil {
		t.Fatal(err)
	}
	if _, res, _ = runValidate(t, "-f", p, "--kubeconfig", kubeconfig); res["cluster-not-paused"].Status != validate.Fail {
		t.Fatalf("cluster-not-paused on a paused cluster: %+v", res["cluster-not-paused"])
	}
}

func liveArgList(t *testing.T, obj map[string]any, path []string) []any {
	t.Helper()
	cur := obj["spec"].(map[string]any)["kubeadmConfigSpec"].(map[string]any)["clusterConfiguration"].(map[string]any)
	for _, p := range path[:len(path)-1] {
		cur = cur[p].(map[string]any)
	}
	return cur[path[len(path)-1]].([]any)
}

func itoa(i int) string { return strconv.Itoa(i) }

// prometheus-selects-monitors reads the Prometheus objects: one that selects
// other labels, or runs as another ServiceAccount, is named; one that
// selects the rendered ServiceMonitors as a scraper passes.
func TestValidatePrometheusSelectsMonitors(t *testing.T) {
	ctx := context.Background()
	cp := framework.StartControlPlane(t, framework.ControlPlaneOptions{Version: kubeVersion})
	kubeconfig := cp.Kubeconfig(t, "admin", "kubernetes-admin", "system:masters")
	p := writeSpecVersion(t, "docker", zPagesOn, "1.34", "v0.26.1") // scraper monitoring/prometheus-k8s, ServiceMonitors in monitoring
	_, res, _ := runValidate(t, "-f", p, "--kubeconfig", kubeconfig, "--skip", "drift")
	if r := res["prometheus-operator-crds"]; r.Status != validate.Fail {
		t.Fatalf("without prometheus-operator: prometheus-operator-crds %s %q", r.Status, r.Message)
	}
	if r := res["prometheus-selects-monitors"]; r.Status != validate.Warn || !strings.Contains(r.Message, "serves no Prometheus API") {
		t.Fatalf("without prometheus-operator: prometheus-selects-monitors %s %q", r.Status, r.Message)
	}
	cp.InstallCRDDir(t, "prometheus-operator-full")
	prom := func(name, sa string, sel map[string]any) {
		t.Helper()
		obj := map[string]any{"apiVersion": "monitoring.coreos.com/v1", "kind": "Prometheus", "metadata": map[string]any{"name": name, "namespace": "monitoring"},
			"spec": map[string]any{"serviceAccountName": sa, "serviceMonitorSelector": sel}}
		if err := cp.Apply(ctx, "test", true, obj); err != nil {
			t.Fatal(err)
		}
	}
	check := func(want validate.Status, contains string) {
		t.Helper()
		_, res, _ := runValidate(t, "-f", p, "--kubeconfig", kubeconfig, "--skip", "drift")
		r := res["prometheus-selects-monitors"]
		if r.Status != want || !strings.Contains(r.Message+strings.Join(r.Details, " "), contains) {
			t.Fatalf("prometheus-selects-monitors: %s %q %v, want %s with %q", r.Status, r.Message, r.Details, want, contains)
		}
	}
	check(validate.Warn, "no Prometheus object")
	prom("kps", "kps-kube-prometheus-stack-prometheus", map[string]any{"matchLabels": map[string]any{"release": "kps"}})
	check(validate.Warn, "does not select ServiceMonitors labelled")
	prom("other", "other", map[string]any{})
	check(validate.Warn, "runs as ServiceAccount monitoring/other, which is not a scraper")
	prom("k8s", "prometheus-k8s", map[string]any{})
	check(validate.Pass, "Prometheus monitoring/k8s selects the rendered ServiceMonitors")
}
