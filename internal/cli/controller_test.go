package cli

import (
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// controller manifests --namespace moves every binding's subject and the
// admission policy's user with the ServiceAccount, passes the policy flags
// on to the controller, and refuses names and images no API server or
// runtime would take.
func TestControllerManifestsFlags(t *testing.T) {
	code, out, stderr := run(t, "", "controller", "manifests", "--image", "registry.example/eksa-metrics:v0.1.0", "--namespace", "obs-system", "--management-cluster", "default/mgmt", "--privileged-namespace", "platform", "--kube-rbac-proxy-image", "registry.example/kube-rbac-proxy:v0.19.1")
	if code != 0 || stderr != "" {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	// Without --management-cluster it says what the controller then leaves out.
	if code, _, stderr := run(t, "", "controller", "manifests", "--image", "registry.example/eksa-metrics:v0.1.0"); code != 0 || !strings.Contains(stderr, "without --management-cluster, no Cluster is the management cluster") {
		t.Errorf("without --management-cluster: exit %d, %q", code, stderr)
	}
	// An image that is not pinned is written, with the warning the spec's
	// images get.
	for image, want := range map[string]string{
		"registry.example/eksa-metrics:latest": "uses the mutable tag latest",
		"registry.example/eksa-metrics":        "has no tag",
	} {
		code, out, stderr := run(t, "", "controller", "manifests", "--image", image, "--management-cluster", "default/mgmt")
		if code != 0 || !strings.Contains(out, "image: "+image+"\n") || !strings.Contains(stderr, "warning: --image \""+image+"\" "+want) {
			t.Errorf("--image %s: exit %d, stderr %q, want the manifests and a warning %q", image, code, stderr, want)
		}
	}
	for _, doc := range strings.Split(out, "\n---\n") {
		var obj struct {
			Kind     string
			Subjects []struct{ Namespace string }
		}
		if err := yaml.Unmarshal([]byte(doc), &obj); err != nil {
			t.Fatal(err)
		}
		for _, s := range obj.Subjects {
			if s.Namespace != "obs-system" {
				t.Errorf("a %s binds a subject in %q, not the controller's namespace obs-system", obj.Kind, s.Namespace)
			}
		}
	}
	for _, want := range []string{"system:serviceaccount:obs-system:eksa-metrics-controller", "--management-cluster=default/mgmt", "--privileged-namespace=platform", "--kube-rbac-proxy-image=registry.example/kube-rbac-proxy:v0.19.1"} {
		if !strings.Contains(out, want) {
			t.Errorf("the manifests lack %q", want)
		}
	}
	for _, tc := range []struct{ args []string }{
		{[]string{"--namespace", "Bad_NS"}},
		{[]string{"--image", "not a valid image"}},
		{[]string{"--management-cluster", "mgmt"}},
		{[]string{"--haproxy-image", "registry.example/UPPER:1"}},
		{[]string{"--monitoring-namespace", "Bad_NS"}},
	} {
		if code, _, stderr := run(t, "", append([]string{"controller", "manifests", "--image", "registry.example/eksa-metrics:v0.1.0"}, tc.args...)...); code != ExitUsage || stderr == "" {
			t.Errorf("%v: exit %d (%s), want %d with a reason", tc.args, code, stderr, ExitUsage)
		}
	}
}

// A management cluster below 1.30 serves no v1 ValidatingAdmissionPolicy:
// --kubernetes-version leaves the policy out and says what that costs.
func TestControllerManifestsForOlderManagementClusters(t *testing.T) {
	img := "registry.example/eksa-metrics:v0.1.0"
	for _, tc := range []struct {
		version    string
		wantPolicy bool
	}{{"1.29", false}, {"v1.28.5", false}, {"1.30", true}, {"", true}} {
		code, out, stderr := run(t, "", "controller", "manifests", "--image", img, "--management-cluster", "default/mgmt", "--kubernetes-version", tc.version)
		if code != ExitOK {
			t.Fatalf("%q: exit %d: %s", tc.version, code, stderr)
		}
		if got := strings.Contains(out, "kind: ValidatingAdmissionPolicy\n"); got != tc.wantPolicy || strings.Contains(out, "kind: ValidatingAdmissionPolicyBinding\n") != tc.wantPolicy {
			t.Errorf("%q: policy printed %v, want %v", tc.version, got, tc.wantPolicy)
		}
		if warned := strings.Contains(stderr, "the admission policy is left out: the controller's writes are held by its RBAC only"); warned == tc.wantPolicy {
			t.Errorf("%q: warning %v: %q", tc.version, warned, stderr)
		}
		if !strings.Contains(out, "kind: ClusterRole\n") {
			t.Errorf("%q: no RBAC", tc.version)
		}
	}
	if code, _, _ := run(t, "", "controller", "manifests", "--image", img, "--kubernetes-version", "2.1"); code != ExitUsage {
		t.Errorf("--kubernetes-version 2.1: exit %d, want %d", code, ExitUsage)
	}
}
