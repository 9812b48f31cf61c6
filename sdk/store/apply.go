package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/qim-dev/qim/contract"
)

// Apply stores a batch atomically: its messages (deduplicated by message_id), the resolution of
// own pending sends whose client_message_id appears in it, the conversations it touches, the
// REBUILD gap anchor and — for a MAILBOX_BATCH only — the cursor. Everything commits together or
// not at all; callers update in-memory state (dedup entries, in-flight sends) and emit events only
// after Apply returned without error, so a failed commit leaves nothing that would hide the
// batch when the server sends it again.
func (s *Store) Apply(ctx context.Context, b Batch) (Applied, error) {
	var out Applied
	err := s.tx(ctx, func(tx *sql.Tx) error {
		var err error
		out, err = s.applyTx(ctx, tx, b)
		return err
	})
	if err != nil {
		return Applied{}, err
	}
	return out, nil
}

// convTouch accumulates what one batch changes in one conversation.
type convTouch struct {
	id         contract.ConversationID
	peer       contract.UserID
	latestSeq  contract.ConversationSeq // any message, CONTROL included
	headSeq    contract.ConversationSeq // the newest message that may head the row (not CONTROL)
	headID     contract.MessageID
	activityMs int64
	syncedSeq  contract.ConversationSeq
	ownSeq     contract.ConversationSeq // sending is reading: own messages raise read_seq
	visible    bool                     // something the app sees changed (report it)
}

func (s *Store) applyTx(ctx context.Context, tx *sql.Tx, b Batch) (Applied, error) {
	var out Applied
	var order []*convTouch
	touched := map[contract.ConversationID]*convTouch{}
	now := time.Now().UnixMilli()
	for _, m := range b.Messages {
		if err := validMessage(m); err != nil {
			return out, err
		}
		m, added, err := s.insertMessage(ctx, tx, m, b.Source, now)
		if err != nil {
			return out, err
		}
		if m.Amend != nil && added {
			target, ok, err := s.applyAmend(ctx, tx, m)
			if err != nil {
				return out, err
			}
			if ok {
				out.Amended = append(out.Amended, target)
			}
		}
		resolved := false
		if m.Sender == s.id.User && !contract.U128(m.ClientMessageID).IsZero() {
			if resolved, err = deletePending(ctx, tx, m.ClientMessageID); err != nil {
				return out, err
			}
		}
		switch {
		case resolved:
			out.Resolved = append(out.Resolved, Resolved{ClientMessageID: m.ClientMessageID, Message: m})
		case added:
			out.Added = append(out.Added, m)
		default:
			out.Known++
		}
		t := touched[m.Conversation]
		if t == nil {
			t = &convTouch{id: m.Conversation}
			touched[m.Conversation] = t
			order = append(order, t)
		}
		s.touch(t, m, b.Source, added || resolved)
	}
	if b.Gap != nil {
		// Before the upserts, so the rows they return already carry the new gap.
		c, err := updateGap(ctx, tx, *b.Gap)
		if err != nil {
			return out, err
		}
		if t := touched[c.ID]; t == nil || !t.visible {
			out.Conversations = append(out.Conversations, c)
		}
	}
	for _, t := range order {
		c, err := s.upsertConversation(ctx, tx, t)
		if err != nil {
			return out, err
		}
		if t.visible {
			out.Conversations = append(out.Conversations, c)
		}
	}
	if b.Cursor != nil {
		if err := advanceCursor(ctx, tx, *b.Cursor, now); err != nil {
			return out, err
		}
	}
	cur, err := readCursor(ctx, tx)
	out.Cursor = cur
	return out, err
}

func validMessage(m Message) error {
	switch {
	case m.ID.IsZero():
		return fmt.Errorf("%w: zero message_id", ErrInvalid)
	case m.Conversation.Kind() == contract.KindInvalid || m.Conversation.Kind() > contract.KindRoom:
		return fmt.Errorf("%w: conversation %s has no valid kind", ErrInvalid, m.Conversation)
	case uint64(m.Seq)>>63 != 0:
		return fmt.Errorf("%w: conversation_seq has bit 63 set", ErrInvalid)
	}
	return nil
}

func (s *Store) touch(t *convTouch, m Message, src Source, visible bool) {
	if m.Sender != s.id.User && m.Conversation.Kind() == contract.KindDirect {
		t.peer = m.Sender
	}
	t.latestSeq = max(t.latestSeq, m.Seq)
	if m.Type != contract.MessageControl && m.Seq >= t.headSeq {
		t.headSeq, t.headID = m.Seq, m.ID
	}
	t.activityMs = max(t.activityMs, m.SentAtMs)
	if src == SourcePull || src == SourceHistory {
		t.syncedSeq = max(t.syncedSeq, m.Seq)
	}
	if m.Sender == s.id.User {
		t.ownSeq = max(t.ownSeq, m.Seq)
	}
	t.visible = t.visible || visible
}

// insertMessage stores m, amended by whatever amendment of it came first (amend.go), unless its
// message_id is already stored; it returns m as amended and reports whether it stored it. A stored copy takes what a later copy
// knows more (refreshCopy). Another message at the same (conversation, seq) is refused.
func (s *Store) insertMessage(ctx context.Context, tx *sql.Tx, m Message, src Source, now int64) (Message, bool, error) {
	id := u128b(contract.U128(m.ID))
	m, err := withAmendments(ctx, tx, m)
	if err != nil {
		return m, false, err
	}
	var hasBody bool
	var flags int64
	err = tx.QueryRowContext(ctx, "SELECT has_body, flags FROM messages WHERE message_id = ?", id).Scan(&hasBody, &flags)
	switch {
	case err == nil:
		return m, false, refreshCopy(ctx, tx, id, hasBody, uint32(flags), m)
	case !errNoRow(err):
		return m, false, fmt.Errorf("store: look up message: %w", err)
	}
	var other []byte
	err = tx.QueryRowContext(ctx, "SELECT message_id FROM messages WHERE conversation_id = ? AND conversation_seq = ?",
		u128b(contract.U128(m.Conversation)), i64(uint64(m.Seq))).Scan(&other)
	if err == nil {
		o, _ := contract.U128FromBytes(other)
		return m, false, &SeqConflictError{Conversation: m.Conversation, Seq: m.Seq, Stored: contract.MessageID(o), New: m.ID}
	}
	if !errNoRow(err) {
		return m, false, fmt.Errorf("store: look up seq: %w", err)
	}
	var cmid any
	if !contract.U128(m.ClientMessageID).IsZero() {
		cmid = u128b(contract.U128(m.ClientMessageID))
	}
	body := m.Body
	if !m.HasBody {
		body = nil
	}
	_, err = tx.ExecContext(ctx, `INSERT INTO messages VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		id, u128b(contract.U128(m.Conversation)), i64(uint64(m.Seq)), i64(uint64(m.Sender)), int64(m.Type),
		m.CustomType, m.HasBody, nonNil(body), cmid, m.SentAtMs, int64(m.Flags), int64(src), now)
	if err != nil {
		return m, false, fmt.Errorf("store: insert message: %w", err)
	}
	return m, true, nil
}

// refreshCopy updates a stored message from a later copy of it: a body the stored copy lacked
// (history after a non-inlined mailbox entry), flags the later copy carries (a history page the
// server served amended), never a body back once the message is recalled or deleted.
func refreshCopy(ctx context.Context, tx *sql.Tx, id []byte, hasBody bool, stored uint32, m Message) error {
	merged := stored | m.Flags
	body, keep := m.Body, m.HasBody
	switch {
	case contract.Gone(merged):
		body, keep = nil, false
	case m.Flags&contract.FlagEdited != 0 && m.HasBody: // the newest edit the copy knows
	case !hasBody && m.HasBody:
	default:
		if merged == stored {
			return nil
		}
		_, err := tx.ExecContext(ctx, "UPDATE messages SET flags = ? WHERE message_id = ?", int64(merged), id)
		return wrapErr("store: merge flags", err)
	}
	_, err := tx.ExecContext(ctx, "UPDATE messages SET flags = ?, has_body = ?, body = ? WHERE message_id = ?",
		int64(merged), keep, nonNil(body), id)
	return wrapErr("store: refresh message", err)
}

func wrapErr(what string, err error) error {
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}

func deletePending(ctx context.Context, tx *sql.Tx, cmid contract.ClientMessageID) (bool, error) {
	res, err := tx.ExecContext(ctx, "DELETE FROM pending WHERE client_message_id = ?", u128b(contract.U128(cmid)))
	if err != nil {
		return false, fmt.Errorf("store: resolve pending: %w", err)
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

func advanceCursor(ctx context.Context, tx *sql.Tx, next contract.MailboxSeq, now int64) error {
	if uint64(next)>>63 != 0 {
		return fmt.Errorf("%w: cursor has bit 63 set", ErrInvalid)
	}
	cur, err := readCursor(ctx, tx)
	if err != nil {
		return err
	}
	if next < cur.Seq {
		return &CursorRegressionError{Stored: cur.Seq, Offered: next}
	}
	if _, err := tx.ExecContext(ctx, "UPDATE cursor SET mailbox_seq = ?, updated_at_ms = ? WHERE id = 1",
		i64(uint64(next)), now); err != nil {
		return fmt.Errorf("store: advance cursor: %w", err)
	}
	return nil
}

func nonNil(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}
