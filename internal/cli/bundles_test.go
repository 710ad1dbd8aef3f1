package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/eksa-metrics/eksa-metrics/internal/testutil"
)

// --bundles-override takes a real EKS Anywhere Bundles manifest: images come
// from the versions bundle of the cluster's Kubernetes version, pinned by
// the bundle's digest; spec.images still wins; a registry mirror without
// bundle images is warned about.
func TestBundlesOverride(t *testing.T) {
	bundles := filepath.Join(testutil.SharedFixtures(t), "manifests", "bundles.yaml")
	example, err := os.ReadFile(filepath.Join("..", "..", "examples", "vsphere-management.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	write := func(name, doc string) string {
		p := filepath.Join(t.TempDir(), name)
		if err := os.WriteFile(p, []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	// 1.29 needs an EKS-A release that still ships it (v0.26 dropped it).
	on129 := strings.Replace(strings.Replace(string(example), `kubernetesVersion: "1.36"`, `kubernetesVersion: "1.29"`, 1), "eksaVersion: v0.26.1", "eksaVersion: v0.25.2", 1)
	mirrored := strings.Replace(on129, "  kubernetesVersion:", "  registryMirrorConfiguration: {endpoint: mirror.example.internal:5000}\n  kubernetesVersion:", 1)
	if on129 == string(example) || mirrored == on129 {
		t.Fatal("the example changed; adjust the test")
	}
	const krp = "public.ecr.aws/l0g8r8j6/brancz/kube-rbac-proxy:v0.16.0-eks-a-v0.19.0-dev-build.158@sha256:5bf6ef9dc8dccd3e90b89803db69e7d065dfe80a4aaf1d82c8778c99f86d4fb5"
	const hap = "public.ecr.aws/l0g8r8j6/kubernetes-sigs/kind/haproxy:v0.22.0-eks-a-v0.19.0-dev-build.158@sha256:d15dfa6956436110d7d3b00cbf555be0a53edc3790d555bd1c9db9d0994be5cf"

	code, stdout, stderr := run(t, "", "generate", "-f", write("c.yaml", on129), "--bundles-override", bundles)
	if code != ExitOK || !strings.Contains(stdout, "image: "+krp) || !strings.Contains(stdout, "image: "+hap) ||
		strings.Contains(stdout, "quay.io/brancz") || strings.Contains(stdout, "docker.io/library/haproxy") {
		t.Errorf("1.29 with the bundle: exit %d\n%s", code, stderr)
	}

	code, stdout, stderr = run(t, "", "generate", "-f", filepath.Join("..", "..", "examples", "vsphere-management.yaml"), "--bundles-override", bundles)
	if code != ExitOK || !strings.Contains(stderr, "has no versions bundle for Kubernetes 1.36; its first one (1.18) is used") ||
		!strings.Contains(stdout, "image: public.ecr.aws/l0g8r8j6/brancz/kube-rbac-proxy:v0.8.0-25df7d96779e2a305a22c6e3f9425c3465a77244") {
		t.Errorf("1.36 with the bundle: exit %d\n%s", code, stderr)
	}

	withImages := strings.Replace(on129, "  scrapers:", "  images: {kubeRBACProxy: registry.example.internal/kube-rbac-proxy:v0.19.1}\n  scrapers:", 1)
	if withImages == on129 {
		t.Fatal("the example has no scrapers line; adjust the test")
	}
	code, stdout, _ = run(t, "", "generate", "-f", write("c.yaml", withImages), "--bundles-override", bundles)
	if code != ExitOK || !strings.Contains(stdout, "image: registry.example.internal/kube-rbac-proxy:v0.19.1") || strings.Contains(stdout, "image: "+krp) || !strings.Contains(stdout, "image: "+hap) {
		t.Errorf("spec.images should win over the bundle: exit %d", code)
	}

	code, _, stderr = run(t, "", "generate", "-f", write("c.yaml", mirrored))
	if code != ExitOK || !strings.Contains(stderr, "images.kubeRBACProxy: the Cluster pulls through registry mirror mirror.example.internal:5000") {
		t.Errorf("registry mirror without a bundle: exit %d\n%s", code, stderr)
	}
	code, _, stderr = run(t, "", "generate", "-f", write("c.yaml", mirrored), "--bundles-override", bundles)
	if code != ExitOK || strings.Contains(stderr, "registry mirror") {
		t.Errorf("registry mirror with the bundle: exit %d\n%s", code, stderr)
	}

	for _, cmd := range [][]string{
		{"generate", "-f", write("c.yaml", on129), "--bundles-override", "missing.yaml"},
		{"validate", "-f", write("c.yaml", on129), "--bundles-override", "missing.yaml"},
	} {
		code, stdout, stderr = run(t, "", cmd...)
		if code != ExitInvalid || !strings.Contains(stderr, "missing.yaml: no such file; check the --bundles-override path") || (cmd[0] == "generate" && stdout != "") {
			t.Errorf("%v: exit %d\n%s", cmd, code, stderr)
		}
	}
}
