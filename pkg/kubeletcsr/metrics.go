package kubeletcsr

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the approver's own series (docs/components.md, "The kubelet
// serving-certificate approver"; the alerts of docs/alerts.md read them).
// Their labels take a few fixed values only: a request's names never
// become a label.
type Metrics struct {
	decisions *prometheus.CounterVec
	waiting   prometheus.Gauge
	held      prometheus.Gauge
	errors    prometheus.Counter
}

// Values of the decision label, and of the cause label of a denial.
const (
	DecisionApproved = "approved"
	DecisionDenied   = "denied"
	DecisionSigned   = "signed"
	// CauseUnvouched: the node's Machine did not list what the request asks
	// for within the grace. CauseRefused: a name or shape that is never
	// approved, or another Machine's address. CauseSize: larger than any
	// kubelet's request, not read.
	CauseUnvouched = "unvouched"
	CauseRefused   = "refused"
	CauseSize      = "size"
)

// NewMetrics registers the approver's series with reg.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		decisions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "eksa_metrics_kubelet_serving_decisions_total",
			Help: "Decisions of the kubelet serving-certificate approver: requests approved, denied (cause: unvouched, refused, size) and certificates signed.",
		}, []string{"decision", "cause"}),
		waiting: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "eksa_metrics_kubelet_serving_waiting_requests",
			Help: "Kubelet-serving requests left pending by the last pass: their Node is not registered, their Machine does not list what they ask for yet, or approvals are held.",
		}),
		held: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "eksa_metrics_kubelet_serving_approvals_held",
			Help: "1 while approvals wait because a control-plane kube-controller-manager would sign with the cluster CA (or none can be seen), else 0.",
		}),
		errors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "eksa_metrics_kubelet_serving_pass_errors_total",
			Help: "Passes of the approver that ended in an error (an API call refused or failed, a published Machine list that does not parse).",
		}),
	}
	for _, c := range []prometheus.Collector{m.decisions, m.waiting, m.held, m.errors} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	// Every series exists from the start, so that a rate over it is 0,
	// not absent, before the first decision.
	m.decisions.WithLabelValues(DecisionApproved, "")
	m.decisions.WithLabelValues(DecisionSigned, "")
	for _, c := range []string{CauseUnvouched, CauseRefused, CauseSize} {
		m.decisions.WithLabelValues(DecisionDenied, c)
	}
	return m, nil
}

// denyCause is the cause label of a denial for why.
func denyCause(why error) string {
	var nv *NotVouched
	var big *TooLarge
	switch {
	case errors.As(why, &big):
		return CauseSize
	case errors.As(why, &nv):
		return CauseUnvouched
	}
	return CauseRefused
}

func (m *Metrics) decided(decision, cause string) {
	if m != nil {
		m.decisions.WithLabelValues(decision, cause).Inc()
	}
}

// passed records what a pass left: the requests waiting, and whether
// approvals are held.
func (m *Metrics) passed(waiting int, held bool) {
	if m == nil {
		return
	}
	m.waiting.Set(float64(waiting))
	if held {
		m.held.Set(1)
	} else {
		m.held.Set(0)
	}
}

func (m *Metrics) failed() {
	if m != nil {
		m.errors.Inc()
	}
}
