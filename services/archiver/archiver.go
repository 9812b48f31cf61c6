package archiver

import (
	"context"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/qim-dev/qim/services/internal/backoff"
	"github.com/qim-dev/qim/services/internal/commitlog"
	"github.com/qim-dev/qim/services/internal/cqlstore"
)

// outboxPartition is the Outbox's only partition.
const outboxPartition = 0

// commitTimeout bounds one position commit; like the fanout's, it runs detached from shutdown
// (the batch is durable in CQL, recording that spares a replay).
const commitTimeout = 5 * time.Second

// The loop's dependencies (commitlog and cqlstore in production; tests wrap them to fail).
type (
	outboxSource interface {
		Poll(ctx context.Context, max int) ([]commitlog.Record, error)
		Watermarks(ctx context.Context) (map[int32]commitlog.Bounds, error)
	}
	rowStore interface {
		Put(ctx context.Context, rows []cqlstore.Row, now time.Time) (cqlstore.PutResult, error)
	}
	positionStore interface {
		Commit(ctx context.Context, partition int32, next int64) error
	}
)

// loop is the HistoryArchiver's batch loop over the single Outbox partition.
//
// Invariant: the committed position never passes a record whose message_record and
// history_index rows are not both acknowledged at LOCAL_QUORUM (cqlstore.Put returned nil), so
// the archive watermark derived from it (watermark.go) never claims an unarchived message.
// Positions move forward by whole batches only; a record that cannot be archived stops the loop
// below it; a failed batch is retried forever with the same rows and never skipped.
//
// How: poll what is there (at most BatchSize, never waiting to fill), decode it all or nothing,
// Put the rows (records first, then the index), then commit last+1 synchronously.
//
// Rejected: reading history from Redis instead of the Outbox (finding what to copy needs a walk
// over every key and a position of its own, and the hot tier is what the archive exists to let
// us trim; the Outbox is ordered, replicated and carries every record whole), and
// committing before the CQL writes are acknowledged (a crash in between would leave a hole that
// the watermark then declares archived, and the hot-tier trim would delete its only copy).
type loop struct {
	cfg   Config
	log   *slog.Logger
	src   outboxSource
	store rowStore
	pos   positionStore
	m     *metrics
	now   func() time.Time

	next  atomic.Int64     // committed position: offset of the next record to archive
	high  atomic.Int64     // last known Outbox high watermark
	retry *backoff.Retrier // attempts of the batch or commit being retried, and their failures
}

func newLoop(cfg Config, log *slog.Logger, src outboxSource, store rowStore, pos positionStore, m *metrics,
	start, high int64) *loop {
	l := &loop{cfg: cfg, log: log, src: src, store: store, pos: pos, m: m, now: time.Now,
		retry: backoff.NewRetrier(cfg.RetryBackoffMin, cfg.RetryBackoffMax)}
	l.next.Store(start)
	l.high.Store(max(high, start))
	m.position.Set(float64(start))
	return l
}

// run archives batches until ctx ends (nil) or a record or the consumer makes continuing unsafe.
func (l *loop) run(ctx context.Context) error {
	for ctx.Err() == nil {
		polled, perr := l.src.Poll(ctx, l.cfg.BatchSize)
		if ctx.Err() != nil {
			return nil //nolint:nilerr // shutdown: an unfinished batch is replayed by the next start
		}
		if len(polled) > 0 {
			b, err := decode(l.cfg.OutboxTopic, polled, l.next.Load())
			if err != nil {
				l.m.unarchivable.Inc()
				return err
			}
			if !l.archive(ctx, b) || !l.commit(ctx, b.next) {
				return nil // stopped mid-batch: the next start replays it
			}
		}
		if perr != nil {
			return fmt.Errorf("archiver: consume %s after offset %d: %w", l.cfg.OutboxTopic, l.next.Load()-1, perr)
		}
	}
	return nil
}

// archive writes one batch, retrying until every row is acknowledged (true) or ctx ends.
func (l *loop) archive(ctx context.Context, b *batch) bool {
	var res cqlstore.PutResult
	ok := l.retry.Do(ctx, func() error {
		t := time.Now()
		var err error
		res, err = l.store.Put(ctx, b.rows, l.now())
		l.m.write.Observe(time.Since(t).Seconds())
		if err != nil {
			l.m.failures.WithLabelValues("write").Inc()
			return fmt.Errorf("archiver: write %d rows of %s [%d, %d]: %w", len(b.rows), l.cfg.OutboxTopic, b.first, b.last, err)
		}
		return nil
	}, l.logFail("write"))
	if ok {
		l.m.batches.Inc()
		l.m.perBatch.Observe(float64(b.last - b.first + 1))
		l.m.rows.Add(float64(res.Written))
		l.m.expired.Add(float64(res.Expired))
		l.m.duplicates.Add(float64(b.duplicates))
	}
	return ok
}

// commit stores next, retrying only the commit: the rows below it are already durable.
func (l *loop) commit(ctx context.Context, next int64) bool {
	ok := l.retry.Do(ctx, func() error {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), commitTimeout)
		defer cancel()
		t := time.Now()
		err := l.pos.Commit(cctx, outboxPartition, next)
		l.m.commit.Observe(time.Since(t).Seconds())
		if err != nil {
			l.m.failures.WithLabelValues("commit").Inc()
			return fmt.Errorf("archiver: commit %s position %d: %w", l.cfg.OutboxTopic, next, err)
		}
		return nil
	}, l.logFail("commit"))
	if ok {
		l.next.Store(next)
		if l.high.Load() < next {
			l.high.Store(next)
		}
		l.m.position.Set(float64(next))
	}
	return ok
}

// logFail logs one failed attempt of stage that is about to be retried.
func (l *loop) logFail(stage string) func(int, error) {
	return func(attempt int, err error) {
		l.log.Warn("archiver: attempt failed; position unchanged, retrying", "stage", stage,
			"position", l.next.Load(), "attempt", attempt, "err", err)
	}
}

// ready: not ready after UnreadyAfter consecutive failed attempts, until one succeeds.
func (l *loop) ready() error {
	n, last := l.retry.Failing()
	if n < int64(l.cfg.UnreadyAfter) {
		return nil
	}
	return fmt.Errorf("archiver: %d consecutive failed attempts at %s offset %d: %s", n, l.cfg.OutboxTopic, l.next.Load(), last)
}

// lag is high watermark − committed position, in records.
func (l *loop) lag() int64 { return max(0, l.high.Load()-l.next.Load()) }
