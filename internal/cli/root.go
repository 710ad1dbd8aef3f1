package cli

import (
	"context"
	"fmt"
	"os"

	"github.com/spf13/cobra"
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
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error { return &usageError{err} })
	root.AddCommand(NewCmdGenerate(f, nil), NewCmdApply(f, nil), NewCmdVerify(f, nil), NewCmdValidate(f, nil), NewCmdVersion(f), NewCmdController(f))
	return root
}

// noArgs refuses positional arguments as a usage error.
func noArgs(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return nil
	}
	if cmd.HasSubCommands() {
		return usageErrorf("unknown command %q for %q", args[0], cmd.CommandPath())
	}
	return usageErrorf("%q takes no arguments, got %s", cmd.CommandPath(), quoteList(args))
}

// Version is set at link time (-ldflags -X .../internal/cli.Version=v0.1.0).
var Version = "dev"

// NewCmdVersion prints the version.
func NewCmdVersion(f *Factory) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the eksa-metrics version",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			_, err := fmt.Fprintf(f.IOStreams.Out, "eksa-metrics %s\n", Version)
			return err
		},
	}
}
