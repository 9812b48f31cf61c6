package session

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/qim-dev/qim/services/internal/obs"
)

// metrics are the SessionProjection's instruments. No label carries a user, conversation or
// message id; op and code come from finite tables.
type metrics struct {
	applied      prometheus.Counter
	applyLatency prometheus.Histogram
	batch        prometheus.Histogram
	rejected     prometheus.Counter // invariant
	fenced       prometheus.Counter // invariant
	rebuilt      prometheus.Counter
	refreshed    prometheus.Counter
	evicted      prometheus.Counter
	requests     *prometheus.CounterVec // op, code
	latency      *prometheus.HistogramVec
}

func newMetrics(reg *obs.Registry) *metrics {
	return &metrics{
		applied: reg.Counter("qim_session_records_applied_total",
			"Dispatch records projected into session lists (checkpoint advanced)."),
		applyLatency: reg.Histogram("qim_session_apply_latency_us",
			"Latency of one projection pipeline (µs).", obs.LatencyBucketsMicros),
		batch: reg.Histogram("qim_session_apply_batch_records",
			"Dispatch records per projection pipeline.", prometheus.ExponentialBuckets(1, 2, 12)),
		rejected: reg.Invariant("qim_session_dispatch_rejected_total",
			"dispatch record that does not decode, verify or belong to its partition; the projection stopped."),
		fenced: reg.Invariant("qim_session_checkpoint_fenced_total",
			"checkpoint moved under this process or bound to another topic (a second owner); the projection stopped."),
		rebuilt: reg.Counter("qim_session_snapshot_rebuilt_total",
			"Session-list snapshots read whole from Redis (first request of a user, or after eviction)."),
		refreshed: reg.Counter("qim_session_snapshot_refreshed_total",
			"Session-list snapshots updated from their dirty markers (only the changed conversations re-read)."),
		evicted: reg.Counter("qim_session_snapshot_evicted_total",
			"Session-list snapshots evicted by the user bound (least recently used)."),
		requests: reg.CounterVec("qim_session_requests_total",
			"PULL_SESSION_LIST and MARK_READ requests, by op and contract error code (UNSPECIFIED = ok).", "op", "code"),
		latency: reg.HistogramVec("qim_session_request_latency_us",
			"Latency of PULL_SESSION_LIST and MARK_READ (µs), by op.", obs.LatencyBucketsMicros, "op"),
	}
}
