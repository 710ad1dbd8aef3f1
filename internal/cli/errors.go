package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/eksa-metrics/eksa-metrics/pkg/cluster"
	"github.com/eksa-metrics/eksa-metrics/pkg/spec"
)

// Exit codes.
const (
	ExitOK      = 0
	ExitRuntime = 1 // a cluster was unreachable, an apply failed, a file could not be written
	ExitUsage   = 2 // bad flags or arguments
	ExitInvalid = 3 // invalid input (a missing or malformed kubeconfig, a refused workload kubeconfig Secret too), or failed validation
)

// usageError is a bad flag or argument.
type usageError struct{ err error }

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

func usageErrorf(format string, args ...any) error {
	return &usageError{fmt.Errorf(format, args...)}
}

// ExitCode maps an error to the process exit code.
func ExitCode(err error) int {
	var usage *usageError
	var invalid *spec.InvalidError
	var failed *verifyFailedError
	var vfailed *validateFailedError
	var fleet *fleetError
	var refused *cluster.KubeconfigRefusedError
	var badKubeconfig *cluster.KubeconfigInvalidError
	switch {
	case errors.As(err, &fleet):
		if fleet.invalid {
			return ExitInvalid
		}
		return ExitRuntime
	case err == nil:
		return ExitOK
	case errors.As(err, &usage):
		return ExitUsage
	case errors.As(err, &invalid), errors.As(err, &failed), errors.As(err, &vfailed), errors.As(err, &refused), errors.As(err, &badKubeconfig):
		return ExitInvalid
	}
	return ExitRuntime
}

// present prints an error once, with the next step to take.
func present(w io.Writer, err error, cmdPath string) {
	var invalid *spec.InvalidError
	var usage *usageError
	switch {
	case errors.As(err, &invalid):
		n := len(invalid.Problems)
		fmt.Fprintf(w, "Error: %d problem%s in the input:\n", n, plural(n))
		for _, p := range invalid.Problems {
			fmt.Fprintf(w, "  %s\n", p)
		}
		fmt.Fprintf(w, "Fix the file and run the command again; docs/reference.md describes every field.\n")
	case errors.As(err, &usage):
		fmt.Fprintf(w, "Error: %s\nRun '%s --help' for usage.\n", err, cmdPath)
	default:
		fmt.Fprintf(w, "Error: %s\n", err)
	}
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// isNotExist tells a missing input file apart, for a clearer message.
func isNotExist(err error) bool { return errors.Is(err, os.ErrNotExist) }

func quoteList(items []string) string {
	q := make([]string, len(items))
	for i, s := range items {
		q[i] = fmt.Sprintf("%q", s)
	}
	return strings.Join(q, ", ")
}
