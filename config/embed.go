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

//go:embed kustomization.yaml namespace.yaml manager.yaml crd/*.yaml
var base embed.FS

// The defaults of `eksa-metrics controller manifests`.
const (
	DefaultImage     = "public.ecr.aws/eksa-metrics/eksa-metrics:v0.1.0"
	DefaultNamespace = "eksa-metrics-system"
)

// Options say how the controller is installed.
type Options struct {
	Image     string
	Namespace string
	// Args are more flags of `controller run` (the policy: the management
	// cluster, privileged namespaces, images).
	Args []string
	// MonitoringNamespaces are the namespaces of the management cluster
	// where the controller may write scrape configuration
	// (scrapeConfig.namespace); default: monitoring.
	MonitoringNamespaces []string
}

// Build renders the base with an image and a namespace, as YAML.
func Build(image, namespace string) ([]byte, error) {
	return BuildWith(Options{Image: image, Namespace: namespace})
}

// BuildWith renders the base and the RBAC for the options, as YAML.
func BuildWith(o Options) ([]byte, error) {
	o = o.withDefaults()
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
	name, tag, digest := splitImage(o.Image)
	overlay := fmt.Sprintf("apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nnamespace: %q\nresources: [../base]\nimages:\n- name: public.ecr.aws/eksa-metrics/eksa-metrics\n  newName: %q\n",
		o.Namespace, name)
	switch {
	case digest != "":
		overlay += fmt.Sprintf("  digest: %q\n", digest)
	case tag != "":
		overlay += fmt.Sprintf("  newTag: %q\n", tag)
	}
	if len(o.Args) > 0 {
		overlay += "patches:\n- target: {kind: Deployment, name: " + ControllerName + "}\n  patch: |\n"
		for _, a := range o.Args {
			overlay += fmt.Sprintf("    - {op: add, path: /spec/template/spec/containers/0/args/-, value: %q}\n", a)
		}
	}
	if err := mem.WriteFile("/overlay/kustomization.yaml", []byte(overlay)); err != nil {
		return nil, err
	}
	rm, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(mem, "/overlay")
	if err != nil {
		return nil, fmt.Errorf("building the controller's kustomize base: %w", err)
	}
	out, err := rm.AsYaml()
	if err != nil {
		return nil, err
	}
	rbac, err := toYAML(rbacObjects(o))
	if err != nil {
		return nil, err
	}
	return append(out, rbac...), nil
}

// splitImage splits repository[:tag][@digest].
func splitImage(image string) (name, tag, digest string) {
	name, digest, _ = strings.Cut(image, "@")
	if i := strings.LastIndex(name, ":"); i > strings.LastIndex(name, "/") {
		name, tag = name[:i], name[i+1:]
	}
	return name, tag, digest
}
