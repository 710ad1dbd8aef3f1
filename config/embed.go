// Package config holds the controller's kustomize base (embedded) and builds
// it with kustomize's krusty.
package config

import (
	"embed"
	"fmt"
	"io/fs"
	"path"
	"strings"

	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

//go:embed kustomization.yaml namespace.yaml rbac.yaml manager.yaml crd/*.yaml
var base embed.FS

// The defaults of `eksa-metrics controller manifests`.
const (
	DefaultImage     = "public.ecr.aws/eksa-metrics/eksa-metrics:v0.1.0"
	DefaultNamespace = "eksa-metrics-system"
)

// Build renders the base with an image and a namespace, as YAML.
func Build(image, namespace string) ([]byte, error) {
	mem := filesys.MakeFsInMemory()
	err := fs.WalkDir(base, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := base.ReadFile(p)
		if err != nil {
			return err
		}
		return mem.WriteFile(path.Join("/base", p), b)
	})
	if err != nil {
		return nil, err
	}
	name, tag, digest := splitImage(image)
	overlay := fmt.Sprintf("apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nnamespace: %q\nresources: [../base]\nimages:\n- name: public.ecr.aws/eksa-metrics/eksa-metrics\n  newName: %q\n",
		namespace, name)
	switch {
	case digest != "":
		overlay += fmt.Sprintf("  digest: %q\n", digest)
	case tag != "":
		overlay += fmt.Sprintf("  newTag: %q\n", tag)
	}
	if err := mem.WriteFile("/overlay/kustomization.yaml", []byte(overlay)); err != nil {
		return nil, err
	}
	rm, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(mem, "/overlay")
	if err != nil {
		return nil, fmt.Errorf("building the controller's kustomize base: %w", err)
	}
	return rm.AsYaml()
}

// splitImage splits repository[:tag][@digest].
func splitImage(image string) (name, tag, digest string) {
	name, digest, _ = strings.Cut(image, "@")
	if i := strings.LastIndex(name, ":"); i > strings.LastIndex(name, "/") {
		name, tag = name[:i], name[i+1:]
	}
	return name, tag, digest
}
