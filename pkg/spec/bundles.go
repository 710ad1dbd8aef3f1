package spec

import (
	"bytes"
	"errors"
	"fmt"
	"io"

	"go.yaml.in/yaml/v3"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// BundlesAPIVersion and BundlesKind identify an EKS Anywhere Bundles manifest.
const (
	BundlesAPIVersion = "anywhere.eks.amazonaws.com/v1alpha1"
	BundlesKind       = "Bundles"
)

// Bundles is what eksa-metrics reads of an EKS Anywhere Bundles manifest
// (the file eksctl anywhere takes with --bundles-override): the images of
// each versions bundle. Every other field is ignored.
type Bundles struct {
	Path          string
	CLIMinVersion string
	CLIMaxVersion string
	Versions      []VersionsBundle
}

// VersionsBundle is one Kubernetes version's entry.
type VersionsBundle struct {
	KubeVersion string
	// KubeRBACProxy is spec.versionsBundles[].clusterAPI.kubeProxy (EKS-A's
	// name for the kube-rbac-proxy image), HAProxy .haproxy.image.
	KubeRBACProxy BundleImage
	HAProxy       BundleImage
}

// BundleImage is an image of a bundle.
type BundleImage struct {
	URI         string `json:"uri"`
	ImageDigest string `json:"imageDigest,omitempty"`
}

// Ref is the image reference to run: pinned by the bundle's digest where it
// gives one.
func (i BundleImage) Ref() string {
	if i.URI == "" || i.ImageDigest == "" || bytes.Contains([]byte(i.URI), []byte("@")) {
		return i.URI
	}
	return i.URI + "@" + i.ImageDigest
}

// bundlesDocument mirrors the JSON names of EKS Anywhere's Bundles type
// (aws/eks-anywhere release/api/v1alpha1/bundle_types.go and
// artifact_types.go), for the fields read here.
type bundlesDocument struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Spec       struct {
		CLIMinVersion   string `json:"cliMinVersion"`
		CLIMaxVersion   string `json:"cliMaxVersion"`
		VersionsBundles []struct {
			KubeVersion string `json:"kubeVersion"`
			ClusterAPI  struct {
				KubeProxy BundleImage `json:"kubeProxy"`
			} `json:"clusterAPI"`
			Haproxy struct {
				Image BundleImage `json:"image"`
			} `json:"haproxy"`
		} `json:"versionsBundles"`
	} `json:"spec"`
}

// LoadBundles reads a Bundles manifest. Problems name the file, line and
// field (an *InvalidError).
func LoadBundles(path string, r io.Reader) (*Bundles, error) {
	raw, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	var root *yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(raw))
	for {
		var n yaml.Node
		err := dec.Decode(&n)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, &InvalidError{Problems: []Problem{yamlProblem(path, raw, err)}}
		}
		if len(n.Content) == 0 || n.Content[0].Kind != yaml.MappingNode || scalarField(n.Content[0], "kind") != BundlesKind {
			continue
		}
		if root != nil {
			return nil, &InvalidError{Problems: []Problem{{File: path, Line: n.Content[0].Line, Field: "kind", Detail: "a second Bundles document; give the one bundle the cluster runs"}}}
		}
		root = n.Content[0]
	}
	if root == nil {
		return nil, &InvalidError{Problems: []Problem{{File: path, Detail: "no document of kind Bundles (apiVersion " + BundlesAPIVersion + "), as eksctl anywhere --bundles-override takes"}}}
	}
	lines := lineIndex{}
	d := newDecoder(false, lines)
	d.foreign = true // EKS-A's own reader (sigs.k8s.io/yaml) lets a later key win
	var doc bundlesDocument
	d.decode(root, &doc, nil)
	if doc.APIVersion != BundlesAPIVersion {
		d.fail(lines.lineOf("apiVersion"), field.NotSupported(field.NewPath("apiVersion"), doc.APIVersion, []string{BundlesAPIVersion}))
	}
	b := &Bundles{Path: path, CLIMinVersion: doc.Spec.CLIMinVersion, CLIMaxVersion: doc.Spec.CLIMaxVersion}
	vbs := field.NewPath("spec", "versionsBundles")
	if len(doc.Spec.VersionsBundles) == 0 {
		d.fail(lines.lineOf("spec"), field.Required(vbs, "the bundle has no versions bundles"))
	}
	for i, vb := range doc.Spec.VersionsBundles {
		p := vbs.Index(i)
		for _, img := range []struct {
			path *field.Path
			img  BundleImage
		}{{p.Child("clusterAPI", "kubeProxy"), vb.ClusterAPI.KubeProxy}, {p.Child("haproxy", "image"), vb.Haproxy.Image}} {
			if img.img.URI == "" {
				continue // not in this bundle: the default image is used
			}
			if problem, _ := ImageProblems(img.img.Ref()); problem != "" {
				d.fail(lines.lineOf(img.path.Child("uri").String()), field.Invalid(img.path.Child("uri"), img.img.Ref(), problem))
			}
		}
		b.Versions = append(b.Versions, VersionsBundle{KubeVersion: vb.KubeVersion, KubeRBACProxy: vb.ClusterAPI.KubeProxy, HAProxy: vb.Haproxy.Image})
	}
	if len(d.errs) > 0 {
		return nil, &InvalidError{Problems: lines.problems(path, d.errs)}
	}
	return b, nil
}

// For picks the versions bundle of a Kubernetes version, as EKS Anywhere
// does (GetVersionsBundle, pkg/cluster/fetch.go); without one, the first,
// which EKS-A uses for the management components. exact says which.
func (b *Bundles) For(kube KubeVersion) (vb VersionsBundle, exact bool) {
	for _, v := range b.Versions {
		if k, err := ParseKubeVersion(v.KubeVersion); err == nil && k == kube {
			return v, true
		}
	}
	return b.Versions[0], false
}

// release says which EKS Anywhere release a bundle is for, when it says.
func (b *Bundles) release() string {
	switch {
	case b.CLIMinVersion == "" && b.CLIMaxVersion == "":
		return ""
	case b.CLIMinVersion == b.CLIMaxVersion || b.CLIMaxVersion == "":
		return b.CLIMinVersion
	case b.CLIMinVersion == "":
		return b.CLIMaxVersion
	}
	return fmt.Sprintf("%s to %s", b.CLIMinVersion, b.CLIMaxVersion)
}

// covers reports whether the bundle is for EKS-A release v (true when it
// does not say).
func (b *Bundles) covers(v EKSAVersion) bool {
	if lo, err := ParseEKSAVersion(b.CLIMinVersion); err == nil && v.Less(lo) {
		return false
	}
	if hi, err := ParseEKSAVersion(b.CLIMaxVersion); err == nil && hi.Less(v) {
		return false
	}
	return true
}
