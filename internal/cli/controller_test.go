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
