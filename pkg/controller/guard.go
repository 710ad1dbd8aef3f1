package controller

import (
	"context"
	"fmt"
	"io"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/eksa-metrics/eksa-metrics/pkg/safetext"
)

// admissionPolicyHeld is 1 while the controller's admission policy holds it
// as shipped, 0 while it does not (and nothing is written).
var admissionPolicyHeld = prometheus.NewGauge(prometheus.GaugeOpts{
	Name: "eksa_metrics_controller_admission_policy_held",
	Help: "1 while the controller's ValidatingAdmissionPolicy and binding are the ones shipped and hold it, else 0 (the controller then writes nothing).",
})

func init() { metrics.Registry.MustRegister(admissionPolicyHeld) }

// PolicyGuard holds the controller's writes while its admission policy
// does not hold it (Check: config.CheckAdmissionPolicy). A policy deleted,
// unbound or changed after start stops every write within one period.
type PolicyGuard struct {
	Check func(context.Context) error
	Log   io.Writer
	err   atomic.Pointer[error]
}

// Err is why nothing may be written now (nil: the policy holds).
func (g *PolicyGuard) Err() error {
	if g == nil {
		return nil
	}
	if p := g.err.Load(); p != nil {
		return *p
	}
	return nil
}

// Once checks now and records the answer; a check that cannot be made
// holds the writes too.
func (g *PolicyGuard) Once(ctx context.Context) error {
	err := g.Check(ctx)
	prev := g.Err()
	g.err.Store(&err)
	if err != nil {
		admissionPolicyHeld.Set(0)
		if prev == nil || prev.Error() != err.Error() {
			fmt.Fprintf(g.Log, "error: %s\n", safetext.Escape(err.Error()))
		}
	} else {
		admissionPolicyHeld.Set(1)
		if prev != nil {
			fmt.Fprintln(g.Log, "the admission policy holds the controller again: writes resume")
		}
	}
	return err
}

// Run checks every period until ctx ends.
func (g *PolicyGuard) Run(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			_ = g.Once(ctx)
		}
	}
}
