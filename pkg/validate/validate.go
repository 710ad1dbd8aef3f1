// Package validate runs named pre-upgrade checks over a cluster spec: offline
// (the spec, versions, flags, RBAC), against an older spec (the upgrade
// diff), and online against live clusters (drift, ownership, identities).
package validate

import (
	"context"
	"errors"
	"fmt"

	"github.com/eksa-metrics/eksa-metrics/pkg/cluster"
	"github.com/eksa-metrics/eksa-metrics/pkg/render"
	"github.com/eksa-metrics/eksa-metrics/pkg/spec"
)

// Status of one check.
type Status string

const (
	Pass    Status = "pass"
	Warn    Status = "warn"
	Fail    Status = "fail"
	Skipped Status = "skipped"
	// Error means the check could not run (a cluster did not answer).
	Error Status = "error"
)

// Result is one check's outcome.
type Result struct {
	Name        string   `json:"name"`
	Status      Status   `json:"status"`
	Message     string   `json:"message"`
	Remediation string   `json:"remediation,omitempty"`
	Details     []string `json:"details,omitempty"`
	// Changes are the upgrade diff's entries (upgrade-diff with --from):
	// what apply will create, change, edit or delete, and what rolls or
	// restarts.
	Changes []render.Change `json:"changes,omitempty"`
}

// Input is what the checks look at.
type Input struct {
	Path      string
	File      *spec.File // nil when loading failed
	LoadErr   error
	Result    *render.Result // nil when loading or validation failed
	RenderErr error
	// Old is the --from spec's render, for the upgrade checks.
	Old     *render.Result
	OldPath string
	OldErr  error
	// OldNothing says why the --from spec renders nothing (it has no
	// metrics section: the spec before eksa-metrics is adopted).
	OldNothing string
	// Nothing says why the -f spec renders nothing (it has no metrics
	// section, and --from has one: the section is removed, which
	// apply --uninstall performs). Only spec-loads and the upgrade checks
	// run then.
	Nothing string
	// Clusters, for the online checks (nil offline).
	Management *cluster.Cluster
	Workload   *cluster.Cluster
	// OnlineErr is why the clusters could not be reached: the online checks
	// are then reported as not run, and the offline ones still run.
	OnlineErr error
}

// Check is one named check.
type Check struct {
	Name string
	// Kind says when it runs: "offline", "upgrade" (needs --from) or
	// "online" (needs --kubeconfig).
	Kind string
	Run  func(ctx context.Context, in *Input) Result
}

// Run runs every check, skipping those named in skip and those whose inputs
// are missing, and returns one result per check in table order.
func Run(ctx context.Context, in *Input, skip map[string]bool) []Result {
	var out []Result
	for _, c := range Checks() {
		var r Result
		switch {
		case skip[c.Name]:
			r = Result{Status: Skipped, Message: "skipped with --skip"}
		case c.Kind == "upgrade" && in.Old == nil && in.OldErr == nil:
			r = Result{Status: Skipped, Message: "no --from spec to compare with"}
		case c.Kind == "online" && errors.As(in.OnlineErr, new(*cluster.KubeconfigRefusedError)):
			// Invalid input, not an unreachable cluster: a failure (exit 3).
			r = Result{Status: Fail, Message: "could not run: the workload kubeconfig Secret asks for a credential plugin or a local file", Details: []string{in.OnlineErr.Error()},
				Remediation: "write inline credentials into the Secret, as Cluster API does; or, if you trust everyone who can write Secrets in eksa-system, pass " + cluster.InsecureKubeconfigSecretsFlag}
		case c.Kind == "online" && errors.As(in.OnlineErr, new(*cluster.KubeconfigInvalidError)):
			// A missing or malformed kubeconfig is invalid input (exit 3),
			// not a cluster that does not answer.
			r = Result{Status: Fail, Message: "could not run: the kubeconfig cannot be used", Details: []string{in.OnlineErr.Error()},
				Remediation: "check the file --kubeconfig (or $KUBECONFIG) names, and --context"}
		case c.Kind == "online" && in.OnlineErr != nil:
			r = Result{Status: Error, Message: "could not run: the clusters are unreachable", Details: []string{in.OnlineErr.Error()},
				Remediation: "check --kubeconfig and --context, and that the API server is reachable from here"}
		case c.Kind == "online" && in.Management == nil:
			r = Result{Status: Skipped, Message: "offline: pass --kubeconfig to check the live clusters"}
		case in.Nothing != "" && c.Name == "spec-loads":
			r = pass("%s", in.Nothing)
		case in.Nothing != "" && c.Kind != "upgrade":
			r = Result{Status: Skipped, Message: "nothing to check: " + in.Nothing}
		case c.Name != "spec-loads" && in.Result == nil && (c.Kind != "upgrade" || in.OldErr == nil):
			// An upgrade check still reports a --from that does not load.
			r = Result{Status: Skipped, Message: "the spec does not load (see spec-loads)"}
		default:
			r = c.Run(ctx, in)
		}
		r.Name = c.Name
		out = append(out, r)
	}
	return out
}

// Counts are the results by status. Every count is always present in JSON.
type Counts struct {
	Pass    int `json:"pass"`
	Warn    int `json:"warn"`
	Fail    int `json:"fail"`
	Skipped int `json:"skipped"`
	Error   int `json:"error"`
}

// Summary counts results by status.
func Summary(results []Result) Counts {
	var c Counts
	for _, r := range results {
		switch r.Status {
		case Pass:
			c.Pass++
		case Warn:
			c.Warn++
		case Fail:
			c.Fail++
		case Skipped:
			c.Skipped++
		case Error:
			c.Error++
		}
	}
	return c
}

func (c Counts) String() string {
	return fmt.Sprintf("%d passed, %d warnings, %d failed, %d skipped, %d could not run", c.Pass, c.Warn, c.Fail, c.Skipped, c.Error)
}

// Strict turns warnings into failures (--strict), saying so in the message,
// so that every report format counts them as failures.
func Strict(results []Result) []Result {
	out := make([]Result, len(results))
	for i, r := range results {
		if r.Status == Warn {
			r.Status = Fail
			r.Message = "(a warning, failed by --strict) " + r.Message
		}
		out[i] = r
	}
	return out
}

func pass(msg string, args ...any) Result {
	return Result{Status: Pass, Message: fmt.Sprintf(msg, args...)}
}

func problems(err error) []string {
	var inv *spec.InvalidError
	if errors.As(err, &inv) {
		out := make([]string, len(inv.Problems))
		for i, p := range inv.Problems {
			out[i] = p.String()
		}
		return out
	}
	return []string{err.Error()}
}
