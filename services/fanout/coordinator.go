package fanout

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/qim-dev/qim/services/internal/commitlog"
	"github.com/qim-dev/qim/services/internal/failpoint"
)

// outboxPartition is the Outbox's only partition: the Outbox order is the commit order.
const outboxPartition = 0

// commitTimeout bounds one offset commit. It runs detached from the service's context: once
// every dispatch of a batch is acknowledged, recording that is worth finishing during shutdown
// (it spares the batch a replay), and the commit is short.
const commitTimeout = 15 * time.Second

// lagInterval is how often the Outbox high watermark is listed for the lag gauge.
const lagInterval = time.Second

// coordinator is the FanoutCoordinator's batch loop over the single Outbox partition.
//
// Invariant: the Outbox position never moves before every dispatch planned from the records
// below it is durably acknowledged (acks=all) on its shard's qim.dispatch partition. Positions
// move forward only, by whole batches, to last+1; a record that cannot be planned stops the loop
// with the position still below it; a failed batch is retried forever and never skipped.
//
// How: poll up to BatchSize records (whatever is there, never waiting to fill a batch) and plan
// them in offset order; enqueue every dispatch of the batch at once and wait for all acks; then
// commit last+1 synchronously. A failed produce replays the whole batch with the same bytes —
// the same dispatch_ids and payload_digests, which the MailboxNode converges — and a failed
// commit retries only the commit, because the acknowledged dispatches are already durable.
//
// Rejected: a Kafka transaction per batch (consume-transform-produce with the source offset
// inside the transaction). The seed ran one transaction per Outbox record at ~100 msg/s
// (ADR-0012); per batch it still adds coordinator round trips and markers to every batch, while
// the atomicity it buys is already given by replay + convergence, which the mailbox needs anyway
// for the writer's own duplicate Outbox records.
type coordinator struct {
	cfg     Config
	log     *slog.Logger
	src     outboxSource
	sink    dispatchSink
	pos     positionStore
	planner *planner
	m       *metrics

	next     atomic.Int64 // committed position (the offset of the next record to dispatch)
	high     atomic.Int64 // last known Outbox high watermark
	failures atomic.Int64 // consecutive failed attempts of the current batch
	lastErr  atomic.Pointer[string]
}

func newCoordinator(cfg Config, log *slog.Logger, src outboxSource, sink dispatchSink, pos positionStore,
	m *metrics, start, high int64) *coordinator {
	c := &coordinator{cfg: cfg, log: log, src: src, sink: sink, pos: pos, m: m,
		planner: newPlanner(cfg.OutboxTopic, cfg.shards())}
	c.next.Store(start)
	c.high.Store(max(high, start))
	m.position.Set(float64(start))
	return c
}

// run dispatches batches until ctx ends (nil) or a record, the consumer or the log's position
// makes continuing unsafe (an error naming the offset).
func (c *coordinator) run(ctx context.Context) error {
	for ctx.Err() == nil {
		polled, perr := c.src.Poll(ctx, c.cfg.BatchSize)
		if ctx.Err() != nil {
			return nil //nolint:nilerr // shutdown: an unfinished batch is replayed by the next start
		}
		if len(polled) > 0 {
			b, err := c.planner.plan(polled, c.next.Load())
			if err != nil {
				c.m.unplannable.Inc()
				return err
			}
			if !c.deliver(ctx, b) {
				return nil // stopped mid-batch: the position did not move, the next start replays it
			}
		}
		if perr != nil {
			// A failed consumer never recovers by itself; the restart validates the position again.
			return fmt.Errorf("fanout: consume %s after offset %d: %w", c.cfg.OutboxTopic, c.next.Load()-1, perr)
		}
	}
	return nil
}

// deliver makes one batch durable and commits its position, retrying until it succeeds (true)
// or ctx ends (false).
func (c *coordinator) deliver(ctx context.Context, b *batch) bool {
	backoff := c.cfg.RetryBackoffMin
	acked := false
	for attempt := 1; ; attempt++ {
		err := c.attempt(ctx, b, &acked)
		if err == nil {
			c.succeeded(b)
			return true
		}
		if ctx.Err() != nil {
			return false
		}
		c.failed(b, attempt, err)
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return false
		case <-t.C:
		}
		backoff = min(2*backoff, c.cfg.RetryBackoffMax)
	}
}

// attempt produces the batch unless an earlier attempt already had it acknowledged, then commits.
func (c *coordinator) attempt(ctx context.Context, b *batch, acked *bool) error {
	if !*acked {
		t := time.Now()
		err := c.sink.ProduceBatch(ctx, b.records)
		c.m.ackWait.Observe(time.Since(t).Seconds())
		if err != nil {
			c.m.failures.WithLabelValues("produce").Inc()
			return fmt.Errorf("fanout: produce %d dispatches of %s [%d, %d]: %w",
				len(b.records), c.cfg.OutboxTopic, b.first, b.last, err)
		}
		*acked = true
	}
	failpoint.Hit(failpoint.FanoutBeforeOffsetCommit)
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), commitTimeout)
	defer cancel()
	t := time.Now()
	err := c.pos.Commit(cctx, outboxPartition, b.next)
	c.m.commit.Observe(time.Since(t).Seconds())
	if err != nil {
		c.m.failures.WithLabelValues("commit").Inc()
		return fmt.Errorf("fanout: commit %s position %d: %w", c.cfg.OutboxTopic, b.next, err)
	}
	return nil
}

func (c *coordinator) succeeded(b *batch) {
	c.next.Store(b.next)
	if c.high.Load() < b.next {
		c.high.Store(b.next)
	}
	c.failures.Store(0)
	c.m.position.Set(float64(b.next))
	c.m.batches.Inc()
	c.m.records.Add(float64(b.envelopes))
	c.m.dispatches.Add(float64(len(b.records)))
	c.m.perBatch.Observe(float64(len(b.records)))
	c.m.cycle.Observe(time.Since(b.polled).Seconds())
}

func (c *coordinator) failed(b *batch, attempt int, err error) {
	msg := err.Error()
	c.lastErr.Store(&msg)
	c.failures.Add(1)
	c.log.Warn("fanout: batch attempt failed; position unchanged, retrying", "topic", c.cfg.OutboxTopic,
		"first", b.first, "last", b.last, "dispatches", len(b.records), "attempt", attempt, "err", err)
}

// ready reports the loop's health: not ready after UnreadyAfter consecutive failed attempts,
// until a batch succeeds again.
func (c *coordinator) ready() error {
	n := c.failures.Load()
	if n < int64(c.cfg.UnreadyAfter) {
		return nil
	}
	last := ""
	if p := c.lastErr.Load(); p != nil {
		last = *p
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
