package store

import (
	"context"
	"fmt"

	"github.com/qim-dev/qim/contract"
)

// Direction pages through a conversation.
type Direction uint8

const (
	Older Direction = 1 // seqs below the anchor (anchor 0 = from the newest)
	Newer Direction = 2 // seqs above the anchor
)

const msgCols = `message_id, conversation_id, conversation_seq, sender, message_type, custom_type, has_body, body,
	client_message_id, sent_at_ms, flags, source`

func scanMessage(sc interface{ Scan(...any) error }) (Message, error) {
	var m Message
	var id, conv, cmid []byte
	var seq, sender, typ, flags, src int64
	if err := sc.Scan(&id, &conv, &seq, &sender, &typ, &m.CustomType, &m.HasBody, &m.Body, &cmid, &m.SentAtMs,
		&flags, &src); err != nil {
		return Message{}, err
	}
	u, err := contract.U128FromBytes(id)
	if err != nil {
		return Message{}, fmt.Errorf("%w: message id", ErrSchema)
	}
	c, err := contract.U128FromBytes(conv)
	if err != nil {
		return Message{}, fmt.Errorf("%w: conversation id", ErrSchema)
	}
	if len(cmid) == 16 {
		cm, _ := contract.U128FromBytes(cmid)
		m.ClientMessageID = contract.ClientMessageID(cm)
	}
	m.ID, m.Conversation, m.Seq = contract.MessageID(u), contract.ConversationID(c), contract.ConversationSeq(seq)
	m.Sender, m.Type, m.Flags, m.Source = contract.UserID(sender), contract.MessageType(uint32(typ)), uint32(flags), Source(src)
	return m, nil
}

// Messages pages through the locally stored messages of a conversation: Older returns the limit
// messages just below anchor (anchor 0: the newest), Newer those just above it, both in ascending
// seq order like HISTORY_BATCH. hasMore reports whether more local messages exist that way.
func (s *Store) Messages(ctx context.Context, conv contract.ConversationID, anchor contract.ConversationSeq,
	dir Direction, limit int) (msgs []Message, hasMore bool, err error) {
	if s.closed.Load() {
		return nil, false, ErrClosed
	}
	if limit < 1 {
		return nil, false, fmt.Errorf("%w: limit %d", ErrInvalid, limit)
	}
	id := u128b(contract.U128(conv))
	q := "SELECT " + msgCols + " FROM messages WHERE conversation_id = ? AND conversation_seq > ? ORDER BY conversation_seq ASC LIMIT ?"
	args := []any{id, i64(uint64(anchor)), limit + 1}
	switch dir {
	case Older:
		q = "SELECT " + msgCols + " FROM messages WHERE conversation_id = ? AND conversation_seq < ? ORDER BY conversation_seq DESC LIMIT ?"
		if anchor == 0 {
			args[1] = int64(1) << 62 // above every valid seq
		}
	case Newer:
	default:
		return nil, false, fmt.Errorf("%w: direction %d", ErrInvalid, dir)
	}
	rows, err := s.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, false, fmt.Errorf("store: read messages: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		m, err := scanMessage(rows)
		if err != nil {
			return nil, false, fmt.Errorf("store: scan message: %w", err)
		}
		msgs = append(msgs, m)
	}
	if err := rows.Err(); err != nil {
		return nil, false, fmt.Errorf("store: read messages: %w", err)
	}
	if len(msgs) > limit {
		msgs, hasMore = msgs[:limit], true
	}
	if dir == Older {
		for i, j := 0, len(msgs)-1; i < j; i, j = i+1, j-1 {
			msgs[i], msgs[j] = msgs[j], msgs[i]
		}
	}
	return msgs, hasMore, nil
}

// MessageByClientID returns this user's committed message with the given client_message_id.
func (s *Store) MessageByClientID(ctx context.Context, cmid contract.ClientMessageID) (Message, bool, error) {
	if s.closed.Load() {
		return Message{}, false, ErrClosed
	}
	m, err := scanMessage(s.db.QueryRowContext(ctx, "SELECT "+msgCols+" FROM messages WHERE client_message_id = ?",
		u128b(contract.U128(cmid))))
	switch {
	case errNoRow(err):
		return Message{}, false, nil
	case err != nil:
		return Message{}, false, fmt.Errorf("store: read message: %w", err)
	}
	return m, true, nil
}
