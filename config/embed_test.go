package config

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/yaml"

	"github.com/eksa-metrics/eksa-metrics/internal/testutil"
)

// Each shard is a Deployment of its own: its name, its pods labelled with
// the shard, --shard and the policy arguments of the first.
func TestShardDeployments(t *testing.T) {
	out, err := BuildWith(Options{Args: []string{"--management-cluster=default/mgmt"}, Shards: []string{"b", "c"}})
	if err != nil {
		t.Fatal(err)
	}
	deployments := deploymentsOf(t, out)
	if len(deployments) != 3 {
		t.Fatalf("%d Deployments, want 3 (the unsharded one, b, c)", len(deployments))
	}
	for name, shard := range map[string]string{ControllerName: "", ControllerName + "-b": "b", ControllerName + "-c": "c"} {
		d, ok := deployments[name]
		if !ok {
			t.Errorf("no Deployment %s", name)
			continue
		}
		sel := d.Spec.Selector.MatchLabels
		labels := d.Spec.Template.Labels
		joined := strings.Join(d.Spec.Template.Spec.Containers[0].Args, " ")
		if !strings.Contains(joined, "--management-cluster=default/mgmt") {
			t.Errorf("%s: args %s lack the policy", name, joined)
		}
		if shard == "" {
			if _, ok := sel[ShardLabel]; ok || strings.Contains(joined, "--shard") {
				t.Errorf("%s: the unsharded Deployment has a shard: %v %s", name, sel, joined)
			}
			continue
		}
		if sel[ShardLabel] != shard || labels[ShardLabel] != shard || !strings.Contains(joined, "--shard="+shard) {
			t.Errorf("%s: selector %v, labels %v, args %s", name, sel, labels, joined)
		}
	}
}

// Every Deployment's GOMEMLIMIT is under its container's memory limit,
// with room for what is not heap (stacks, the runtime, buffers): a figure
// left behind when the limit changes would let the container be OOM-killed
// before the garbage collector works harder.
func TestMemoryLimitUnderContainerLimit(t *testing.T) {
	out, err := BuildWith(Options{Shards: []string{"b"}})
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	for _, d := range deploymentsOf(t, out) {
		for _, c := range d.Spec.Template.Spec.Containers {
			seen++
			limit := c.Resources.Limits.Memory()
			var goLimit string
			for _, e := range c.Env {
				if e.Name == "GOMEMLIMIT" {
					goLimit = e.Value
				}
			}
			mib, err := strconv.Atoi(strings.TrimSuffix(goLimit, "MiB"))
			if err != nil || !strings.HasSuffix(goLimit, "MiB") {
				t.Errorf("%s/%s: GOMEMLIMIT %q, want <n>MiB", d.Name, c.Name, goLimit)
				continue
			}
			if ratio := float64(mib<<20) / float64(limit.Value()); ratio < 0.8 || ratio > 0.92 {
				t.Errorf("%s/%s: GOMEMLIMIT %s is %.0f%% of the memory limit %s, want 80%% to 92%%", d.Name, c.Name, goLimit, 100*ratio, limit)
			}
		}
	}
	if seen != 2 {
		t.Fatalf("%d containers checked, want 2 (the unsharded Deployment and shard b)", seen)
	}
}

// deploymentsOf decodes the Deployments of a build, by name.
func deploymentsOf(t *testing.T, out []byte) map[string]appsv1.Deployment {
	t.Helper()
	deployments := map[string]appsv1.Deployment{}
	for _, doc := range strings.Split(string(out), "\n---\n") {
		var d appsv1.Deployment
		if err := yaml.Unmarshal([]byte(doc), &d); err != nil {
			t.Fatal(err)
		}
		if d.Kind == "Deployment" {
			deployments[d.Name] = d
		}
	}
	return deployments
}

// docs/controller.md shows the plain job for the controller's metrics as
// MetricsScrapeJob renders it.
func TestDocsShowTheControllerScrapeJob(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join(testutil.RepoRoot(), "docs", "controller.md"))
	if err != nil {
		t.Fatal(err)
	}
	if job := MetricsScrapeJob(DefaultNamespace, "/etc/prometheus/eksa-metrics-controller/ca.crt"); !strings.Contains(string(doc), job) {
		t.Errorf("docs/controller.md lacks the job:\n%s", job)
	}
}

// By default the Deployment mounts the metrics certificate where
// controller-runtime reads it; with none, nothing is added.
func TestMetricsCertificateMount(t *testing.T) {
	for _, tc := range []struct {
		certs string
		want  bool
	}{{"", true}, {CertificatesCertManager, true}, {CertificatesNone, false}} {
		out, err := BuildWith(Options{Image: ImageRepository + ":v0.1.0", MetricsCertificates: tc.certs})
		if err != nil {
			t.Fatal(err)
		}
		got := strings.Contains(string(out), "mountPath: "+MetricsCertDir) && strings.Contains(string(out), "kind: Certificate")
		if got != tc.want {
			t.Errorf("--metrics-certificates %q: mount and Certificate %t, want %t", tc.certs, got, tc.want)
		}
	}
}
