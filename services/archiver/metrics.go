package archiver

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/services/internal/obs"
)

// Buckets in seconds: 250 µs to ~16 s covers a local quorum write and a node that is failing.
var secondsBuckets = prometheus.ExponentialBuckets(0.00025, 2, 17)

// Records per batch: 1 up to ArchiverBatchMax.
var batchBuckets = prometheus.ExponentialBuckets(1, 2, 13)

// metrics are the HistoryArchiver's instruments. No label carries a user, conversation or
// message id; stage is "write", "commit" or "watermark".
type metrics struct {
	write        prometheus.Histogram
	commit       prometheus.Histogram
	perBatch     prometheus.Histogram
	batches      prometheus.Counter
	rows         prometheus.Counter
	expired      prometheus.Counter
	duplicates   prometheus.Counter
	failures     *prometheus.CounterVec
	position     prometheus.Gauge
	watermark    prometheus.Gauge
	unarchivable prometheus.Counter
}

func newMetrics(r *obs.Registry) *metrics {
	return &metrics{
		write: r.Histogram("qim_archiver_cql_write_seconds",
			"One Put attempt of a batch: every message_record, then every history_index row, at LOCAL_QUORUM.", secondsBuckets),
		commit:   r.Histogram("qim_archiver_offset_commit_seconds", "One synchronous commit of the Outbox position.", secondsBuckets),
		perBatch: r.Histogram("qim_archiver_batch_records", "Outbox records per archived batch.", batchBuckets),
		batches:  r.Counter("qim_archiver_batches_total", "Batches whose rows were all acknowledged."),
		rows:     r.Counter("qim_archiver_rows_total", "Messages written to the archive (each once per acknowledged batch; a replayed batch writes them again)."),
		expired: r.Counter("qim_archiver_expired_total",
			"Messages not written because their retention had already ended when they were archived."),
		duplicates: r.Counter("qim_archiver_duplicates_total",
			"Outbox records repeated inside one batch (the writer may produce a commit twice); archived once."),
		failures: r.CounterVec("qim_archiver_failures_total",
			"Failed attempts by stage (write: the batch is retried; commit: only the commit is retried; watermark: the publish is retried on the next tick).", "stage"),
		position:     r.Gauge("qim_archiver_committed_offset", "The committed Outbox position: offset of the next record to archive."),
		watermark:    r.Gauge("qim_archiver_watermark_ms", "The published archive watermark T (Unix ms): every message COMMITTED before it is archived."),
		unarchivable: r.Invariant(contract.InvariantArchiverUnarchivableRecords),
	}
}

// InvariantCounters names the always-zero counters the archiver registers, read from a scratch
// registry as the fanout's are.
func InvariantCounters() []string {
	reg := obs.NewRegistry("archiver")
	newMetrics(reg)
	return reg.InvariantNames()
}
