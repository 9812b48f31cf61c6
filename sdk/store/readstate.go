package store

// Read state: the server's read watermark merged into the local one, and the MARK_READs the
// server has not taken into account yet.
//
// The read watermark is per user on the server (read:{user}, shared by all the user's devices)
// and per conversation here (read_seq). Both only move forward, so merging is max() whatever the
// order of the inputs: MarkRead, an own message (sending is reading), a SESSION_LIST_BATCH entry,
// a MARK_READ_ACK. read_sent_seq records how far the server has taken the local watermark into
// account; a conversation with read_seq > read_sent_seq owes the server a MARK_READ. Deriving
// that from two durable columns makes an offline MarkRead survive a restart without a queue of
// its own: the next login's merge sets read_sent_seq to what the server reports, and whatever is
// still higher locally is sent. Rejected: a separate outbox table of MARK_READ requests — it
// would duplicate read_seq, need its own dedup, and could disagree with it after a crash.

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/qim-dev/qim/contract"
)

// SessionState is one conversation of the server's session list (SESSION_LIST_BATCH or
// SESSION_DELTA), with absolute values.
type SessionState struct {
	Conversation contract.ConversationID
	Peer         contract.UserID // the other user of a direct conversation; 0 when not given
	LatestSeq    contract.ConversationSeq
	// LatestMessageID is the head the server shows (the latest non-CONTROL message) and HeadSeq
	// its seq; zero if none.
	LatestMessageID contract.MessageID
	HeadSeq         contract.ConversationSeq
	LastActivityMs  int64
	ReadSeq         contract.ConversationSeq // the user's read watermark on the server
}

// Merged reports what MergeSessions changed.
type Merged struct {
	// Conversations carries the absolute state of every conversation whose read watermark or
	// unread count changed, and of every conversation the store did not know before.
	Conversations []Conversation
	// Discovered counts conversations the store did not know; Raised those whose local watermark
	// the server's moved forward; Ahead those where the local watermark is higher than the
	// server's (they owe a MARK_READ, see UnsentReads).
	Discovered, Raised, Ahead int
}

// ReadMark is a local watermark the server has not acknowledged yet.
type ReadMark struct {
	Conversation contract.ConversationID
	Seq          contract.ConversationSeq
}

// MergeSessions merges session-list entries into the store in one transaction.
//
// A known conversation takes the server's watermark forward only (read_seq never goes down) and
// records it as what the server holds (read_sent_seq, overwritten: if the server reports less
// than the device believed it had sent, the device sends it again). A conversation the store
// did not know is recorded with the server's values, so a fresh device lists it; it counts as
// synced up to its read watermark, and when something lies after the watermark its gap starts
// there, so the REBUILD-style backfill fetches the messages that can be unread — never the read
// history, which History pages on demand.
//
// Unread is recounted by the one definition over local messages; the server's count is not
// copied (it may include messages the device does not hold yet, and two definitions in one
// number is how "this device shows 3, that one 5" starts).
func (s *Store) MergeSessions(ctx context.Context, states []SessionState) (Merged, error) {
	var out Merged
	err := s.tx(ctx, func(tx *sql.Tx) error {
		out = Merged{}
		for _, st := range states {
			if err := s.mergeSession(ctx, tx, st, &out); err != nil {
				return err
			}
		}
		return nil
	})
	return out, err
}

func (s *Store) mergeSession(ctx context.Context, tx *sql.Tx, st SessionState, out *Merged) error {
	if st.Conversation.Kind() == contract.KindInvalid || st.Conversation.Kind() > contract.KindRoom {
		return fmt.Errorf("%w: conversation %s has no valid kind", ErrInvalid, st.Conversation)
	}
	id := u128b(contract.U128(st.Conversation))
	var readSeq int64
	err := tx.QueryRowContext(ctx, "SELECT read_seq FROM conversations WHERE conversation_id = ?", id).Scan(&readSeq)
	switch {
	case errNoRow(err):
		return s.discover(ctx, tx, st, out)
	case err != nil:
		return fmt.Errorf("store: read conversation: %w", err)
	}
	server := i64(uint64(st.ReadSeq))
	if _, err := tx.ExecContext(ctx, `UPDATE conversations SET read_seq = MAX(read_seq, ?), read_sent_seq = ?,
		peer_user = CASE WHEN peer_user = 0 THEN ? ELSE peer_user END WHERE conversation_id = ?`,
		server, server, i64(uint64(st.Peer)), id); err != nil {
		return fmt.Errorf("store: merge read watermark: %w", err)
	}
	switch {
	case readSeq > server:
		out.Ahead++
		return nil
	case readSeq == server:
		return nil // nothing the app sees changed
	}
	c, err := s.recount(ctx, tx, st.Conversation)
	if err != nil {
		return err
	}
	out.Raised++
	out.Conversations = append(out.Conversations, c)
	return nil
}

// discover records a conversation the store did not know.
func (s *Store) discover(ctx context.Context, tx *sql.Tx, st SessionState, out *Merged) error {
	var latest, gap any
	if !st.LatestMessageID.IsZero() {
		latest = u128b(contract.U128(st.LatestMessageID))
	}
	read := i64(uint64(st.ReadSeq))
	if st.LatestSeq > st.ReadSeq {
		gap = read
	}
	_, err := tx.ExecContext(ctx, `INSERT INTO conversations VALUES (?, ?, ?, ?, ?, ?, ?, ?, 0, 1, ?, ?, ?)`,
		u128b(contract.U128(st.Conversation)), int64(st.Conversation.Kind()), i64(uint64(st.Peer)),
		i64(uint64(st.LatestSeq)), latest, st.LastActivityMs, read, read, gap, read, i64(uint64(st.HeadSeq)))
	if err != nil {
		return fmt.Errorf("store: record conversation: %w", err)
	}
	c, err := s.recount(ctx, tx, st.Conversation)
	if err != nil {
		return err
	}
	out.Discovered++
	out.Conversations = append(out.Conversations, c)
	return nil
}

// AckRead records a MARK_READ_ACK: the server took the request for requested into account and
// now holds stored. read_sent_seq covers both (a request above the server's latest seq is
// clamped there, and sending it again could never do better); read_seq takes stored forward
// only (another device may have read further). It reports whether the conversation as the app
// sees it changed. A definite refusal is recorded the same way with stored 0, so the
// conversation is not sent again at every login.
func (s *Store) AckRead(ctx context.Context, conv contract.ConversationID, requested, stored contract.ConversationSeq) (Conversation, bool, error) {
	var out Conversation
	var changed bool
	err := s.tx(ctx, func(tx *sql.Tx) error {
		id := u128b(contract.U128(conv))
		var readSeq int64
		err := tx.QueryRowContext(ctx, "SELECT read_seq FROM conversations WHERE conversation_id = ?", id).Scan(&readSeq)
		if errNoRow(err) {
			return fmt.Errorf("%w: unknown conversation %s", ErrInvalid, conv)
		}
		if err != nil {
			return fmt.Errorf("store: read conversation: %w", err)
		}
		if _, err := tx.ExecContext(ctx, `UPDATE conversations SET read_sent_seq = MAX(read_sent_seq, ?, ?),
			read_seq = MAX(read_seq, ?) WHERE conversation_id = ?`,
			i64(uint64(requested)), i64(uint64(stored)), i64(uint64(stored)), id); err != nil {
			return fmt.Errorf("store: record MARK_READ_ACK: %w", err)
		}
		if out, err = s.recount(ctx, tx, conv); err != nil {
			return err
		}
		changed = int64(out.ReadSeq) != readSeq
		return nil
	})
	return out, changed, err
}

// UnsentReads lists up to limit conversations whose local watermark the server has not taken
// into account, most recent activity first.
func (s *Store) UnsentReads(ctx context.Context, limit int) ([]ReadMark, error) {
	if s.closed.Load() {
		return nil, ErrClosed
	}
	rows, err := s.db.QueryContext(ctx, `SELECT conversation_id, read_seq FROM conversations
		WHERE read_seq > read_sent_seq ORDER BY last_activity_ms DESC, conversation_id LIMIT ?`, limit)
	if err != nil {
		return nil, fmt.Errorf("store: list unsent reads: %w", err)
	}
	defer rows.Close()
	var out []ReadMark
	for rows.Next() {
		var id []byte
		var seq int64
		if err := rows.Scan(&id, &seq); err != nil {
			return nil, fmt.Errorf("store: scan unsent read: %w", err)
		}
		u, err := contract.U128FromBytes(id)
		if err != nil {
			return nil, fmt.Errorf("%w: conversation id", ErrSchema)
		}
		out = append(out, ReadMark{Conversation: contract.ConversationID(u), Seq: contract.ConversationSeq(seq)})
	}
	return out, rows.Err()
}
