package store

import (
	"context"
	"database/sql"
	"encoding/binary"
	"fmt"

	"github.com/qim-dev/qim/contract"
)

// AddPending records a send as local_pending and returns it with its client_message_id. One
// transaction claims the ordinal (reserving a new range when needed), inserts the pending row and
// creates or refreshes the conversation, so after a crash either the send exists with an id that
// was never used before, or nothing happened. It works the same online and offline: the SDK's
// connection goroutine sends whatever is pending once it has reconciled with the mailbox.
func (s *Store) AddPending(ctx context.Context, np NewPending) (Pending, error) {
	if np.NowMs <= 0 { // a zero creation time would expire the send at once (ClientPendingMaxAge)
		return Pending{}, fmt.Errorf("%w: pending send without a creation time", ErrInvalid)
	}
	conv, err := s.pendingTarget(np)
	if err != nil {
		return Pending{}, err
	}
	s.ord.mu.Lock()
	defer s.ord.mu.Unlock()
	var p Pending
	var end uint64
	err = s.tx(ctx, func(tx *sql.Tx) error {
		ord, rangeEnd, err := s.claimOrdinal(ctx, tx)
		if err != nil {
			return err
		}
		end = rangeEnd
		p = Pending{ClientMessageID: s.ClientMessageID(ord), Ordinal: ord, Conversation: conv, Peer: np.Peer,
			Type: np.Type, CustomType: np.CustomType, Body: append([]byte{}, np.Body...),
			Mentions: append([]contract.UserID(nil), np.Mentions...), CreatedAtMs: np.NowMs}
		cmid, cid := u128b(contract.U128(p.ClientMessageID)), u128b(contract.U128(conv))
		if _, err := tx.ExecContext(ctx, `INSERT INTO pending VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 0, 0, '')`,
			cmid, i64(ord), cid, i64(uint64(np.Peer)), int64(np.Type), np.CustomType, p.Body,
			encodeUsers(np.Mentions), np.NowMs); err != nil {
			return fmt.Errorf("store: insert pending: %w", err)
		}
		return touchForSend(ctx, tx, conv, np.Peer, np.NowMs)
	})
	if err != nil {
		return Pending{}, err
	}
	s.ord.next, s.ord.end = p.Ordinal+1, end
	return p, nil
}

// pendingTarget is the conversation of a new send: the direct one with the peer, or the group's.
func (s *Store) pendingTarget(np NewPending) (contract.ConversationID, error) {
	switch {
	case np.Peer != 0 && !contract.U128(np.Group).IsZero():
		return contract.ConversationID{}, fmt.Errorf("%w: a send has a peer or a group, not both", ErrInvalid)
	case np.Peer != 0:
		return contract.DirectConversationID(s.id.Tenant, s.id.User, np.Peer), nil
	case np.Group.Kind() != contract.KindGroup:
		return contract.ConversationID{}, fmt.Errorf("%w: a send needs a peer user or a GROUP conversation", ErrInvalid)
	}
	conv, err := contract.GroupConversationID(contract.U128(np.Group))
	if err != nil {
		return contract.ConversationID{}, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	return conv, nil
}

const pendingCols = `client_message_id, ordinal, conversation_id, peer_user, message_type, custom_type, body,
	mentions, created_at_ms, state, error_code, error_text`

func scanPending(sc interface{ Scan(...any) error }) (Pending, error) {
	var p Pending
	var cmid, conv, mentions []byte
	var ord, peer, typ, state, code int64
	if err := sc.Scan(&cmid, &ord, &conv, &peer, &typ, &p.CustomType, &p.Body, &mentions, &p.CreatedAtMs,
		&state, &code, &p.ErrorText); err != nil {
		return Pending{}, err
	}
	c, err := contract.U128FromBytes(cmid)
	if err != nil {
		return Pending{}, fmt.Errorf("%w: pending client_message_id", ErrSchema)
	}
	cv, err := contract.U128FromBytes(conv)
	if err != nil {
		return Pending{}, fmt.Errorf("%w: pending conversation_id", ErrSchema)
	}
	p.ClientMessageID, p.Conversation = contract.ClientMessageID(c), contract.ConversationID(cv)
	p.Ordinal, p.Peer, p.Type = uint64(ord), contract.UserID(peer), contract.MessageType(uint32(typ))
	p.State, p.ErrorCode, p.Mentions = PendingState(state), contract.ErrorCode(uint32(code)), decodeUsers(mentions)
	return p, nil
}

// PendingAll lists every local send that is not a committed message, queued and failed, in
// the order they were made.
func (s *Store) PendingAll(ctx context.Context) ([]Pending, error) {
	return s.queryPending(ctx, `SELECT `+pendingCols+` FROM pending ORDER BY ordinal`)
}

// QueuedAfter lists queued sends with an ordinal above after (-1 for all), oldest first, at most
// limit. The connection goroutine uses it to send what Send recorded since its last look.
func (s *Store) QueuedAfter(ctx context.Context, after int64, limit int) ([]Pending, error) {
	return s.queryPending(ctx, `SELECT `+pendingCols+` FROM pending WHERE state = 0 AND ordinal > ?
		ORDER BY ordinal LIMIT ?`, after, limit)
}

func (s *Store) queryPending(ctx context.Context, q string, args ...any) ([]Pending, error) {
	if s.closed.Load() {
		return nil, ErrClosed
	}
	rows, err := s.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("store: list pending: %w", err)
	}
	defer rows.Close()
	var out []Pending
	for rows.Next() {
		p, err := scanPending(rows)
		if err != nil {
			return nil, fmt.Errorf("store: scan pending: %w", err)
		}
		out = append(out, p)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: list pending: %w", err)
	}
	return out, nil
}

// PendingByID returns one local send; false when it is not pending (never was, or committed).
func (s *Store) PendingByID(ctx context.Context, cmid contract.ClientMessageID) (Pending, bool, error) {
	if s.closed.Load() {
		return Pending{}, false, ErrClosed
	}
	row := s.db.QueryRowContext(ctx, `SELECT `+pendingCols+` FROM pending WHERE client_message_id = ?`,
		u128b(contract.U128(cmid)))
	p, err := scanPending(row)
	switch {
	case errNoRow(err):
		return Pending{}, false, nil
	case err != nil:
		return Pending{}, false, fmt.Errorf("store: read pending: %w", err)
	}
	return p, true, nil
}

// FailPending marks a queued send failed for good (a definite server rejection, or too old). It
// reports false when the send is no longer queued: a commit that raced the rejection wins.
func (s *Store) FailPending(ctx context.Context, cmid contract.ClientMessageID, code contract.ErrorCode, text string) (bool, error) {
	var n int64
	err := s.tx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE pending SET state = 1, error_code = ?, error_text = ?
			WHERE client_message_id = ? AND state = 0`, int64(code), text, u128b(contract.U128(cmid)))
		if err != nil {
			return fmt.Errorf("store: fail pending: %w", err)
		}
		n, err = res.RowsAffected()
		return err
	})
	return n == 1, err
}

// ResolveAck turns the pending send a SEND_ACK names into a committed message, in one
// transaction with its conversation. It reports false when nothing was pending under that id (a
// duplicate ACK, or the mailbox copy resolved it first).
func (s *Store) ResolveAck(ctx context.Context, ack Ack) (Applied, bool, error) {
	var out Applied
	found := false
	err := s.tx(ctx, func(tx *sql.Tx) error {
		row := tx.QueryRowContext(ctx, `SELECT `+pendingCols+` FROM pending WHERE client_message_id = ?`,
			u128b(contract.U128(ack.ClientMessageID)))
		p, err := scanPending(row)
		if errNoRow(err) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("store: read pending: %w", err)
		}
		found = true
		m := Message{ID: ack.MessageID, Conversation: ack.Conversation, Seq: ack.Seq, Sender: s.id.User,
			Type: p.Type, CustomType: p.CustomType, HasBody: true, Body: p.Body, ClientMessageID: ack.ClientMessageID,
			SentAtMs: ack.CommittedAtMs, Source: SourceAck, Amend: ack.Amend}
		out, err = s.applyTx(ctx, tx, Batch{Source: SourceAck, Messages: []Message{m}})
		return err
	})
	if err != nil {
		return Applied{}, false, err
	}
	return out, found, nil
}

func encodeUsers(ms []contract.UserID) []byte {
	b := make([]byte, 0, 8*len(ms))
	for _, m := range ms {
		b = binary.BigEndian.AppendUint64(b, uint64(m))
	}
	return b
}

func decodeUsers(b []byte) []contract.UserID {
	var out []contract.UserID
	for len(b) >= 8 {
		out = append(out, contract.UserID(binary.BigEndian.Uint64(b)))
		b = b[8:]
	}
	return out
}

// u128b is the 16-byte big-endian storage form.
func u128b(u contract.U128) []byte {
	b := u.Bytes()
	return b[:]
}
