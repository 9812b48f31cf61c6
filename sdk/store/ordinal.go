package store

// The client_message_id ordinal range.
//
// Invariant: an ordinal is used only if it lies below ordinals.reserved_to as committed on disk,
// and reserved_to only grows. A process claims OrdinalRangeSize ordinals with BEGIN IMMEDIATE and
// hands them out from memory; a crash loses the unused rest of its range, never reuses it. The
// id is DeriveClientMessageID(install_id, ordinal): the domain-separated blake3 of a random
// per-store install id and the ordinal, so ids of two installs never collide and no clock is
// involved anywhere (a clock rolled back cannot repeat an id).
//
// Rejected: random 16-byte ids per send. They need no state, but a retry after a crash must
// reuse the SAME id (the server's idempotency key), so the id has to be stored with the pending
// send anyway; and deriving from a durable counter makes "never twice" checkable in a test
// instead of probabilistic. Claiming one ordinal per send in its own transaction was rejected as
// a second fsync per send; the range makes it one per 64 sends.

import (
	"context"
	"database/sql"
	"fmt"
	"math"

	"github.com/qim-dev/qim/contract"
)

// OrdinalRangeSize is how many ordinals one reservation claims.
const OrdinalRangeSize = 64

// claimOrdinal returns the ordinal the caller's transaction may use and the range that holds in
// memory once that transaction commits. The caller holds s.ord.mu and applies the returned range
// only after a successful commit, so a rolled-back transaction reserves nothing in memory either.
func (s *Store) claimOrdinal(ctx context.Context, tx *sql.Tx) (ordinal, end uint64, err error) {
	if s.ord.next < s.ord.end {
		return s.ord.next, s.ord.end, nil
	}
	var reserved int64
	if err := tx.QueryRowContext(ctx, "SELECT reserved_to FROM ordinals WHERE id = 1").Scan(&reserved); err != nil {
		return 0, 0, fmt.Errorf("store: read ordinal range: %w", err)
	}
	if reserved < 0 || reserved > math.MaxInt64-OrdinalRangeSize {
		return 0, 0, ErrOrdinalsExhausted
	}
	if _, err := tx.ExecContext(ctx, "UPDATE ordinals SET reserved_to = ? WHERE id = 1 AND reserved_to = ?",
		reserved+OrdinalRangeSize, reserved); err != nil {
		return 0, 0, fmt.Errorf("store: reserve ordinals: %w", err)
	}
	return uint64(reserved), uint64(reserved) + OrdinalRangeSize, nil
}

// ClientMessageID derives the id of an ordinal of this store.
func (s *Store) ClientMessageID(ordinal uint64) contract.ClientMessageID {
	return contract.DeriveClientMessageID(s.install, ordinal)
}

// ReservedOrdinals returns the durable reservation bound (tests and diagnostics).
func (s *Store) ReservedOrdinals(ctx context.Context) (uint64, error) {
	var reserved int64
	if err := s.db.QueryRowContext(ctx, "SELECT reserved_to FROM ordinals WHERE id = 1").Scan(&reserved); err != nil {
		return 0, fmt.Errorf("store: read ordinal range: %w", err)
	}
	return uint64(reserved), nil
}
