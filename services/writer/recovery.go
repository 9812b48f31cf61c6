package writer

import (
	"context"
	"fmt"
	"time"

	"github.com/qim-dev/qim/services/internal/msgstore"
)

// recoveryBatch bounds one scan of the recovery index.
const recoveryBatch = 256

// runRecovery resumes commits left unfinished by a crash, a failed produce or a failed mark. The
// store's recovery index holds exactly the commits not yet COMMITTED, so the scan is bounded by
// the work outstanding, not by history. A commit younger than the grace period belongs to the
// live pipeline and is left alone; finishing it twice would only duplicate its Outbox record,
// which the dispatch identity converges, but there is no reason to race.
func (c *committer) runRecovery(ctx context.Context, every, grace time.Duration) error {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		if _, err := c.recoverOnce(ctx, grace); err != nil && ctx.Err() == nil {
			c.log.Warn("writer: recovery pass failed", "err", err)
		}
	}
}

// recoverOnce finishes every commit older than grace; it returns how many it completed.
func (c *committer) recoverOnce(ctx context.Context, grace time.Duration) (int, error) {
	done := 0
	for {
		before := c.now().Add(-grace).UnixMilli()
		keys, err := c.store.PendingCommits(ctx, before, recoveryBatch)
		if err != nil {
			return done, fmt.Errorf("writer: scan recovery index: %w", err)
		}
		for _, k := range keys {
			if err := c.resume(ctx, k); err != nil {
				return done, err
			}
			done++
			c.m.recovered.Inc()
		}
		if len(keys) < recoveryBatch {
			return done, nil
		}
	}
}

// resume drives one stored commit to COMMITTED from its stored record.
func (c *committer) resume(ctx context.Context, k msgstore.CommitKey) error {
	cm, ok, err := c.store.LoadCommit(ctx, k)
	if err != nil || !ok {
		return err // gone: finished concurrently or expired; nothing to resume
	}
	if cm.State == msgstore.StateCommitted {
		// Still in the index: a mark died after its state write. Marking again redoes the
		// expiry, owner and index writes from the stored committed_at (the argument is ignored).
		if errs := c.store.MarkCommitted(ctx, []msgstore.MarkRequest{{Key: k, CommittedAtMs: c.now().UnixMilli()}}); errs[0] != nil {
			return fmt.Errorf("writer: recover mark of a committed commit: %w", errs[0])
		}
		return nil
	}
	if cm.State == msgstore.StateReserved {
		if cm, err = c.store.Record(ctx, k); err != nil {
			return fmt.Errorf("writer: recover record: %w", err)
		}
	}
	env, err := c.envelopeOfRecord(ctx, k.Conversation, cm.Record, cm.ReservedAtMs)
	if err != nil {
		return err
	}
	mid := cm.MessageID.Bytes()
	errc := make(chan error, 1)
	c.out.Produce(ctx, mid[:], env, func(_ int64, err error) { errc <- err })
	select {
	case err = <-errc:
	case <-ctx.Done():
		return ctx.Err()
	}
	if err != nil {
		return fmt.Errorf("writer: recover outbox produce: %w", err)
	}
	amend, err := amendmentOfRecord(cm.Record)
	if err != nil {
		return err
	}
	if errs := c.store.MarkCommitted(ctx, []msgstore.MarkRequest{{Key: k, CommittedAtMs: c.now().UnixMilli(), Amend: amend}}); errs[0] != nil {
		return fmt.Errorf("writer: recover mark: %w", errs[0])
	}
	return nil
}
