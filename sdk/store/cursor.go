package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/qim-dev/qim/contract"
)

// Cursor returns the device's mailbox position.
func (s *Store) Cursor(ctx context.Context) (CursorState, error) {
	if s.closed.Load() {
		return CursorState{}, ErrClosed
	}
	return readCursor(ctx, s.db)
}

type queryer interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

func readCursor(ctx context.Context, q queryer) (CursorState, error) {
	var c CursorState
	var seq, gen int64
	err := q.QueryRowContext(ctx, "SELECT mailbox_seq, generation, updated_at_ms, last_reset_reason FROM cursor WHERE id = 1").
		Scan(&seq, &gen, &c.UpdatedAtMs, &c.LastResetReason)
	if err != nil {
		return CursorState{}, fmt.Errorf("store: read cursor: %w", err)
	}
	ms, err := contract.NewMailboxSeq(uint64(seq))
	if err != nil {
		return CursorState{}, fmt.Errorf("%w: stored cursor: %v", ErrSchema, err)
	}
	c.Seq, c.Generation = ms, uint64(gen)
	return c, nil
}

// ResetForRebuild is the REBUILD reset after CURSOR_EXPIRED, in one transaction: the cursor goes
// back to zero under a new generation, and every conversation is marked possibly incomplete from
// the highest seq it had applied through a pull or history (gap_from_seq), unless it already has a
// gap. Local messages are kept: they are still true, only the span the trimmed mailbox no longer
// holds may be missing, and the SDK's backfill fetches it from history.
//
// Why zero and not the server's resume cursor: the trim mark is the highest seq trimmed, but a
// late-materialized message lands in its creation day's bucket, so entries below the mark can
// still be retained; from zero the device gets everything the mailbox still has, and message_id
// dedup makes the overlap with local data free of duplicates. A reset is rare (a device offline
// for longer than contract.MailboxRetention), so re-reading up to seven days of entries is cheap.
func (s *Store) ResetForRebuild(ctx context.Context, reason string) (CursorState, error) {
	var out CursorState
	err := s.tx(ctx, func(tx *sql.Tx) error {
		now := time.Now().UnixMilli()
		if _, err := tx.ExecContext(ctx, `UPDATE cursor SET mailbox_seq = 0, generation = generation + 1,
			updated_at_ms = ?, last_reset_reason = ? WHERE id = 1`, now, reason); err != nil {
			return fmt.Errorf("store: reset cursor: %w", err)
		}
		if _, err := tx.ExecContext(ctx, `UPDATE conversations SET gap_from_seq = synced_seq
			WHERE gap_from_seq IS NULL`); err != nil {
			return fmt.Errorf("store: mark conversations incomplete: %w", err)
		}
		var err error
		out, err = readCursor(ctx, tx)
		return err
	})
	return out, err
}
