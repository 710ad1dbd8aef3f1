package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/eksa-metrics/eksa-metrics/pkg/spec"
)

// Main runs the command line and returns the exit code.
func Main(ctx context.Context, args []string, streams IOStreams) int {
	f := &Factory{IOStreams: streams}
	root := NewRootCmd(f)
	root.SetArgs(args)
	root.SetIn(streams.In)
	root.SetOut(streams.Out)
	root.SetErr(streams.ErrOut)
	cmd, err := root.ExecuteContextC(ctx)
	if err != nil {
		present(streams.ErrOut, err, cmd.CommandPath())
	}
	return ExitCode(err)
}

// Run is Main for the process.
func Run() int {
	return Main(context.Background(), os.Args[1:], IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr})
}

// NewRootCmd builds the command tree.
func NewRootCmd(f *Factory) *cobra.Command {
	root := &cobra.Command{
		Use:   "eksa-metrics",
		Short: "Secure, declarative Prometheus metrics for EKS Anywhere clusters",
		Long: `eksa-metrics reads an EKS Anywhere cluster spec with a metrics section and
renders what makes every component scrapeable securely: KubeadmControlPlane
changes, proxies, least-privilege RBAC and scrape configuration.`,
		SilenceErrors: true,
		SilenceUsage:  true,
		Args:          noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return cmd.Help()
		},
	}
	root.PersistentFlags().IntVarP(&f.Verbosity, "verbosity", "v", 0, "log level: 0 nothing but warnings, 1 decisions (contract, stack, what is skipped), 6 every API request (logs go to stderr)")
	root.SetFlagErrorFunc(flagError)
	root.AddCommand(NewCmdGenerate(f, nil), NewCmdApply(f, nil), NewCmdVerify(f, nil), NewCmdValidate(f, nil), NewCmdVersion(f), NewCmdController(f), NewCmdKubeletApprover(f))
	root.SetHelpCommand(newCmdHelp())
	// The completion scripts go where the command's output goes: cobra's
	// completion commands take the writer when they are made.
	if f.IOStreams.Out != nil {
		root.SetOut(f.IOStreams.Out)
	}
	root.InitDefaultCompletionCmd()
	// A group of commands (controller, completion) given an unknown
	// subcommand is a usage error with a suggestion, not its help and exit 0.
	walk(root, func(c *cobra.Command) {
		c.SuggestionsMinimumDistance = 2
		if c.HasSubCommands() && !c.Runnable() {
			c.Args = noArgs
			c.RunE = func(cmd *cobra.Command, args []string) error { return cmd.Help() }
		}
	})
	registerCompletions(root)
	return root
}

// walk calls fn for c and every command below it.
func walk(c *cobra.Command, fn func(*cobra.Command)) {
	fn(c)
	for _, sub := range c.Commands() {
		walk(sub, fn)
	}
}

// flagError makes every flag error a usage error. A mistyped command
// followed by flags (eksa-metrics genrate -f x.yaml) fails while parsing the
// flags of its parent: it is reported as the unknown command it is. An
// unknown long flag gets the closest defined flag as a suggestion.
func flagError(cmd *cobra.Command, err error) error {
	if cmd.HasAvailableSubCommands() {
		if args := cmd.Flags().Args(); len(args) > 0 {
			return noArgs(cmd, args[:1])
		}
	}
	var notExist *pflag.NotExistError
	if errors.As(err, &notExist) && notExist.GetSpecifiedShortnames() == "" {
		if s := closestFlag(cmd.Flags(), notExist.GetSpecifiedName()); s != "" {
			return &usageError{fmt.Errorf("%w\n\nDid you mean this?\n\t--%s", err, s)}
		}
	}
	return &usageError{err}
}

// closestFlag is the visible flag whose name is nearest to name: within an
// edit distance of 2, or name is a prefix of it; "" when none is.
func closestFlag(fs *pflag.FlagSet, name string) string {
	best, bestD := "", 3
	fs.VisitAll(func(f *pflag.Flag) {
		if f.Hidden {
			return
		}
		d := spec.EditDistance(strings.ToLower(name), f.Name)
		if d > 2 && len(name) >= 3 && strings.HasPrefix(f.Name, name) {
			d = 2
		}
		if d < bestD {
			best, bestD = f.Name, d
		}
	})
	return best
}

// newCmdHelp is cobra's help command, except that an unknown topic is a
// usage error (exit 2) with a suggestion.
func newCmdHelp() *cobra.Command {
	return &cobra.Command{
		Use:   "help [command]",
		Short: "Help about any command",
		Long:  "Help provides help for any command in the application.\nSimply type eksa-metrics help [path to command] for full details.",
		ValidArgsFunction: func(c *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
			target, rest, err := c.Root().Find(args)
			if err != nil || len(rest) > 0 {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			var out []string
			for _, sub := range target.Commands() {
				if (sub.IsAvailableCommand() || sub == c) && strings.HasPrefix(sub.Name(), toComplete) {
					out = append(out, sub.Name()+"\t"+sub.Short)
				}
			}
			return out, cobra.ShellCompDirectiveNoFileComp
		},
		RunE: func(c *cobra.Command, args []string) error {
			target, rest, err := c.Root().Find(args)
			if err == nil && len(rest) > 0 {
				err = fmt.Errorf("unknown help topic %q for %q%s", strings.Join(args, " "), target.CommandPath(), suggestion(target, rest[0]))
			}
			if err != nil {
				return &usageError{err}
			}
			target.InitDefaultHelpFlag()
			target.InitDefaultVersionFlag()
			return target.Help()
		},
	}
}

// suggestion is cobra's "Did you mean this?" for a mistyped subcommand of
// cmd, or "".
func suggestion(cmd *cobra.Command, typed string) string {
	s := cmd.SuggestionsFor(typed)
	if len(s) == 0 {
		return ""
	}
	return "\n\nDid you mean this?\n\t" + strings.Join(s, "\n\t")
}

// noArgs refuses positional arguments as a usage error.
func noArgs(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return nil
	}
	if cmd.HasSubCommands() {
		return usageErrorf("unknown command %q for %q%s", args[0], cmd.CommandPath(), suggestion(cmd, args[0]))
	}
	return usageErrorf("%q takes no arguments, got %s", cmd.CommandPath(), quoteList(args))
}
