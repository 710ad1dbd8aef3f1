// Package config holds the controller's kustomize base (embedded) and builds
// it with kustomize's krusty.
package config

import (
	"embed"
	"fmt"
	"io/fs"
	"path"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"

	metricsv1alpha1 "github.com/eksa-metrics/eksa-metrics/pkg/apis/metrics/v1alpha1"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

//go:embed kustomization.yaml namespace.yaml manager.yaml networkpolicy.yaml crd/*.yaml
var base embed.FS

// The defaults of `eksa-metrics controller manifests`.
const (
	// ImageRepository is where the image of each release is published
	// (tagged with the release: a release build installs its own); make
	// image builds it.
	ImageRepository  = "public.ecr.aws/eksa-metrics/eksa-metrics"
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
	// WorkloadClusters are the EKS-A Clusters whose admin kubeconfig Secret
	// (eksa-system/<name>-kubeconfig) the controller may read
	// (KubeconfigRole): the workload clusters it keeps. No other Secret of
	// eksa-system is readable to it.
	WorkloadClusters []string
	// Shards adds, per shard, a Deployment eksa-metrics-controller-<shard>
	// running `controller run --shard <shard>` (the Clusters labelled
	// metrics.anywhere.eks.amazonaws.com/shard=<shard>); the first
	// Deployment keeps the Clusters without the label.
	Shards []string
	// ImagePrefixes are more repositories (prefixes of image references)
	// the controller may run its proxies and sidecars from, beyond
	// DefaultImagePrefixes: the registry of Bundles that name another
	// (--images-from-bundles). The repositories of --kube-rbac-proxy-image
	// and --haproxy-image are added by the manifests command.
	ImagePrefixes []string
	// WithoutAdmissionPolicy leaves the ValidatingAdmissionPolicy and its
	// binding out: a management cluster on Kubernetes 1.28 or 1.29 does not
	// serve admissionregistration.k8s.io/v1 policies (GA in 1.30; v1beta1
	// there is off unless the API server enables it), and would refuse
	// the whole stream. The controller's writes are then held by RBAC only.
	WithoutAdmissionPolicy bool
	// MetricsCertificates says who issues the certificate of the
	// controller's own metrics endpoint: cert-manager (the default; every
	// EKS Anywhere management cluster runs it) or none (controller-runtime's
	// self-signed certificate).
	MetricsCertificates string
	// ServiceMonitor adds a ServiceMonitor of the controller's metrics,
	// with ServiceMonitorLabels (what a Prometheus selects).
	ServiceMonitor       bool
	ServiceMonitorLabels map[string]string
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
	// The image exactly as given: kustomize's images transformer keeps the
	// base's tag when a reference has none, and so would install a tag
	// nobody named.
	overlay := fmt.Sprintf("apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nnamespace: %q\nresources: [../base]\n"+
		"patches:\n- target: {kind: Deployment, name: %s}\n  patch: |\n    - {op: replace, path: /spec/template/spec/containers/0/image, value: %q}\n",
		o.Namespace, ControllerName, o.Image)
	for _, a := range o.Args {
		overlay += fmt.Sprintf("    - {op: add, path: /spec/template/spec/containers/0/args/-, value: %q}\n", a)
	}
	if o.MetricsCertificates != CertificatesNone {
		overlay += metricsCertificatePatch()
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
	if out, err = addShards(out, o.Shards); err != nil {
		return nil, err
	}
	rbac, err := toYAML(append(rbacObjects(o), metricsObjects(o)...))
	if err != nil {
		return nil, err
	}
	return append(out, rbac...), nil
}

// ShardLabel is the label of a shard's Clusters and of its pods.
const ShardLabel = metricsv1alpha1.ShardLabel

// addShards appends a copy of the controller's Deployment per shard: its
// own name, pods labelled with the shard (the metrics Service still
// selects them all), and --shard.
func addShards(out []byte, shards []string) ([]byte, error) {
	if len(shards) == 0 {
		return out, nil
	}
	var deployment map[string]any
	for _, doc := range strings.Split(string(out), "\n---\n") {
		var obj map[string]any
		if err := yaml.Unmarshal([]byte(doc), &obj); err != nil {
			return nil, err
		}
		if obj["kind"] == "Deployment" {
			deployment = obj
		}
	}
	if deployment == nil {
		return nil, fmt.Errorf("the controller's kustomize base has no Deployment")
	}
	for _, shard := range shards {
		d := runtime.DeepCopyJSON(deployment)
		md := d["metadata"].(map[string]any)
		md["name"] = ControllerName + "-" + shard
		spec := d["spec"].(map[string]any)
		spec["selector"].(map[string]any)["matchLabels"].(map[string]any)[ShardLabel] = shard
		tmpl := spec["template"].(map[string]any)
		tmpl["metadata"].(map[string]any)["labels"].(map[string]any)[ShardLabel] = shard
		c := tmpl["spec"].(map[string]any)["containers"].([]any)[0].(map[string]any)
		c["args"] = append(c["args"].([]any), "--shard="+shard)
		b, err := yaml.Marshal(d)
		if err != nil {
			return nil, err
		}
		out = append(append(out, "---\n"...), b...)
	}
	return out, nil
}
