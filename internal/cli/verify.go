package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/eksa-metrics/eksa-metrics/pkg/engine"
	"github.com/eksa-metrics/eksa-metrics/pkg/verify"
)

// VerifyOptions are the flags of verify.
type VerifyOptions struct {
	f *Factory

	Filename string
	ClusterFlags
	Output      string
	Concurrency int
	Timeout     time.Duration
	RenderFlags
}

// verifyFailedError is a verification with failing rows (exit 3).
type verifyFailedError struct{ failed, total int }

func (e *verifyFailedError) Error() string {
	return fmt.Sprintf("%d of %d targets failed verification (see the rows marked FAIL above)", e.failed, e.total)
}

// NewCmdVerify builds `eksa-metrics verify`.
func NewCmdVerify(f *Factory, runF func(*VerifyOptions) error) *cobra.Command {
	o := &VerifyOptions{f: f}
	cmd := &cobra.Command{
		Use:   "verify -f cluster.yaml --kubeconfig mgmt.kubeconfig",
		Short: "Prove, live, that every metrics endpoint serves the scraper and refuses everyone else",
		Long: `Find every target the metrics section enables (node addresses from the Node
objects, the API server), then for each: connect, classify its certificate,
scrape as the scraper (a short-lived TokenRequest token, never stored), and
check that an identity with no RBAC binding and a request without credentials
are refused. Where z-pages are on, read /statusz for version and uptime.
One row per target on stdout; exit 0 only when every target passes.
Temporary ServiceAccounts verify creates are deleted, also on Ctrl-C; those a
killed run left are deleted by the next run after 15 minutes.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.Validate(); err != nil {
				return err
			}
			if runF != nil {
				return runF(o)
			}
			return o.Run(cmd.Context())
		},
	}
	fl := cmd.Flags()
	fl.VarP(singleValue{&o.Filename}, "filename", "f", "cluster spec file with a metrics section (- for stdin); one cluster")
	o.ClusterFlags.bind(fl)
	fl.StringVarP(&o.Output, "output", "o", "table", "table or json")
	fl.IntVar(&o.Concurrency, "concurrency", 16, "targets checked at once")
	fl.DurationVar(&o.Timeout, "timeout", 10*time.Second, "time allowed for each target")
	o.RenderFlags.bind(fl)
	return cmd
}

// Validate checks flag combinations only.
func (o *VerifyOptions) Validate() error {
	switch {
	case o.Filename == "":
		return usageErrorf("-f/--filename is required")
	case o.Output != "table" && o.Output != "json":
		return usageErrorf("-o %q is not one of table, json", o.Output)
	case o.Concurrency < 1:
		return usageErrorf("--concurrency must be at least 1")
	case o.Timeout <= 0:
		return usageErrorf("--timeout must be positive")
	}
	return nil
}

// Run finds the targets, makes the identities, checks, prints and cleans up.
func (o *VerifyOptions) Run(ctx context.Context) error {
	if ctx == nil {
		ctx = context.Background()
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	opts, err := o.RenderFlags.options()
	if err != nil {
		return err
	}
	r, err := loadAndRender(o.f, o.Filename, opts)
	if err != nil {
		return err
	}
	cl, err := engine.Connect(ctx, o.source(o.f), r.Config.ClusterName, r.Config.Management)
	if err != nil {
		return err
	}
	results, err := engine.Verify(ctx, cl, r, engine.VerifyOptions{Concurrency: o.Concurrency, Timeout: o.Timeout,
		Cleanup: func(err error) {
			fmt.Fprintf(o.f.IOStreams.ErrOut, "Warning: cleaning up verify's temporary objects: %v\n", err)
		},
		Leftover: func(object string) {
			fmt.Fprintf(o.f.IOStreams.ErrOut, "Deleted %s, left by a verify run that did not finish.\n", object)
		},
		NotInstalled: func(id string) {
			fmt.Fprintf(o.f.IOStreams.ErrOut, "Deployment %s is not installed: nothing to verify there.\n", id)
		}})
	if err != nil {
		return err
	}
	if err := o.print(results); err != nil {
		return err
	}
	failed := 0
	for _, res := range results {
		if !res.Pass() {
			failed++
		}
	}
	if failed > 0 {
		return &verifyFailedError{failed, len(results)}
	}
	fmt.Fprintf(o.f.IOStreams.ErrOut, "All %d targets passed.\n", len(results))
	return nil
}

func (o *VerifyOptions) print(results []verify.Result) error {
	out := o.f.IOStreams.Out
	if o.Output == "json" {
		b, err := json.MarshalIndent(map[string]any{"results": results}, "", "  ")
		if err != nil {
			return err
		}
		_, err = out.Write(append(b, '\n'))
		return err
	}
	red, reset := "", ""
	if f, ok := out.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		red, reset = "\033[31m", "\033[0m"
	}
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "TARGET\tENDPOINT\tTLS\tSCRAPER\tSAMPLES\tUNBOUND\tANONYMOUS\tVERSION\tUPTIME\tRESULT")
	dash := func(s string) string {
		if s == "" {
			return "-"
		}
		return s
	}
	status := func(c int) string {
		if c == 0 {
			return "-"
		}
		return fmt.Sprint(c)
	}
	for _, r := range results {
		result := "PASS"
		if !r.Pass() {
			result = red + "FAIL: " + strings.Join(r.Problems, "; ") + reset
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\n", r.Target, r.Target.Endpoint, r.TLS, status(r.Scraper), r.Samples,
			status(r.Unbound), status(r.Anonymous), dash(r.Version), dash(r.Uptime), result)
	}
	return tw.Flush()
}
