package cli

import (
	"github.com/spf13/cobra"

	"github.com/eksa-metrics/eksa-metrics/pkg/spec"
	"github.com/eksa-metrics/eksa-metrics/pkg/validate"
)

// outputFormats are the -o values of each command, as its Validate accepts
// them (TestOutputCompletionsAreAccepted keeps the two together).
var outputFormats = map[string][]string{
	"generate": {"yaml", "json", "kustomize"},
	"validate": {"text", "json", "junit"},
	"verify":   {"table", "json"},
	"version":  {"text", "json"},
}

// dryRunValues are the values of apply --dry-run.
var dryRunValues = []string{"none", "client", "server"}

// registerCompletions completes flag values in every shell: -o, --dry-run,
// --skip (the validate checks), --capi-api-version, and -f and
// --bundles-override to YAML/JSON files (and directories).
func registerCompletions(root *cobra.Command) {
	walk(root, func(c *cobra.Command) {
		fl := c.Flags()
		fixed := func(name string, values ...string) {
			if fl.Lookup(name) != nil {
				_ = c.RegisterFlagCompletionFunc(name, cobra.FixedCompletions(values, cobra.ShellCompDirectiveNoFileComp))
			}
		}
		if v, ok := outputFormats[c.Name()]; ok && c.Parent() == root {
			fixed("output", v...)
		}
		fixed("dry-run", dryRunValues...)
		fixed("capi-api-version", spec.CAPIv1beta1, spec.CAPIv1beta2)
		if fl.Lookup("skip") != nil {
			var checks []string
			for _, ch := range validate.Checks() {
				checks = append(checks, ch.Name+"\t"+ch.Kind)
			}
			fixed("skip", checks...)
		}
		for _, name := range []string{"filename", "from", "bundles-override"} {
			if fl.Lookup(name) != nil {
				_ = c.MarkFlagFilename(name, "yaml", "yml", "json")
			}
		}
	})
}
