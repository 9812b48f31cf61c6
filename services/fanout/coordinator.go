package fanout

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/qim-dev/qim/services/internal/backoff"
	"github.com/qim-dev/qim/services/internal/commitlog"
)

// outboxPartition is the Outbox's only partition: the Outbox order is the commit order.
const outboxPartition = 0

// lagInterval is how often the Outbox high watermark is listed for the lag gauge.
const lagInterval = time.Second

// coordinator is the FanoutCoordinator's batch loop over the single Outbox partition.
//
// Invariant: the committed Outbox position never moves past a record whose planned dispatches
// are not all durably acknowledged (acks=all) on their shards' qim.dispatch partitions.
// Positions move forward only, by whole batches, to last+1 of an acknowledged batch; a record
// that cannot be planned stops the loop with the position still below it; a failed batch is
// retried forever and never skipped.
//
// How: poll up to BatchSize records (whatever is there, never waiting to fill a batch) and plan
// them in offset order from the acknowledged position; enqueue every dispatch of the batch at
// once and wait for all acks; the batch is then acknowledged (acked = last+1). The position is
// committed synchronously, to the latest acknowledged position: after every batch by default,
// at most once per CommitInterval when one is set, and once more on the way out. While
// acknowledged batches wait for their commit, the poll waits no longer than the commit's due
// time, so an idle Outbox still gets its position stored promptly. A failed produce replays the
// whole batch with the same bytes — the same dispatch_ids and payload_digests, which the
// MailboxNode converges — and a failed commit retries only the commit, because the acknowledged
// dispatches are already durable.
//
// Why the per-batch commit stays the default: its ~10 ms wait (at 1,000 msg/s here) also lets
// the next batch fill. Without it fanout cycled 2.6× as often with smaller batches and the
// broker served 80 % more requests overall (see Config.CommitInterval).
// Rejected: a Kafka transaction per batch (consume-transform-produce with the source offset
// inside the transaction). One transaction per Outbox record ran at ~100 msg/s
// (docs/adr/0012-fanout-without-kafka-transactions.md); per batch it still adds coordinator round
// trips and markers to every batch, while the atomicity it buys is already given by replay +
// convergence, which the mailbox needs anyway for the writer's own duplicate Outbox records.
type coordinator struct {
	cfg     Config
	log     *slog.Logger
	src     outboxSource
	sink    dispatchSink
	pos     positionStore
	planner *planner
	m       *metrics

	next  atomic.Int64     // committed position (the offset of the next record to dispatch after a restart)
	high  atomic.Int64     // last known Outbox high watermark
	retry *backoff.Retrier // attempts of the batch or commit being retried, and their failures

	// Owned by the run goroutine.
	acked      int64     // acknowledged position: last+1 of the newest batch whose dispatches are all acked
	lastCommit time.Time // when the position was last stored (zero: never by this run)
}

func newCoordinator(cfg Config, log *slog.Logger, src outboxSource, sink dispatchSink, pos positionStore,
	m *metrics, start, high int64) *coordinator {
	c := &coordinator{cfg: cfg, log: log, src: src, sink: sink, pos: pos, m: m,
		planner: newPlanner(cfg.OutboxTopic, cfg.shards()), acked: start,
		retry: backoff.NewRetrier(cfg.RetryBackoffMin, cfg.RetryBackoffMax)}
	c.next.Store(start)
	c.high.Store(max(high, start))
	m.position.Set(float64(start))
	return c
}

// run dispatches batches until ctx ends (nil) or a record, the consumer or the log's position
// makes continuing unsafe (an error naming the offset). Either way the latest acknowledged
// position is committed before it returns.
func (c *coordinator) run(ctx context.Context) error {
	defer c.flush(ctx)
	for ctx.Err() == nil {
		if c.commitDue() && !c.commit(ctx) {
			return nil
		}
		polled, perr := c.poll(ctx)
		if ctx.Err() != nil {
			return nil //nolint:nilerr // shutdown: an unfinished batch is replayed by the next start
		}
		if len(polled) > 0 {
			b, err := c.planner.plan(polled, c.acked)
			if err != nil {
				c.m.unplannable.Inc()
				return err
			}
			if !c.deliver(ctx, b) {
				return nil // stopped mid-batch: not acknowledged, the next start replays it
			}
		}
		if perr != nil {
			// A failed consumer never recovers by itself; the restart validates the position again.
			return fmt.Errorf("fanout: consume %s after offset %d: %w", c.cfg.OutboxTopic, c.acked-1, perr)
		}
	}
	return nil
}

// deliver makes one batch durable, retrying until every dispatch is acknowledged (true) or ctx
// ends (false).
func (c *coordinator) deliver(ctx context.Context, b *batch) bool {
	ok := c.retry.Do(ctx, func() error {
		t := time.Now()
		err := c.sink.ProduceBatch(ctx, b.records)
		c.m.ackWait.Observe(time.Since(t).Seconds())
		if err != nil {
			c.m.failures.WithLabelValues("produce").Inc()
			return fmt.Errorf("fanout: produce %d dispatches of %s [%d, %d]: %w",
				len(b.records), c.cfg.OutboxTopic, b.first, b.last, err)
		}
		return nil
	}, func(attempt int, err error) {
		c.log.Warn("fanout: batch attempt failed; position unchanged, retrying", "topic", c.cfg.OutboxTopic,
			"first", b.first, "last", b.last, "dispatches", len(b.records), "attempt", attempt, "err", err)
	})
	if ok {
		c.acked = b.next
		if c.high.Load() < b.next {
			c.high.Store(b.next)
		}
		c.m.batches.Inc()
		c.m.records.Add(float64(b.envelopes))
		c.m.dispatches.Add(float64(len(b.records)))
		c.m.perBatch.Observe(float64(len(b.records)))
		c.m.cycle.Observe(time.Since(b.polled).Seconds())
	}
	return ok
}

// ready reports the loop's health: not ready after UnreadyAfter consecutive failed attempts,
// until a batch succeeds again.
func (c *coordinator) ready() error {
	n, last := c.retry.Failing()
	if n < int64(c.cfg.UnreadyAfter) {
		return nil
	}
	return fmt.Errorf("fanout: %d consecutive failed attempts at %s offset %d: %s",
		n, c.cfg.OutboxTopic, c.next.Load(), last)
}

// lag is high watermark − committed position, in records.
func (c *coordinator) lag() int64 { return max(0, c.high.Load()-c.next.Load()) }

// watchLag refreshes the high watermark until ctx ends. A failed listing keeps the last value:
// the lag gauge is advisory, the batch loop reports real failures.
func (c *coordinator) watchLag(ctx context.Context) {
	t := time.NewTicker(lagInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		wm, err := c.src.Watermarks(ctx)
		if err != nil {
			if !errors.Is(err, context.Canceled) {
				c.log.Debug("fanout: list outbox watermarks", "err", err)
			}
			continue
		}
		if b, ok := wm[outboxPartition]; ok && b.High > c.high.Load() {
			c.high.Store(b.High)
		}
	}
}

var _ outboxSource = (*commitlog.PartitionConsumer)(nil)
