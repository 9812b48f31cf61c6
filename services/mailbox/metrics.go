package mailbox

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/services/internal/obs"
)

// metrics are the MailboxNode's instruments. No label carries a user, device or message id; the
// shard label has at most QIM_MAILBOX_SHARD_COUNT values.
type metrics struct {
	paused       prometheus.Counter
	resumed      prometheus.Counter
	conflicts    prometheus.Counter // invariant
	rejected     prometheus.Counter // invariant
	fenced       prometheus.Counter // invariant
	materialized *prometheus.CounterVec
	batchSize    prometheus.Histogram
	materialize  prometheus.Histogram
	watermark    *prometheus.GaugeVec
	pushDropped  *prometheus.CounterVec
	pushed       prometheus.Counter
	// presenceApplied counts qim.presence entries that changed the directory.
	presenceApplied prometheus.Counter
	pulls           *prometheus.CounterVec
	pullLatency     prometheus.Histogram
	// pullBatchSize is pulls per PullMailboxBatch call (one store round trip each).
	pullBatchSize prometheus.Histogram
	// unowned counts pulls and offline checks refused because the user's shard is not owned here.
	unowned prometheus.Counter
}

func newMetrics(reg *obs.Registry) *metrics {
	return &metrics{
		paused: reg.Counter("qim_mailbox_dispatch_partition_paused_total",
			"Times a dispatch partition was paused because its shard FIFO was full (the saturation signal)."),
		resumed: reg.Counter("qim_mailbox_dispatch_partition_resumed_total",
			"Times a paused dispatch partition was resumed after its shard FIFO drained."),
		conflicts: reg.Invariant(contract.InvariantMailboxDispatchConflicts),
		rejected:  reg.Invariant(contract.InvariantMailboxDispatchRejected),
		fenced:    reg.Invariant(contract.InvariantMailboxWatermarkFenced),
		materialized: reg.CounterVec("qim_mailbox_dispatches_materialized_total",
			"Dispatch records applied, by result: fresh (entries written) or duplicate (first mailbox_seq reused).", "result"),
		batchSize: reg.Histogram("qim_mailbox_materialize_batch_records",
			"Dispatch records per Redis pipeline of one shard worker.", prometheus.ExponentialBuckets(1, 2, 8)),
		materialize: reg.Histogram("qim_mailbox_materialize_latency_us",
			"Latency of one materialization pipeline (µs).", obs.LatencyBucketsMicros),
		watermark: reg.GaugeVec("qim_mailbox_watermark_offset",
			"Materialized watermark (log offset) of each owned shard.", "shard"),
		pushDropped: reg.CounterVec("qim_mailbox_push_dropped_total",
			"Push targets not delivered, by reason: offline (no gateway holds the user, per qim.presence), queue_full (never blocks materialization), rpc_error, gateway (offline or full there), invalid, no_client.", "reason"),
		pushed: reg.Counter("qim_mailbox_push_delivered_total",
			"Push targets the gateway queued to a live connection."),
		presenceApplied: reg.Counter("qim_mailbox_presence_entries_applied_total",
			"qim.presence entries that changed where this node pushes (ADR-0027)."),
		pulls: reg.CounterVec("qim_mailbox_pulls_total",
			"PULL_MAILBOX requests by result: ok, expired (CURSOR_EXPIRED), invalid, unowned (the user's shard is another node's), error.", "result"),
		pullLatency: reg.Histogram("qim_mailbox_pull_latency_us",
			"Latency of PULL_MAILBOX (µs); a batched pull observes its batch's latency.", obs.LatencyBucketsMicros),
		pullBatchSize: reg.Histogram("qim_mailbox_pull_batch_pulls",
			"Pulls per PullMailboxBatch call, each batch one Redis round trip.", prometheus.ExponentialBuckets(1, 2, 12)),
		unowned: reg.Counter("qim_mailbox_unowned_requests_total",
			"PULL_MAILBOX and offline checks refused UNAVAILABLE because the user's shard is not owned here (misrouted, e.g. while shards move)."),
	}
}

// InvariantCounters names the always-zero counters the mailbox registers, read from a scratch
// registry given to newMetrics as New gives it the service's own, so package services can hold
// them against contract.InvariantCounters() without starting the service.
func InvariantCounters() []string {
	reg := obs.NewRegistry("mailbox")
	newMetrics(reg)
	return reg.InvariantNames()
}
