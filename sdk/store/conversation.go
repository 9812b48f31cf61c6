package store

// Conversations and the local unread count.
//
// Unread has ONE definition, the server's (docs/architecture.md, invariant 10):
// |{m : m.seq > read_seq ∧ m.sender ≠ self}|, CONTROL, recalled and deleted messages excluded,
// exact up to contract.UnreadExactWindow. It is evaluated over stored messages after every change
// (countUnread), never derived from latest_seq and read_seq: conversation_seq has holes and the
// user's own messages advance it too, so the difference over-counts and never clears. The count is
// stored as a cache in the row so a session list is one query; the definition wins on any doubt.

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/qim-dev/qim/contract"
)

const convCols = `conversation_id, kind, peer_user, latest_seq, latest_message_id, last_activity_ms, read_seq,
	unread, unread_exact, gap_from_seq`

func scanConversation(sc interface{ Scan(...any) error }) (Conversation, error) {
	var c Conversation
	var id, latest []byte
	var kind, peer, latestSeq, readSeq, unread int64
	var gap sql.NullInt64
	if err := sc.Scan(&id, &kind, &peer, &latestSeq, &latest, &c.LastActivityMs, &readSeq, &unread,
		&c.UnreadExact, &gap); err != nil {
		return Conversation{}, err
	}
	u, err := contract.U128FromBytes(id)
	if err != nil {
		return Conversation{}, fmt.Errorf("%w: conversation id", ErrSchema)
	}
	c.ID, c.Kind, c.Peer = contract.ConversationID(u), contract.ConversationKind(kind), contract.UserID(peer)
	c.LatestSeq, c.ReadSeq, c.Unread = contract.ConversationSeq(latestSeq), contract.ConversationSeq(readSeq), uint32(unread)
	if l, err := contract.U128FromBytes(latest); err == nil {
		c.LatestMessageID = contract.MessageID(l)
	}
	c.Incomplete, c.GapFromSeq = gap.Valid, contract.ConversationSeq(gap.Int64)
	if c.ID.Kind() == contract.KindGroup {
		c.Group = c.ID // a group's conversation id is its group id (qim.v1 GroupCreated)
	}
	return c, nil
}

// touchForSend creates the conversation of a new send (so it is listed at once) or refreshes
// its activity time; it never changes sequences.
func touchForSend(ctx context.Context, tx *sql.Tx, conv contract.ConversationID, peer contract.UserID, nowMs int64) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO conversations VALUES (?, ?, ?, 0, NULL, ?, 0, 0, 0, 1, NULL, 0, 0)
		ON CONFLICT (conversation_id) DO UPDATE SET
			peer_user = CASE WHEN conversations.peer_user = 0 THEN excluded.peer_user ELSE conversations.peer_user END,
			last_activity_ms = MAX(conversations.last_activity_ms, excluded.last_activity_ms)`,
		u128b(contract.U128(conv)), int64(conv.Kind()), i64(uint64(peer)), nowMs)
	if err != nil {
		return fmt.Errorf("store: touch conversation: %w", err)
	}
	return nil
}

// upsertConversation merges a batch's effect into the conversation row with max() on every
// position (applying a batch twice changes nothing), recounts unread and returns the row.
//
// latest_seq counts every message, CONTROL included (a read watermark may cover it); the head
// (latest_message_id, head_seq) only messages that may head a session row, so a group whose
// newest message is "bob joined" still previews its last real message, and a group with nothing
// but its CREATE has no head at all, like the server's session list.
//
// An own message raises read_seq (sending is reading) and read_sent_seq alike: the server marks
// the sender's watermark on projection, so sending MARK_READ for it would only double the
// sender's uplink frames.
func (s *Store) upsertConversation(ctx context.Context, tx *sql.Tx, t *convTouch) (Conversation, error) {
	var head any
	if !t.headID.IsZero() {
		head = u128b(contract.U128(t.headID))
	}
	_, err := tx.ExecContext(ctx, `INSERT INTO conversations VALUES (?, ?, ?, ?, ?, ?, ?, ?, 0, 1, NULL, ?, ?)
		ON CONFLICT (conversation_id) DO UPDATE SET
			peer_user = CASE WHEN conversations.peer_user = 0 THEN excluded.peer_user ELSE conversations.peer_user END,
			latest_message_id = CASE WHEN excluded.latest_message_id IS NOT NULL AND excluded.head_seq >= conversations.head_seq
				THEN excluded.latest_message_id ELSE conversations.latest_message_id END,
			head_seq = CASE WHEN excluded.latest_message_id IS NOT NULL
				THEN MAX(conversations.head_seq, excluded.head_seq) ELSE conversations.head_seq END,
			latest_seq = MAX(conversations.latest_seq, excluded.latest_seq),
			last_activity_ms = MAX(conversations.last_activity_ms, excluded.last_activity_ms),
			synced_seq = MAX(conversations.synced_seq, excluded.synced_seq),
			read_seq = MAX(conversations.read_seq, excluded.read_seq),
			read_sent_seq = MAX(conversations.read_sent_seq, excluded.read_sent_seq)`,
		u128b(contract.U128(t.id)), int64(t.id.Kind()), i64(uint64(t.peer)), i64(uint64(t.latestSeq)), head,
		t.activityMs, i64(uint64(t.syncedSeq)), i64(uint64(t.ownSeq)), i64(uint64(t.ownSeq)), i64(uint64(t.headSeq)))
	if err != nil {
		return Conversation{}, fmt.Errorf("store: upsert conversation: %w", err)
	}
	return s.recount(ctx, tx, t.id)
}

// recount evaluates the unread definition for one conversation and stores it.
func (s *Store) recount(ctx context.Context, tx *sql.Tx, conv contract.ConversationID) (Conversation, error) {
	id := u128b(contract.U128(conv))
	var readSeq int64
	if err := tx.QueryRowContext(ctx, "SELECT read_seq FROM conversations WHERE conversation_id = ?", id).
		Scan(&readSeq); err != nil {
		return Conversation{}, fmt.Errorf("store: read conversation: %w", err)
	}
	var n int64
	err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM (SELECT 1 FROM messages
		WHERE conversation_id = ? AND conversation_seq > ? AND sender <> ? AND message_type <> ? AND (flags & 3) = 0
		LIMIT ?)`, id, readSeq, i64(uint64(s.id.User)), int64(contract.MessageControl), contract.UnreadExactWindow+1).Scan(&n)
	if err != nil {
		return Conversation{}, fmt.Errorf("store: count unread: %w", err)
	}
	exact := n <= contract.UnreadExactWindow
	n = min(n, contract.UnreadExactWindow)
	if _, err := tx.ExecContext(ctx, "UPDATE conversations SET unread = ?, unread_exact = ? WHERE conversation_id = ?",
		n, exact, id); err != nil {
		return Conversation{}, fmt.Errorf("store: store unread: %w", err)
	}
	return scanConversation(tx.QueryRowContext(ctx, "SELECT "+convCols+" FROM conversations WHERE conversation_id = ?", id))
}

// updateGap moves or closes a REBUILD gap.
func updateGap(ctx context.Context, tx *sql.Tx, g GapUpdate) (Conversation, error) {
	id := u128b(contract.U128(g.Conversation))
	var gap any
	if !g.Done {
		gap = i64(uint64(g.FromSeq))
	}
	if _, err := tx.ExecContext(ctx, `UPDATE conversations SET gap_from_seq = ? WHERE conversation_id = ?`,
		gap, id); err != nil {
		return Conversation{}, fmt.Errorf("store: update gap: %w", err)
	}
	return scanConversation(tx.QueryRowContext(ctx, "SELECT "+convCols+" FROM conversations WHERE conversation_id = ?", id))
}

// Conversations lists the local session list, most recent activity first.
func (s *Store) Conversations(ctx context.Context) ([]Conversation, error) {
	if s.closed.Load() {
		return nil, ErrClosed
	}
	rows, err := s.db.QueryContext(ctx, "SELECT "+convCols+` FROM conversations
		ORDER BY last_activity_ms DESC, latest_seq DESC, conversation_id`)
	if err != nil {
		return nil, fmt.Errorf("store: list conversations: %w", err)
	}
	defer rows.Close()
	var out []Conversation
	for rows.Next() {
		c, err := scanConversation(rows)
		if err != nil {
			return nil, fmt.Errorf("store: scan conversation: %w", err)
		}
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: list conversations: %w", err)
	}
	return out, nil
}

// MarkRead raises the local read watermark of a conversation to seq (clamped to the latest seq
// the device knows of; never lowered) and returns the conversation with its recounted unread.
// The raise stays marked unsent (UnsentReads) until the server acknowledges it (AckRead) or
// reports a watermark at least as high (MergeSessions), which is how a MarkRead made offline
// reaches the server after the next login, across restarts.
func (s *Store) MarkRead(ctx context.Context, conv contract.ConversationID, seq contract.ConversationSeq) (Conversation, error) {
	var out Conversation
	err := s.tx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE conversations SET read_seq = MAX(read_seq, MIN(?, latest_seq))
			WHERE conversation_id = ?`, i64(uint64(seq)), u128b(contract.U128(conv)))
		if err != nil {
			return fmt.Errorf("store: mark read: %w", err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return fmt.Errorf("%w: unknown conversation %s", ErrInvalid, conv)
		}
		out, err = s.recount(ctx, tx, conv)
		return err
	})
	return out, err
}

// Gaps lists the conversations a REBUILD left possibly incomplete, most recent first.
func (s *Store) Gaps(ctx context.Context) ([]Gap, error) {
	if s.closed.Load() {
		return nil, ErrClosed
	}
	rows, err := s.db.QueryContext(ctx, `SELECT conversation_id, gap_from_seq FROM conversations
		WHERE gap_from_seq IS NOT NULL ORDER BY last_activity_ms DESC, conversation_id`)
	if err != nil {
		return nil, fmt.Errorf("store: list gaps: %w", err)
	}
	defer rows.Close()
	var out []Gap
	for rows.Next() {
		var id []byte
		var from int64
		if err := rows.Scan(&id, &from); err != nil {
			return nil, fmt.Errorf("store: scan gap: %w", err)
		}
		u, err := contract.U128FromBytes(id)
		if err != nil {
			return nil, fmt.Errorf("%w: conversation id", ErrSchema)
		}
		out = append(out, Gap{Conversation: contract.ConversationID(u), FromSeq: contract.ConversationSeq(from)})
	}
	return out, rows.Err()
}

// PeerOf is the other user of a direct conversation as stored (0 while unknown or for a group).
func (s *Store) PeerOf(ctx context.Context, conv contract.ConversationID) (contract.UserID, error) {
	if s.closed.Load() {
		return 0, ErrClosed
	}
	var peer int64
	err := s.db.QueryRowContext(ctx, "SELECT peer_user FROM conversations WHERE conversation_id = ?",
		u128b(contract.U128(conv))).Scan(&peer)
	if err != nil && !errNoRow(err) {
		return 0, fmt.Errorf("store: read conversation: %w", err)
	}
	return contract.UserID(peer), nil
}
