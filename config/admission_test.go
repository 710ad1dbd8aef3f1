package config

import (
	"regexp"
	"testing"

	"github.com/eksa-metrics/eksa-metrics/pkg/spec"
)

// The images the renderer uses by default and those EKS Anywhere's Bundles
// name are allowed; a lookalike repository, another registry, a path that
// only starts like an allowed repository are not.
func TestImageRegexp(t *testing.T) {
	rx := regexp.MustCompile(ImageRegexp(append(DefaultImagePrefixes, "mirror.example:5000/eks/")))
	for image, want := range map[string]bool{
		spec.DefaultKubeRBACProxyImage: true,
		spec.DefaultHAProxyImage:       true,
		"public.ecr.aws/eks-anywhere/brancz/kube-rbac-proxy:v0.19.1-eks-a-v0.26.1-build.1":                                           true,
		"public.ecr.aws/eks-anywhere/brancz/kube-rbac-proxy@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef": true,
		"mirror.example:5000/eks/brancz/kube-rbac-proxy:v0.19.1":                                                                     true,
		"quay.io/brancz/kube-rbac-proxy-evil:v1":                                                                                     false,
		"quay.io/brancz/kube-rbac-proxy/evil:v1":                                                                                     false,
		"quay.io/brancz/kube-rbac-proxy":                                                                                             false,
		"evil.example/quay.io/brancz/kube-rbac-proxy:v0.19.1":                                                                        false,
		"public.ecr.aws/eks-anywhere-evil/kube-rbac-proxy:v1":                                                                        false,
		"docker.io/library/haproxy:3.0.12-alpine\nevil":                                                                              false,
		"mirror.example:5000/other/brancz/kube-rbac-proxy:v0.19.1":                                                                   false,
	} {
		if got := rx.MatchString(image); got != want {
			t.Errorf("%q: allowed %t, want %t", image, got, want)
		}
	}
}

func TestRepository(t *testing.T) {
	for in, want := range map[string]string{
		"quay.io/brancz/kube-rbac-proxy:v0.19.1":               "quay.io/brancz/kube-rbac-proxy",
		"registry.example:5000/kube-rbac-proxy@sha256:0123":    "registry.example:5000/kube-rbac-proxy",
		"registry.example:5000/kube-rbac-proxy:v1@sha256:0123": "registry.example:5000/kube-rbac-proxy",
		"registry.example:5000/kube-rbac-proxy":                "registry.example:5000/kube-rbac-proxy",
	} {
		if got := Repository(in); got != want {
			t.Errorf("Repository(%q) = %q, want %q", in, got, want)
		}
	}
}
