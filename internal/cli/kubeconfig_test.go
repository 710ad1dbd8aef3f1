package cli

import (
	"fmt"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/eksa-metrics/eksa-metrics/pkg/cluster"
)

// A workload kubeconfig Secret refused for its plugins or files is invalid
// input (exit 3), also when wrapped; an unreachable cluster stays exit 1.
func TestExitCodeOfARefusedKubeconfig(t *testing.T) {
	refused := &cluster.KubeconfigRefusedError{Source: "Secret eksa-system/prod-kubeconfig", Refused: []cluster.RefusedField{{Entry: `user "a"`, Field: "exec", Why: "it would run a command"}}}
	if got := ExitCode(fmt.Errorf("connecting: %w", refused)); got != ExitInvalid {
		t.Errorf("refused kubeconfig: exit %d, want %d", got, ExitInvalid)
	}
	if got := ExitCode(&cluster.UnreachableError{Role: "workload", Kubeconfig: "k", Err: fmt.Errorf("connection refused")}); got != ExitRuntime {
		t.Errorf("unreachable cluster: exit %d, want %d", got, ExitRuntime)
	}
}

// Every command that reads workload kubeconfigs from Secrets has
// --insecure-kubeconfig-secrets, off by default, and it reaches the engine.
func TestInsecureKubeconfigSecretsFlag(t *testing.T) {
	f := &Factory{}
	var apply *ApplyOptions
	var verify *VerifyOptions
	var validate *ValidateOptions
	cmds := map[string]*cobra.Command{
		"apply":          NewCmdApply(f, func(o *ApplyOptions) error { apply = o; return nil }),
		"verify":         NewCmdVerify(f, func(o *VerifyOptions) error { verify = o; return nil }),
		"validate":       NewCmdValidate(f, func(o *ValidateOptions) error { validate = o; return nil }),
		"controller run": newCmdControllerRun(f),
	}
	for name, cmd := range cmds {
		fl := cmd.Flags().Lookup("insecure-kubeconfig-secrets")
		if fl == nil || fl.DefValue != "false" {
			t.Errorf("%s: --insecure-kubeconfig-secrets %+v, want a flag off by default", name, fl)
		}
	}
	for name, cmd := range cmds {
		if name == "controller run" {
			continue
		}
		cmd.SetArgs([]string{"-f", "cluster.yaml", "--insecure-kubeconfig-secrets"})
		if err := cmd.Execute(); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	for name, flags := range map[string]*ClusterFlags{"apply": &apply.ClusterFlags, "verify": &verify.ClusterFlags, "validate": &validate.ClusterFlags} {
		if !flags.source(f).TrustKubeconfigSecrets {
			t.Errorf("%s: --insecure-kubeconfig-secrets does not reach engine.ClusterSource", name)
		}
	}
}

// The controller reads its own kubeconfig as the other commands do
// (engine.ConnectManagement): a missing file is invalid input, exit 3,
// naming the file and the flag, before any manager starts.
func TestControllerRunRefusesAMissingKubeconfig(t *testing.T) {
	missing := t.TempDir() + "/nope.kubeconfig"
	code, _, stderr := run(t, "", "controller", "run", "--kubeconfig", missing)
	if code != ExitInvalid || !strings.Contains(stderr, missing) || !strings.Contains(stderr, "no such file") || !strings.Contains(stderr, "--kubeconfig") {
		t.Errorf("controller run --kubeconfig %s: exit %d, %s", missing, code, stderr)
	}
}
