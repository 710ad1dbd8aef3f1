package cli

import (
	"strings"
	"testing"

	"github.com/eksa-metrics/eksa-metrics/pkg/validate"
)

// complete runs cobra's hidden completion request and returns the
// candidates (without descriptions) and the directive line.
func complete(t *testing.T, args ...string) ([]string, string) {
	t.Helper()
	code, stdout, stderr := run(t, "", append([]string{"__complete"}, args...)...)
	if code != ExitOK {
		t.Fatalf("__complete %q: exit %d: %s", args, code, stderr)
	}
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	var out []string
	for _, l := range lines[:len(lines)-1] {
		name, _, _ := strings.Cut(l, "\t")
		out = append(out, name)
	}
	return out, lines[len(lines)-1]
}

func TestFlagValueCompletion(t *testing.T) {
	var checks []string
	for _, c := range validate.Checks() {
		checks = append(checks, c.Name)
	}
	for _, tc := range []struct {
		args      []string
		want      []string
		directive string
	}{
		{[]string{"generate", "-o", ""}, []string{"yaml", "json", "kustomize"}, ":4"},
		{[]string{"generate", "--output", ""}, []string{"yaml", "json", "kustomize"}, ":4"},
		{[]string{"validate", "-o", ""}, []string{"text", "json", "junit"}, ":4"},
		{[]string{"verify", "-o", ""}, []string{"table", "json"}, ":4"},
		{[]string{"version", "-o", ""}, []string{"text", "json"}, ":4"},
		{[]string{"apply", "--dry-run="}, []string{"none", "client", "server"}, ":4"},
		{[]string{"validate", "--skip", ""}, checks, ":4"},
		{[]string{"generate", "--capi-api-version", ""}, []string{"v1beta1", "v1beta2"}, ":4"},
		{[]string{"apply", "--capi-api-version", ""}, []string{"v1beta1", "v1beta2"}, ":4"},
		{[]string{"generate", "-f", ""}, []string{"yaml", "yml", "json"}, ":8"}, // ShellCompDirectiveFilterFileExt
		{[]string{"apply", "-f", ""}, []string{"yaml", "yml", "json"}, ":8"},
		{[]string{"validate", "--from", ""}, []string{"yaml", "yml", "json"}, ":8"},
		{[]string{"verify", "--bundles-override", ""}, []string{"yaml", "yml", "json"}, ":8"},
	} {
		got, directive := complete(t, tc.args...)
		if strings.Join(got, ",") != strings.Join(tc.want, ",") || directive != tc.directive {
			t.Errorf("__complete %q: %q %s, want %q %s", tc.args, got, directive, tc.want, tc.directive)
		}
	}
}

// Every -o completion is a value its command accepts.
func TestOutputCompletionsAreAccepted(t *testing.T) {
	for cmd, values := range outputFormats {
		for _, v := range values {
			var err error
			switch cmd {
			case "generate":
				o := &GenerateOptions{Filenames: []string{"c.yaml"}, Output: v}
				if v == "kustomize" {
					o.OutputDir = "out"
				}
				err = o.Validate()
			case "validate":
				err = (&ValidateOptions{Filenames: []string{"c.yaml"}, Output: v}).Validate()
			case "verify":
				err = (&VerifyOptions{Filename: "c.yaml", Output: v, Concurrency: 1, Timeout: 1}).Validate()
			case "version":
				code, _, stderr := run(t, "", "version", "-o", v)
				if code != ExitOK {
					t.Errorf("version -o %s: exit %d: %s", v, code, stderr)
				}
			default:
				t.Errorf("no check for %s", cmd)
			}
			if err != nil {
				t.Errorf("%s -o %s: %v", cmd, v, err)
			}
		}
	}
}

// A bare --dry-run means client, as in kubectl; a value needs =, and a
// bad value is still a usage error.
func TestDryRunDefault(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
		code int
	}{
		{[]string{}, "none", ExitOK},
		{[]string{"--dry-run"}, "client", ExitOK},
		{[]string{"--dry-run=server"}, "server", ExitOK},
		{[]string{"--dry-run=none"}, "none", ExitOK},
		{[]string{"--dry-run=bogus"}, "", ExitUsage},
		{[]string{"--dry-run="}, "", ExitUsage},
		{[]string{"--dry-run", "server"}, "", ExitUsage}, // "server" is a positional argument: refused, never a real apply
	} {
		var got *ApplyOptions
		cmd := NewCmdApply(&Factory{}, func(o *ApplyOptions) error { got = o; return nil })
		cmd.SetFlagErrorFunc(flagError)
		cmd.SetArgs(append([]string{"-f", "c.yaml"}, tc.args...))
		cmd.SilenceErrors, cmd.SilenceUsage = true, true
		err := cmd.Execute()
		if code := ExitCode(err); code != tc.code {
			t.Errorf("%q: exit %d (%v), want %d", tc.args, code, err, tc.code)
			continue
		}
		if tc.code == ExitOK && got.DryRun != tc.want {
			t.Errorf("%q: --dry-run %q, want %q", tc.args, got.DryRun, tc.want)
		}
	}
}
