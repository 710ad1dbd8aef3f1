// Package cli is the eksa-metrics command line: cobra commands, output
// writers and the error presenter. Only this package imports cobra.
package cli

import (
	"io"
	"log/slog"
	"os"
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
	// Getwd and ReadFile are indirections for tests.
	Open func(name string) (io.ReadCloser, error)
}

// Logger writes leveled logs to stderr.
func (f *Factory) Logger() *slog.Logger {
	level := slog.LevelWarn
	switch {
	case f.Verbosity >= 4:
		level = slog.LevelDebug
	case f.Verbosity >= 1:
		level = slog.LevelInfo
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
	open := f.Open
	if open == nil {
		open = func(n string) (io.ReadCloser, error) { return os.Open(n) }
	}
	rc, err := open(name)
	return rc, name, err
}
