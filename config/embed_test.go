package config

import (
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// Each shard is a Deployment of its own: its name, its pods labelled with
// the shard, --shard and the policy arguments of the first.
func TestShardDeployments(t *testing.T) {
	out, err := BuildWith(Options{Args: []string{"--management-cluster=default/mgmt"}, Shards: []string{"b", "c"}})
	if err != nil {
		t.Fatal(err)
	}
	deployments := map[string]map[string]any{}
	for _, doc := range strings.Split(string(out), "\n---\n") {
		var obj map[string]any
		if err := yaml.Unmarshal([]byte(doc), &obj); err != nil {
			t.Fatal(err)
		}
		if obj["kind"] == "Deployment" {
			deployments[obj["metadata"].(map[string]any)["name"].(string)] = obj
		}
	}
	if len(deployments) != 3 {
		t.Fatalf("%d Deployments, want 3 (the unsharded one, b, c)", len(deployments))
	}
	for name, shard := range map[string]string{ControllerName: "", ControllerName + "-b": "b", ControllerName + "-c": "c"} {
		d, ok := deployments[name]
		if !ok {
			t.Errorf("no Deployment %s", name)
			continue
		}
		spec := d["spec"].(map[string]any)
		sel := spec["selector"].(map[string]any)["matchLabels"].(map[string]any)
		labels := spec["template"].(map[string]any)["metadata"].(map[string]any)["labels"].(map[string]any)
		args := spec["template"].(map[string]any)["spec"].(map[string]any)["containers"].([]any)[0].(map[string]any)["args"].([]any)
		var flags []string
		for _, a := range args {
			flags = append(flags, a.(string))
		}
		joined := strings.Join(flags, " ")
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
