package fanout

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/services/internal/obs"
)

// Buckets in seconds: 250 µs to ~16 s covers a local ack and a broker that is failing over.
var secondsBuckets = prometheus.ExponentialBuckets(0.00025, 2, 17)

// Dispatches per batch: 1 up to 1024 records × 64 shards.
var batchBuckets = prometheus.ExponentialBuckets(1, 2, 17)

// metrics are the FanoutCoordinator's instruments. No label carries a user, conversation or
// message id; stage is "produce" or "commit".
type metrics struct {
	cycle       prometheus.Histogram
	ackWait     prometheus.Histogram
	commit      prometheus.Histogram
	perBatch    prometheus.Histogram
	batches     prometheus.Counter
	records     prometheus.Counter
	dispatches  prometheus.Counter
	failures    *prometheus.CounterVec
	position    prometheus.Gauge
	unplannable prometheus.Counter
}

func newMetrics(r *obs.Registry) *metrics {
	return &metrics{
		cycle: r.Histogram("qim_fanout_batch_cycle_seconds",
			"From a batch's poll returning to every dispatch of it acknowledged, retries included (the position commit follows within QIM_FANOUT_COMMIT_INTERVAL).", secondsBuckets),
		ackWait: r.Histogram("qim_fanout_dispatch_ack_wait_seconds",
			"One ProduceBatch attempt: enqueueing every dispatch of a batch until the last acks=all acknowledgement (or the first failure).",
			secondsBuckets),
		commit: r.Histogram("qim_fanout_offset_commit_seconds",
			"One synchronous commit of the Outbox position.", secondsBuckets),
		perBatch: r.Histogram("qim_fanout_dispatches_per_batch",
			"GroupDispatch records planned per acknowledged batch.", batchBuckets),
		batches: r.Counter("qim_fanout_batches_total", "Batches whose dispatches were all acknowledged."),
		records: r.Counter("qim_fanout_records_total", "Outbox records whose dispatches were all acknowledged."),
		dispatches: r.Counter("qim_fanout_dispatches_total",
			"GroupDispatch records of acknowledged batches (each counted once, however often its batch was retried)."),
		failures: r.CounterVec("qim_fanout_batch_failures_total",
			"Failed attempts by stage (produce: the batch is retried; commit: only the commit is retried); the position does not move.", "stage"),
		position:    r.Gauge("qim_fanout_committed_offset", "The committed Outbox position: offset of the next record to dispatch."),
		unplannable: r.Invariant(contract.InvariantFanoutUnplannableRecords),
	}
}

// InvariantCounters names the always-zero counters the fanout registers, read from a scratch
// registry given to newMetrics as New gives it the service's own, so package services can hold
// them against contract.InvariantCounters() without starting the service.
func InvariantCounters() []string {
	reg := obs.NewRegistry("fanout")
	newMetrics(reg)
	return reg.InvariantNames()
}
