package sdk

import (
	"fmt"

	"google.golang.org/protobuf/proto"

	"github.com/qim-dev/qim/contract"
	qimv1 "github.com/qim-dev/qim/proto/qim/v1"
	"github.com/qim-dev/qim/sdk/store"
)

// Conversions from wire messages to stored messages. Every id is validated here: a malformed
// frame is a protocol violation that drops the connection, never a message stored with a zero id.

func parseCmid(b []byte) (contract.ClientMessageID, error) {
	if len(b) == 0 {
		return contract.ClientMessageID{}, nil
	}
	return contract.ParseClientMessageID(b)
}

type wireMessage struct {
	messageID, conversationID, clientMessageID []byte
	seq, sender                                uint64
	msgType                                    uint32
	customType                                 string
	body                                       []byte // nil = absent
	sentAtMs                                   int64
	flags                                      uint32
}

func (w wireMessage) toStore(src store.Source) (store.Message, error) {
	id, err := contract.ParseMessageID(w.messageID)
	if err != nil {
		return store.Message{}, fmt.Errorf("%w: %v", ErrProtocol, err)
	}
	conv, err := contract.ParseConversationID(w.conversationID)
	if err != nil {
		return store.Message{}, fmt.Errorf("%w: %v", ErrProtocol, err)
	}
	seq, err := contract.NewConversationSeq(w.seq)
	if err != nil {
		return store.Message{}, fmt.Errorf("%w: %v", ErrProtocol, err)
	}
	cmid, err := parseCmid(w.clientMessageID)
	if err != nil {
		return store.Message{}, fmt.Errorf("%w: %v", ErrProtocol, err)
	}
	m := store.Message{ID: id, Conversation: conv, Seq: seq, Sender: contract.UserID(w.sender),
		Type: contract.MessageType(w.msgType), CustomType: w.customType, HasBody: w.body != nil, Body: w.body,
		ClientMessageID: cmid, SentAtMs: w.sentAtMs, Flags: w.flags, Source: src}
	m.Amend, err = amendOf(m)
	return m, err
}

// amendOf decodes an amendment CONTROL message (nil for any other message). One whose body
// the mailbox left out (a large group) is stored without being applied; history serves the
// target amended all the same.
func amendOf(m store.Message) (*store.Amend, error) {
	if m.Type != contract.MessageControl || m.CustomType != contract.AmendCustomType || !m.HasBody {
		return nil, nil
	}
	var a qimv1.MessageAmendment
	if err := proto.Unmarshal(m.Body, &a); err != nil {
		return nil, fmt.Errorf("%w: amendment %s: %v", ErrProtocol, m.ID, err)
	}
	target, err := contract.NewConversationSeq(a.GetTargetSeq())
	if err != nil || target == 0 || target >= m.Seq {
		return nil, fmt.Errorf("%w: amendment %s targets seq %d", ErrProtocol, m.ID, a.GetTargetSeq())
	}
	return &store.Amend{Target: target, Flags: contract.AmendAction(a.GetAction()).Flag(), Body: a.GetBody()}, nil
}

// eventMessages converts the MESSAGE events of a batch or push; events of types this build does
// not know are skipped (the cursor still moves past them, as qim.v1 asks).
func eventMessages(evs []*qimv1.MailboxEvent, src store.Source) ([]store.Message, error) {
	out := make([]store.Message, 0, len(evs))
	for _, ev := range evs {
		if contract.EventType(ev.GetEventType()) != contract.EventMessage {
			continue
		}
		m, err := wireMessage{messageID: ev.GetMessageId(), conversationID: ev.GetConversationId(),
			clientMessageID: ev.GetClientMessageId(), seq: ev.GetConversationSeq(), sender: ev.GetSenderUserId(),
			msgType: ev.GetMessageType(), customType: ev.GetCustomType(), body: ev.Body, sentAtMs: ev.GetSentAtMs(),
		}.toStore(src)
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, nil
}

func historyMessages(recs []*qimv1.HistoryMessage) ([]store.Message, error) {
	out := make([]store.Message, 0, len(recs))
	for _, r := range recs {
		m, err := wireMessage{messageID: r.GetMessageId(), conversationID: r.GetConversationId(),
			clientMessageID: r.GetClientMessageId(), seq: r.GetConversationSeq(), sender: r.GetSenderUserId(),
			msgType: r.GetMessageType(), customType: r.GetCustomType(), body: r.Body, sentAtMs: r.GetSentAtMs(),
			flags: r.GetFlags(),
		}.toStore(store.SourceHistory)
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, nil
}
