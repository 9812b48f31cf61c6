package moderation

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics count one service's hook calls: qim_<service>_moderation_calls_total by outcome
// (allow, reject, rewrite, unavailable), qim_<service>_moderation_seconds and
// qim_<service>_moderation_fail_open_total.
type Metrics struct {
	calls    *prometheus.CounterVec
	seconds  prometheus.Histogram
	FailOpen prometheus.Counter // sends let through unchecked while the hook did not answer
}

// NewMetrics registers the hook metrics of service on reg.
func NewMetrics(reg prometheus.Registerer, service string, buckets []float64) *Metrics {
	p := "qim_" + service + "_moderation_"
	m := &Metrics{
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{Name: p + "calls_total",
			Help: "Calls of the pre-send moderation hook, by outcome (allow, reject, rewrite, unavailable)."}, []string{"outcome"}),
		seconds: prometheus.NewHistogram(prometheus.HistogramOpts{Name: p + "seconds",
			Help: "Duration of one pre-send moderation hook call, the wait for a free call slot included.", Buckets: buckets}),
		FailOpen: prometheus.NewCounter(prometheus.CounterOpts{Name: p + "fail_open_total",
			Help: "Sends let through unchecked because the moderation hook did not answer (QIM_MODERATION_FAIL_OPEN)."}),
	}
	reg.MustRegister(m.calls, m.seconds, m.FailOpen)
	return m
}

// Observe is Options.Observe.
func (m *Metrics) Observe(outcome string, took time.Duration) {
	m.calls.WithLabelValues(outcome).Inc()
	m.seconds.Observe(took.Seconds())
}
