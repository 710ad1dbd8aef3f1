package cluster

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/client-go/tools/clientcmd"
)

const unreachableKubeconfig = `apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: x}}]
contexts: [{name: ctx, context: {cluster: c, user: u}}]
current-context: ctx
`

// A missing or malformed kubeconfig, or one without the asked context, is
// invalid input that names the file and where it came from, never "cannot
// reach"; a cluster that does not answer is still an *UnreachableError that
// says where its kubeconfig came from.
func TestConnectKubeconfigErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.kubeconfig")
	good := filepath.Join(dir, "good.kubeconfig")
	missing := filepath.Join(dir, "missing.kubeconfig")
	if err := os.WriteFile(bad, []byte("foo: [\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(good, []byte(unreachableKubeconfig), 0o600); err != nil {
		t.Fatal(err)
	}
	invalid := func(name, role string, opts ConnectOptions, want ...string) {
		t.Helper()
		_, err := Connect(context.Background(), role, opts)
		var bad *KubeconfigInvalidError
		if !errors.As(err, &bad) {
			t.Fatalf("%s: want a *KubeconfigInvalidError, got %T: %v", name, err, err)
		}
		if errors.As(err, new(*UnreachableError)) || strings.Contains(err.Error(), "cannot reach") {
			t.Errorf("%s: reported as unreachable: %v", name, err)
		}
		for _, w := range want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %v\nwant it to contain %q", name, err, w)
			}
		}
	}
	t.Setenv(clientcmd.RecommendedConfigPathEnvVar, "")
	invalid("missing --kubeconfig", "management", ConnectOptions{Kubeconfig: missing}, `"`+missing+`" (from --kubeconfig)`, "no such file")
	invalid("malformed --kubeconfig", "management", ConnectOptions{Kubeconfig: bad}, `"`+bad+`" (from --kubeconfig)`, "yaml")
	invalid("missing --workload-kubeconfig", "workload", ConnectOptions{Kubeconfig: missing}, "(from --workload-kubeconfig)", "no such file")
	invalid("unknown context", "management", ConnectOptions{Kubeconfig: good, Context: "nope"}, `"`+good+`" (from --kubeconfig)`, `no context "nope"`)
	invalid("malformed Secret", "workload", ConnectOptions{Kubeconfig: "Secret eksa-system/w-kubeconfig on the management cluster", KubeconfigData: []byte("foo: [\n")},
		"Secret eksa-system/w-kubeconfig", "parsing the kubeconfig")

	list := missing + string(filepath.ListSeparator) + bad
	t.Setenv(clientcmd.RecommendedConfigPathEnvVar, list)
	invalid("malformed file in $KUBECONFIG", "management", ConnectOptions{}, `"`+list+`" (from $KUBECONFIG)`, bad)
	t.Setenv(clientcmd.RecommendedConfigPathEnvVar, missing)
	invalid("$KUBECONFIG names no file", "management", ConnectOptions{}, `"`+missing+`" (from $KUBECONFIG)`, "no such file")

	if _, err := os.Stat(clientcmd.RecommendedHomeFile); os.IsNotExist(err) {
		t.Setenv(clientcmd.RecommendedConfigPathEnvVar, "")
		invalid("no ~/.kube/config", "management", ConnectOptions{}, `"`+clientcmd.RecommendedHomeFile+`" (the default, as neither --kubeconfig nor $KUBECONFIG is set)`)
	}

	t.Setenv(clientcmd.RecommendedConfigPathEnvVar, good)
	for name, opts := range map[string]ConnectOptions{"--kubeconfig": {Kubeconfig: good}, "$KUBECONFIG": {}} {
		_, err := Connect(context.Background(), "management", opts)
		var unreachable *UnreachableError
		if !errors.As(err, &unreachable) {
			t.Fatalf("%s: want an *UnreachableError, got %T: %v", name, err, err)
		}
		if want := `cannot reach the management cluster of kubeconfig "` + good + `" (from ` + name + `)`; !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v\nwant it to contain %q", name, err, want)
		}
	}
}
