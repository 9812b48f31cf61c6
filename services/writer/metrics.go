package writer

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/qim-dev/qim/services/internal/obs"
)

// metrics are the writer's instruments. No label carries a user, conversation or message id.
type metrics struct {
	permitWait  prometheus.Histogram
	inflight    prometheus.Gauge
	sendLatency prometheus.Histogram
	stage       *prometheus.HistogramVec
	batchSize   *prometheus.HistogramVec
	queueDepth  *prometheus.GaugeVec
	commits     *prometheus.CounterVec
	failures    *prometheus.CounterVec
	recovered   prometheus.Counter
}

var latencyBuckets = prometheus.ExponentialBucketsRange(0.0002, 5, 20)

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		permitWait: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "qim_writer_request_permit_wait_seconds",
			Help: "Time a gateway stream waited for an in-flight permit before the writer read its next send.", Buckets: latencyBuckets}),
		inflight: prometheus.NewGauge(prometheus.GaugeOpts{Name: "qim_writer_requests_inflight",
			Help: "Sends read from gateway streams and not yet answered."}),
		sendLatency: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "qim_writer_send_ack_latency_seconds",
			Help: "From reading a send to its COMMITTED answer.", Buckets: latencyBuckets}),
		stage: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "qim_writer_commit_stage_seconds",
			Help: "Latency of each commit stage (reserve pipeline, outbox produce, mark pipeline).", Buckets: latencyBuckets}, []string{"stage"}),
		batchSize: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "qim_writer_batch_size",
			Help: "Sends per Redis pipeline.", Buckets: prometheus.ExponentialBuckets(1, 2, 12)}, []string{"stage"}),
		queueDepth: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "qim_writer_queue_depth",
			Help: "Depth of the bounded queue in front of each pipeline stage."}, []string{"stage"}),
		commits: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "qim_writer_commits_total",
			Help: "Sends answered with an ACK, by kind: fresh commit, resumed intent, replayed COMMITTED."}, []string{"kind"}),
		failures: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "qim_writer_send_failures_total",
			Help: "Sends answered with an error, by stage and contract error code."}, []string{"stage", "code"}),
		recovered: prometheus.NewCounter(prometheus.CounterOpts{Name: "qim_writer_recovered_commits_total",
			Help: "Unfinished commits completed by the recovery loop."}),
	}
	reg.MustRegister(m.permitWait, m.inflight, m.sendLatency, m.stage, m.batchSize, m.queueDepth, m.commits,
		m.failures, m.recovered)
	return m
}

// InvariantCounters names the always-zero counters the writer registers, read from a scratch
// registry given to newMetrics as New gives it the service's own, so package services can hold
// them against contract.InvariantCounters() without starting the service.
func InvariantCounters() []string {
	reg := obs.NewRegistry("writer")
	newMetrics(reg)
	return reg.InvariantNames()
}
