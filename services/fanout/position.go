package fanout

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/qim-dev/qim/services/internal/commitlog"
	"github.com/qim-dev/qim/services/internal/failpoint"
)

// commitTimeout bounds one offset commit. It runs detached from the service's context: once
// every dispatch of a batch is acknowledged, recording that is worth finishing during shutdown
// (it spares the batch a replay), and the commit is short.
const commitTimeout = 15 * time.Second

// flushTimeout bounds the last commit at shutdown. That commit only spares a replay, so a stop
// must not wait on it: with the broker unreachable, the chaos matrix's rolling restart saw a
// fanout spend its whole 15 s SIGTERM grace in it and get killed. Well under the grace that
// supervisors give (15–30 s), long enough for a healthy broker (a commit takes milliseconds).
const flushTimeout = 3 * time.Second

// pending reports acknowledged batches whose position is not committed yet.
func (c *coordinator) pending() bool { return c.acked > c.next.Load() }

// commitDue reports whether the acknowledged position should be committed now.
func (c *coordinator) commitDue() bool {
	return c.pending() && time.Since(c.lastCommit) >= c.cfg.CommitInterval
}

// poll waits for Outbox records, but while a commit is pending no longer than its due time: the
// caller then commits even if no record arrives. The shortened wait ending is not an error.
func (c *coordinator) poll(ctx context.Context) ([]commitlog.Record, error) {
	if !c.pending() {
		return c.src.Poll(ctx, c.cfg.BatchSize)
	}
	pctx, cancel := context.WithDeadline(ctx, c.lastCommit.Add(c.cfg.CommitInterval))
	defer cancel()
	recs, err := c.src.Poll(pctx, c.cfg.BatchSize)
	if err != nil && ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) {
		err = nil
	}
	return recs, err
}

// commit stores the acknowledged position, retrying until it succeeds (true) or ctx ends
// (false). Only the commit is retried: the dispatches below the position are already durable.
func (c *coordinator) commit(ctx context.Context) bool {
	next := c.acked
	ok := c.retry.Do(ctx, func() error { return c.commitOnce(ctx, next) }, func(attempt int, err error) {
		c.log.Warn("fanout: position commit failed; dispatches are acknowledged, retrying the commit",
			"topic", c.cfg.OutboxTopic, "position", next, "attempt", attempt, "err", err)
	})
	if ok {
		c.next.Store(next)
		c.lastCommit = time.Now()
		c.m.position.Set(float64(next))
	}
	return ok
}

// commitOnce makes one attempt, detached from ctx's cancellation (see commitTimeout).
func (c *coordinator) commitOnce(ctx context.Context, next int64) error {
	return c.commitWithin(ctx, next, commitTimeout)
}

func (c *coordinator) commitWithin(ctx context.Context, next int64, bound time.Duration) error {
	failpoint.Hit(failpoint.FanoutBeforeOffsetCommit)
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), bound)
	defer cancel()
	t := time.Now()
	err := c.pos.Commit(cctx, outboxPartition, next)
	c.m.commit.Observe(time.Since(t).Seconds())
	if err != nil {
		c.m.failures.WithLabelValues("commit").Inc()
		return fmt.Errorf("fanout: commit %s position %d: %w", c.cfg.OutboxTopic, next, err)
	}
	return nil
}

// flush makes one last attempt to commit acknowledged batches when the loop ends, so a clean
// stop does not leave work for a replay. A failure only costs that replay.
func (c *coordinator) flush(ctx context.Context) {
	if !c.pending() {
		return
	}
	if err := c.commitWithin(ctx, c.acked, flushTimeout); err != nil {
		c.retry.Failed(err)
		c.log.Warn("fanout: final position commit failed; the next start replays from the stored position",
			"position", c.next.Load(), "acknowledged", c.acked, "err", err)
		return
	}
	c.next.Store(c.acked)
	c.m.position.Set(float64(c.acked))
}
