package config

import (
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	networkingv1 "k8s.io/api/networking/v1"
	"sigs.k8s.io/yaml"

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

// The controller's pods reach API servers and DNS only.
func TestManifestsLimitTheControllersEgress(t *testing.T) {
	out, err := BuildWith(Options{Image: ImageRepository + ":v0.1.0", Namespace: "obs-system", Shards: []string{"a"}})
	if err != nil {
		t.Fatal(err)
	}
	var found bool
	for _, raw := range strings.Split(string(out), "\n---\n") {
		var np networkingv1.NetworkPolicy
		if err := yaml.Unmarshal([]byte(raw), &np); err != nil || np.Kind != "NetworkPolicy" {
			continue
		}
		found = true
		if np.Namespace != "obs-system" || np.Spec.PodSelector.MatchLabels["app.kubernetes.io/name"] != ControllerName || !slices.Equal(np.Spec.PolicyTypes, []networkingv1.PolicyType{networkingv1.PolicyTypeEgress}) {
			t.Errorf("the NetworkPolicy does not hold the controller's egress: %+v", np)
		}
		var ports []string
		for _, rule := range np.Spec.Egress {
			if len(rule.To) > 0 {
				t.Errorf("an egress rule with peers %v", rule.To)
			}
			for _, p := range rule.Ports {
				ports = append(ports, string(*p.Protocol)+"/"+p.Port.String())
			}
		}
		if want := []string{"TCP/443", "TCP/6443", "UDP/53", "TCP/53"}; !slices.Equal(ports, want) {
			t.Errorf("egress ports %v, want %v", ports, want)
		}
	}
	if !found {
		t.Error("controller manifests print no NetworkPolicy")
	}
}

// The API server parses a CEL expression of at most 100,000 code points
// (cel-go v0.29.2 parser/parser.go:69-70, the default Kubernetes keeps),
// and kubectl's client-side apply keeps the whole policy in a 256 KiB
// annotation: the allowlist stays well inside both, so that a new flag or
// kind is caught here rather than by a refused install.
func TestAdmissionPolicyFitsTheAPIServer(t *testing.T) {
	o := Options{Namespace: DefaultNamespace, MonitoringNamespaces: []string{"monitoring", "observability"}, ImagePrefixes: []string{"mirror.example:5000/eks/"}}
	total := 0
	for _, v := range rules(o) {
		if n := utf8.RuneCountInString(v.Expression); n > 75_000 {
			t.Errorf("%d code points (limit 100,000): %s", n, v.Message)
		}
		total += len(v.Expression) + len(v.Message)
	}
	if total > 192<<10 {
		t.Errorf("the validations take %d bytes; kubectl apply keeps the object in a 256 KiB annotation", total)
	}
}
