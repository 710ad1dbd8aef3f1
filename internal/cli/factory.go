// Package cli is the eksa-metrics command line: cobra commands, output
// writers and the error presenter. Only this package imports cobra.
package cli

import (
	"io"
	"log/slog"
	"net/http"
	"os"
	"time"
)

// IOStreams are the standard streams of a command.
type IOStreams struct {
	In     io.Reader
	Out    io.Writer // data only
	ErrOut io.Writer // logs, progress, plans, warnings
}

// Factory carries what commands share.
type Factory struct {
	IOStreams IOStreams
	// Verbosity is -v: 0 shows warnings and errors, higher values more.
	Verbosity int
}

// Logger writes leveled logs to stderr.
func (f *Factory) Logger() *slog.Logger {
	level := slog.LevelWarn
	switch {
	case f.Verbosity >= 6:
		level = slog.LevelDebug // every API request
	case f.Verbosity >= 1:
		level = slog.LevelInfo // decisions
	}
	return slog.New(slog.NewTextHandler(f.IOStreams.ErrOut, &slog.HandlerOptions{
		Level: level,
		ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey && len(groups) == 0 {
				return slog.Attr{} // deterministic output
			}
			return a
		},
	}))
}

// openInput opens -f: a path, or "-" for standard input.
func (f *Factory) openInput(name string) (io.ReadCloser, string, error) {
	if name == "-" {
		return io.NopCloser(f.IOStreams.In), "<stdin>", nil
	}
	rc, err := os.Open(name)
	return rc, name, err
}

// requestLogger logs every API request (method, URL, status, duration) at
// debug level: -v 6, as kubectl does.
func (f *Factory) requestLogger() func(http.RoundTripper) http.RoundTripper {
	log := f.Logger()
	return func(rt http.RoundTripper) http.RoundTripper {
		return roundTripper(func(req *http.Request) (*http.Response, error) {
			start := time.Now()
			resp, err := rt.RoundTrip(req)
			status := 0
			if resp != nil {
				status = resp.StatusCode
			}
			log.Debug("request", "method", req.Method, "url", req.URL.String(), "status", status, "duration", time.Since(start).Round(time.Millisecond), "error", err)
			return resp, err
		})
	}
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// chainWrap applies a, then b.
func chainWrap(a, b func(http.RoundTripper) http.RoundTripper) func(http.RoundTripper) http.RoundTripper {
	if a == nil {
		return b
	}
	return func(rt http.RoundTripper) http.RoundTripper { return b(a(rt)) }
}
