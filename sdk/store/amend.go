package store

// Amendments on the device (ADR-0037): a recall, edit or delete arrives as a CONTROL message of
// its conversation; the store applies it to its copy of the target, the same way the server's
// readers do. The merged state of each amended target is kept in the amendments table, so a
// target that arrives after its amendment (a history page fetched later, a mailbox entry
// replayed) is stored amended too, and the merge is the server's: flags OR-ed, the newest
// edit's body, no body once recalled or deleted. Unread is recounted from the messages table,
// whose recalled and deleted rows the definition already leaves out.

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/qim-dev/qim/contract"
)

// Amend is what an amendment CONTROL message does to its target (a decoded
// qim.v1.MessageAmendment).
type Amend struct {
	Target contract.ConversationSeq
	Flags  uint32 // the action's flag: contract.FlagRecalled, FlagDeleted or FlagEdited
	Body   []byte // EDIT: the new body
}

// amendmentsTable holds the merged amendment state of every amended target.
const amendmentsTable = `CREATE TABLE amendments (
		conversation_id BLOB NOT NULL,
		target_seq INTEGER NOT NULL,
		flags INTEGER NOT NULL,
		edit_seq INTEGER NOT NULL,
		body BLOB NOT NULL,
		PRIMARY KEY (conversation_id, target_seq)) WITHOUT ROWID`

// amendState is one row of the amendments table.
type amendState struct {
	flags   uint32
	editSeq contract.ConversationSeq
	body    []byte
}

func loadAmend(ctx context.Context, tx *sql.Tx, conv contract.ConversationID, seq contract.ConversationSeq) (amendState, bool, error) {
	var st amendState
	var flags, edit int64
	err := tx.QueryRowContext(ctx, "SELECT flags, edit_seq, body FROM amendments WHERE conversation_id = ? AND target_seq = ?",
		u128b(contract.U128(conv)), i64(uint64(seq))).Scan(&flags, &edit, &st.body)
	switch {
	case errNoRow(err):
		return amendState{}, false, nil
	case err != nil:
		return amendState{}, false, fmt.Errorf("store: read amendment: %w", err)
	}
	st.flags, st.editSeq = uint32(flags), contract.ConversationSeq(edit)
	return st, true, nil
}

// mergeAmend merges the amendment m carries into its target's row and returns the new state.
func mergeAmend(ctx context.Context, tx *sql.Tx, m Message) (amendState, error) {
	a := m.Amend
	st, _, err := loadAmend(ctx, tx, m.Conversation, a.Target)
	if err != nil {
		return amendState{}, err
	}
	st.flags |= a.Flags
	if a.Flags&contract.FlagEdited != 0 && m.Seq > st.editSeq {
		st.editSeq, st.body = m.Seq, a.Body
	}
	if contract.Gone(st.flags) {
		st.body = nil
	}
	_, err = tx.ExecContext(ctx, `INSERT INTO amendments VALUES (?, ?, ?, ?, ?)
		ON CONFLICT (conversation_id, target_seq) DO UPDATE SET flags = excluded.flags, edit_seq = excluded.edit_seq, body = excluded.body`,
		u128b(contract.U128(m.Conversation)), i64(uint64(a.Target)), int64(st.flags), i64(uint64(st.editSeq)), nonNil(st.body))
	if err != nil {
		return amendState{}, fmt.Errorf("store: merge amendment: %w", err)
	}
	return st, nil
}

// amended is m with st applied.
func (st amendState) applyTo(m Message) Message {
	m.Flags |= st.flags
	switch {
	case contract.Gone(m.Flags):
		m.HasBody, m.Body = false, nil
	case st.editSeq > 0:
		m.HasBody, m.Body = true, st.body
	}
	return m
}

// withAmendments is m as it must be stored: amended when an amendment of it came first.
func withAmendments(ctx context.Context, tx *sql.Tx, m Message) (Message, error) {
	st, ok, err := loadAmend(ctx, tx, m.Conversation, m.Seq)
	if err != nil || !ok {
		return m, err
	}
	return st.applyTo(m), nil
}

// applyAmend merges the amendment m carries and rewrites the stored target, if the device has
// it; it returns the target as now stored (ok false: not stored here).
func (s *Store) applyAmend(ctx context.Context, tx *sql.Tx, m Message) (Message, bool, error) {
	st, err := mergeAmend(ctx, tx, m)
	if err != nil {
		return Message{}, false, err
	}
	row := tx.QueryRowContext(ctx, "SELECT "+msgCols+" FROM messages WHERE conversation_id = ? AND conversation_seq = ?",
		u128b(contract.U128(m.Conversation)), i64(uint64(m.Amend.Target)))
	target, err := scanMessage(row)
	if errNoRow(err) {
		return Message{}, false, nil
	}
	if err != nil {
		return Message{}, false, err
	}
	target = st.applyTo(target)
	_, err = tx.ExecContext(ctx, "UPDATE messages SET flags = ?, has_body = ?, body = ? WHERE message_id = ?",
		int64(target.Flags), target.HasBody, nonNil(target.Body), u128b(contract.U128(target.ID)))
	if err != nil {
		return Message{}, false, fmt.Errorf("store: amend message: %w", err)
	}
	return target, true, nil
}
