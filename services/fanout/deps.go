package fanout

import (
	"context"

	"github.com/qim-dev/qim/services/internal/commitlog"
)

// The coordinator's dependencies, declared where they are consumed. Production wires the
// franz-go PartitionConsumer, DispatchProducer and OffsetStore; tests wire the same real
// implementations against the real stack, wrapped only to inject a fault or a crash.

// outboxSource is the static consumer of the Outbox partition.
type outboxSource interface {
	// Poll returns at most max records as soon as any are available, in offset order.
	Poll(ctx context.Context, max int) ([]commitlog.Record, error)
	Watermarks(ctx context.Context) (map[int32]commitlog.Bounds, error)
}

// dispatchSink publishes a batch of dispatches.
type dispatchSink interface {
	// ProduceBatch returns nil only when every record is acknowledged with acks=all, and only
	// after every enqueued record has an outcome.
	ProduceBatch(ctx context.Context, recs []commitlog.Record) error
	BufferedRecords() int
}

// positionStore stores the Outbox position (the offset of the next record to dispatch).
type positionStore interface {
	Commit(ctx context.Context, partition int32, next int64) error
}
