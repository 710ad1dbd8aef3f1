package spec_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/eksa-metrics/eksa-metrics/internal/testutil"
	"github.com/eksa-metrics/eksa-metrics/pkg/spec"
)

// A real Bundles manifest (an EKS Anywhere test fixture): the versions
// bundle of the cluster's Kubernetes version, images pinned by the bundle's
// digest; the first bundle where none matches, as EKS-A does.
func TestLoadBundlesReadsARealManifest(t *testing.T) {
	path := filepath.Join(testutil.SharedFixtures(t), "manifests", "bundles.yaml")
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b, err := spec.LoadBundles(path, f)
	if err != nil {
		t.Fatal(err)
	}
	vb, exact := b.For(spec.KubeVersion{Major: 1, Minor: 29})
	if !exact || vb.KubeRBACProxy.Ref() != "public.ecr.aws/l0g8r8j6/brancz/kube-rbac-proxy:v0.16.0-eks-a-v0.19.0-dev-build.158@sha256:5bf6ef9dc8dccd3e90b89803db69e7d065dfe80a4aaf1d82c8778c99f86d4fb5" ||
		vb.HAProxy.Ref() != "public.ecr.aws/l0g8r8j6/kubernetes-sigs/kind/haproxy:v0.22.0-eks-a-v0.19.0-dev-build.158@sha256:d15dfa6956436110d7d3b00cbf555be0a53edc3790d555bd1c9db9d0994be5cf" {
		t.Errorf("1.29: exact=%t %+v", exact, vb)
	}
	vb, exact = b.For(spec.KubeVersion{Major: 1, Minor: 36})
	if exact || vb.KubeVersion != "1.18" || vb.KubeRBACProxy.Ref() != "public.ecr.aws/l0g8r8j6/brancz/kube-rbac-proxy:v0.8.0-25df7d96779e2a305a22c6e3f9425c3465a77244" {
		t.Errorf("1.36: exact=%t %+v", exact, vb)
	}
}

func TestLoadBundlesProblems(t *testing.T) {
	for _, tc := range []struct{ name, doc, want string }{
		{"not a bundle", "apiVersion: v1\nkind: ConfigMap\n", "b.yaml: no document of kind Bundles"},
		{"wrong apiVersion", "apiVersion: anywhere.eks.amazonaws.com/v2\nkind: Bundles\nspec:\n  versionsBundles: [{kubeVersion: \"1.36\"}]\n", `b.yaml:1: apiVersion: Unsupported value: "anywhere.eks.amazonaws.com/v2"`},
		{"no versions", "apiVersion: anywhere.eks.amazonaws.com/v1alpha1\nkind: Bundles\nspec:\n  number: 3\n", "b.yaml:3: spec.versionsBundles: Required value"},
		{"bad image", "apiVersion: anywhere.eks.amazonaws.com/v1alpha1\nkind: Bundles\nspec:\n  versionsBundles:\n  - kubeVersion: \"1.36\"\n    clusterAPI:\n      kubeProxy:\n        uri: \"Registry/UPPER;rm:x\"\n",
			`b.yaml:8: spec.versionsBundles[0].clusterAPI.kubeProxy.uri: Invalid value: "Registry/UPPER;rm:x": is not an image reference`},
		{"two bundles", "apiVersion: anywhere.eks.amazonaws.com/v1alpha1\nkind: Bundles\n---\napiVersion: anywhere.eks.amazonaws.com/v1alpha1\nkind: Bundles\n", "b.yaml:4: kind: a second Bundles document"},
		{"syntax", "kind: Bundles\nspec: [\n", "b.yaml:"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := spec.LoadBundles("b.yaml", strings.NewReader(tc.doc))
			var inv *spec.InvalidError
			if !errors.As(err, &inv) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want an InvalidError containing %q", err, tc.want)
			}
		})
	}
}
