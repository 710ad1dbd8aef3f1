package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/eksa-metrics/eksa-metrics/internal/cli"
	"github.com/eksa-metrics/eksa-metrics/internal/testutil"
	"github.com/eksa-metrics/eksa-metrics/pkg/templates"
)

// With --images-from-bundles the controller takes the proxy images from
// the EKS Anywhere Bundles the Cluster runs (its EKSARelease for
// spec.eksaVersion v0.26.1), pinned by the bundle's digest: the real Bundles
// manifest of EKS-A's tests, served by the real API server with EKS-A's CRDs.
func TestControllerTakesImagesFromBundles(t *testing.T) {
	ctx := context.Background()
	f := newFleet(t, "w1")
	// Read as EKS-A reads it (sigs.k8s.io/yaml: a repeated key's last value
	// wins; the fixture repeats cloudStack).
	raw, err := os.ReadFile(filepath.Join(testutil.SharedFixtures(t), "manifests", "bundles.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var bundles map[string]any
	if err := yaml.Unmarshal(raw, &bundles); err != nil {
		t.Fatal(err)
	}
	bundles["metadata"] = map[string]any{"name": "bundles-1", "namespace": "eksa-system"}
	// The fixture's first versions bundle, for the fleet's Kubernetes version.
	vbs := bundles["spec"].(map[string]any)["versionsBundles"].([]any)
	vb := vbs[len(vbs)-1].(map[string]any)
	vb["kubeVersion"] = "1.34"
	haproxy := vb["haproxy"].(map[string]any)["image"].(map[string]any)
	want := fmt.Sprintf("%s@%s", haproxy["uri"], haproxy["imageDigest"])
	// Fields the v0.26.1 CRD requires that this older manifest predates
	// (placeholders: eksa-metrics reads none of them).
	placeholder := func(m map[string]any, path ...string) {
		for _, p := range path[:len(path)-1] {
			if _, ok := m[p].(map[string]any); !ok {
				m[p] = map[string]any{}
			}
			m = m[p].(map[string]any)
		}
		m[path[len(path)-1]] = map[string]any{"uri": "registry.example/placeholder:1"}
	}
	placeholder(vb, "tinkerbell", "tinkerbellStack", "tink", "tinkRelayInit")
	placeholder(vb, "tinkerbell", "tinkerbellStack", "hook", "iso", "amd")
	placeholder(vb, "tinkerbell", "tinkerbellStack", "hook", "iso", "arm")
	placeholder(vb, "tinkerbell", "tinkerbellStack", "stack")
	placeholder(vb, "tinkerbell", "tinkerbellStack", "tinkerbellCrds")
	placeholder(vb, "certManager", "startupapicheck")
	bundles["spec"].(map[string]any)["versionsBundles"] = []any{vb}
	release := map[string]any{"apiVersion": "anywhere.eks.amazonaws.com/v1alpha1", "kind": "EKSARelease",
		"metadata": map[string]any{"name": "eksa-v0-26-1", "namespace": "eksa-system"},
		"spec": map[string]any{"version": "v0.26.1", "gitCommit": "0000000", "releaseDate": "2026-01-01", "bundleManifestUrl": "https://example.invalid/bundle.yaml",
			"bundlesRef": map[string]any{"apiVersion": "anywhere.eks.amazonaws.com/v1alpha1", "name": "bundles-1", "namespace": "eksa-system"}}}
	if err := f.mgmt.Apply(ctx, "eks-a-cli", true, sanitize(bundles).(map[string]any), release); err != nil {
		t.Fatal(err)
	}
	f.startControllerWith(t, &counter{reqs: map[string]int{}}, func(o *cli.ControllerOptions) { o.ImagesFromBundles = true })
	f.putMetricsConfig(t, "default", "w1", map[string]any{"clusterRef": map[string]any{"kind": "Cluster", "name": "w1"},
		"scrapers": []any{map[string]any{"kind": "Group", "name": "metrics-readers"}}})
	f.waitFor(t, "the control-plane proxy with the bundle's HAProxy", func() error {
		ds, err := f.workloads["w1"].Client.AppsV1().DaemonSets(templates.SystemNS).Get(ctx, templates.ControlPlaneDS, metav1.GetOptions{})
		if err != nil {
			return err
		}
		var images []string
		for _, c := range ds.Spec.Template.Spec.Containers {
			images = append(images, c.Image)
		}
		if !strings.Contains(strings.Join(images, " "), want) {
			return fmt.Errorf("images %v, want %s", images, want)
		}
		return nil
	})
	// The events that say what runs reach the API server (events.k8s.io
	// refuses a note over 1024 bytes: the images with their digests are
	// several notes), and name the image.
	f.waitFor(t, "a Runs event on the MetricsConfig naming the bundle's HAProxy", func() error {
		events, err := f.mgmt.Client.EventsV1().Events("default").List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		var seen []string
		for _, e := range events.Items {
			if e.Regarding.Kind == "MetricsConfig" && e.Reason == "Runs" {
				if strings.Contains(e.Note, want) {
					return nil
				}
				seen = append(seen, e.Note)
			}
		}
		return fmt.Errorf("no Runs event names %s; Runs events: %q", want, seen)
	})
}
