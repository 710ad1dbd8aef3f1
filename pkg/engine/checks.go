package engine

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/eksa-metrics/eksa-metrics/pkg/render"
	"github.com/eksa-metrics/eksa-metrics/pkg/validate"
)

// AfterApplyChecks are the checks of validate --kubeconfig that the
// controller runs after each apply: what apply itself cannot see (the scraper
// identities, the Prometheus that should select the ServiceMonitors, the
// management controllers' accounts and labels), at a few reads each. The
// others that read the live clusters hold by construction after a
// successful apply (drift; serving-certificates: apply has just made or
// renewed them; prometheus-operator-crds: the ServiceMonitors were
// accepted), so running them would only read everything again. Reaching
// the endpoints themselves is verify's job, from where the scraper runs.
var AfterApplyChecks = []string{"scraper-identities", "prometheus-selects-monitors", "management-components"}

// CheckApplied runs AfterApplyChecks on what a pass applied; it says
// whether none failed, and what they found.
func CheckApplied(ctx context.Context, cl *Clusters, res *render.Result) (bool, string) {
	skip := map[string]bool{}
	for _, c := range validate.Checks() {
		skip[c.Name] = !slices.Contains(AfterApplyChecks, c.Name)
	}
	var failed, warned, passed []string
	for _, r := range validate.Run(ctx, &validate.Input{Path: res.Config.ClusterName, Result: res, Management: cl.Management, Workload: cl.Workload}, skip) {
		line := r.Name + ": " + r.Message
		if len(r.Details) > 0 {
			line += " (" + strings.Join(r.Details, "; ") + ")"
		}
		switch r.Status {
		case validate.Fail, validate.Error:
			failed = append(failed, line)
		case validate.Warn:
			warned = append(warned, line)
		case validate.Pass:
			passed = append(passed, r.Name)
		}
	}
	if len(failed) > 0 {
		return false, strings.Join(append(failed, warned...), "; ")
	}
	msg := fmt.Sprintf("%d checks pass (%s)", len(passed), strings.Join(passed, ", "))
	if len(warned) > 0 {
		msg += "; " + strings.Join(warned, "; ")
	}
	return true, msg
}
