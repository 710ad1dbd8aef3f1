package cli

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/eksa-metrics/eksa-metrics/pkg/cluster"
)

// Mistyped commands and flags are usage errors (exit 2) with a suggestion,
// also when flags follow the mistyped command, in groups of commands, and
// for help topics.
func TestDidYouMeanCommandsAndFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"genrate"}, []string{`unknown command "genrate" for "eksa-metrics"`, "Did you mean this?\n\tgenerate"}},
		{[]string{"genrate", "-f", "x.yaml"}, []string{`unknown command "genrate" for "eksa-metrics"`, "Did you mean this?\n\tgenerate"}},
		{[]string{"valdate", "--skip", "drift"}, []string{`unknown command "valdate"`, "\tvalidate"}},
		{[]string{"controller", "manifestz", "--image", "x"}, []string{`unknown command "manifestz" for "eksa-metrics controller"`, "\tmanifests"}},
		{[]string{"controller", "nope"}, []string{`unknown command "nope" for "eksa-metrics controller"`}},
		{[]string{"completion", "bsh"}, []string{`unknown command "bsh" for "eksa-metrics completion"`, "\tbash"}},
		{[]string{"help", "nope"}, []string{`unknown help topic "nope"`}},
		{[]string{"help", "genrate"}, []string{`unknown help topic "genrate"`, "\tgenerate"}},
		{[]string{"help", "controller", "rnu"}, []string{`unknown help topic "controller rnu" for "eksa-metrics controller"`, "\trun"}},
		{[]string{"generate", "--outptu", "json"}, []string{"unknown flag: --outptu", "Did you mean this?\n\t--output"}},
		{[]string{"apply", "--dryrun"}, []string{"unknown flag: --dryrun", "\t--dry-run"}},
		{[]string{"validate", "--kubeconfg", "k"}, []string{"\t--kubeconfig"}},
	} {
		code, stdout, stderr := run(t, "", tc.args...)
		if code != ExitUsage || stdout != "" {
			t.Errorf("%q: exit %d, stdout %q; want exit %d and no data", tc.args, code, stdout, ExitUsage)
		}
		for _, w := range tc.want {
			if !strings.Contains(stderr, w) {
				t.Errorf("%q: stderr\n%s\nwant it to contain %q", tc.args, stderr, w)
			}
		}
		if strings.Contains(stderr, "shorthand") {
			t.Errorf("%q: %s", tc.args, stderr)
		}
	}
	// No suggestion when nothing is close.
	if _, _, stderr := run(t, "", "generate", "--zzzzzz"); strings.Contains(stderr, "Did you mean") {
		t.Errorf("--zzzzzz: %s", stderr)
	}
	// Known topics and groups still print their help.
	for _, args := range [][]string{{"help", "generate"}, {"help", "controller", "run"}, {"controller"}, {"help"}} {
		if code, stdout, _ := run(t, "", args...); code != ExitOK || !strings.Contains(stdout, "Usage:") {
			t.Errorf("%q: exit %d, stdout %q", args, code, stdout)
		}
	}
}

// A missing or malformed kubeconfig is invalid input (exit 3) naming the
// file and the flag, not an unreachable cluster (exit 1).
func TestBadKubeconfigIsInvalidInput(t *testing.T) {
	if got := ExitCode(fmt.Errorf("connecting: %w", &cluster.KubeconfigInvalidError{Role: "management", Kubeconfig: "k", Err: errors.New("no such file")})); got != ExitInvalid {
		t.Errorf("exit %d, want %d", got, ExitInvalid)
	}
	missing := filepath.Join(t.TempDir(), "missing.kubeconfig")
	code, stdout, stderr := run(t, "", "apply", "-f", "../../examples/vsphere-management.yaml", "--kubeconfig", missing, "--dry-run")
	if code != ExitInvalid || stdout != "" || !strings.Contains(stderr, `"`+missing+`" (from --kubeconfig)`) || strings.Contains(stderr, "cannot reach") {
		t.Errorf("exit %d, stderr:\n%s", code, stderr)
	}
}
