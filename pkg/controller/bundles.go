package controller

import (
	"bytes"
	"context"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"

	"github.com/eksa-metrics/eksa-metrics/pkg/spec"
)

// bundles reads the EKS Anywhere Bundles a Cluster runs, for its images
// pinned by digest (Policy.ImagesFromBundles): the Bundles its EKSARelease
// names (spec.eksaVersion; EKS-A names the release eksa-<version with dashes>
// in eksa-system, release/api/v1alpha1/eksarelease.go
// GenerateEKSAReleaseName), else the Cluster's own spec.bundlesRef (older
// releases).
func (r *Reconciler) bundles(ctx context.Context, obj *unstructured.Unstructured) (*spec.Bundles, error) {
	ref, _, _ := unstructured.NestedStringMap(obj.Object, "spec", "bundlesRef")
	if v, _, _ := unstructured.NestedString(obj.Object, "spec", "eksaVersion"); v != "" {
		name := "eksa-" + strings.ReplaceAll(strings.ReplaceAll(v, "+", "-plus-"), ".", "-")
		rel := &unstructured.Unstructured{}
		rel.SetAPIVersion(spec.BundlesAPIVersion)
		rel.SetKind("EKSARelease")
		if err := r.Client.Get(ctx, types.NamespacedName{Namespace: EKSASystemNamespace, Name: name}, rel); err != nil {
			return nil, fmt.Errorf("reading the EKSARelease %s/%s of spec.eksaVersion %s for its Bundles (--images-from-bundles): %w", EKSASystemNamespace, name, v, err)
		}
		ref, _, _ = unstructured.NestedStringMap(rel.Object, "spec", "bundlesRef")
	}
	if ref["name"] == "" {
		return nil, fmt.Errorf("Cluster %s/%s names no Bundles (neither spec.eksaVersion nor spec.bundlesRef), so --images-from-bundles has no images for it", obj.GetNamespace(), obj.GetName())
	}
	ns := ref["namespace"]
	if ns == "" {
		ns = obj.GetNamespace()
	}
	b := &unstructured.Unstructured{}
	b.SetAPIVersion(spec.BundlesAPIVersion)
	b.SetKind(spec.BundlesKind)
	if err := r.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: ref["name"]}, b); err != nil {
		return nil, fmt.Errorf("reading Bundles %s/%s (--images-from-bundles): %w", ns, ref["name"], err)
	}
	raw, err := yaml.Marshal(b.Object)
	if err != nil {
		return nil, err
	}
	return spec.LoadBundles(fmt.Sprintf("Bundles %s/%s", ns, ref["name"]), bytes.NewReader(raw))
}
