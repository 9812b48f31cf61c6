package e2e

import (
	"bytes"
	"context"
	"fmt"
	"slices"

	"github.com/qim-dev/qim/contract"
	qimv1 "github.com/qim-dev/qim/proto/qim/v1"
	"github.com/qim-dev/qim/wire"
	"google.golang.org/protobuf/proto"
)

// Checks of what a group member's device receives, shared by the group scenarios.

// eventOf returns the event carrying message id mid (nil when absent).
func eventOf(evs []*qimv1.MailboxEvent, mid []byte) *qimv1.MailboxEvent {
	for _, ev := range evs {
		if bytes.Equal(ev.GetMessageId(), mid) {
			return ev
		}
	}
	return nil
}

// hasAll holds once every message id was seen.
func hasAll(mids ...[]byte) func([]*qimv1.MailboxEvent) bool {
	return func(evs []*qimv1.MailboxEvent) bool {
		for _, mid := range mids {
			if CountMessage(evs, mid) == 0 {
				return false
			}
		}
		return true
	}
}

// checkCopy checks one member's copy of a sent message: once, in the group conversation at the
// ACKed seq, from the sender, byte-identical, and carrying the cmid only on the sender's copy.
func checkCopy(who string, evs []*qimv1.MailboxEvent, ack *qimv1.SendAck, sender contract.UserID, body, cmid []byte) error {
	if n := CountMessage(evs, ack.GetMessageId()); n != 1 {
		return fmt.Errorf("%s: %d copies of the message, want 1", who, n)
	}
	ev := eventOf(evs, ack.GetMessageId())
	if !bytes.Equal(ev.GetConversationId(), ack.GetConversationId()) || ev.GetConversationSeq() != ack.GetConversationSeq() ||
		ev.GetSenderUserId() != uint64(sender) || !bytes.Equal(ev.GetBody(), body) ||
		ev.GetMessageType() != uint32(contract.MessageText) || !bytes.Equal(ev.GetClientMessageId(), cmid) {
		return fmt.Errorf("%s: event {%s cmid %x}, want conv %x seq %d sender %d body %q cmid %x", who, fmtMsg(ev),
			ev.GetClientMessageId(), ack.GetConversationId(),
			ack.GetConversationSeq(), sender, body, cmid)
	}
	return nil
}

// checkCreateSeen checks the group's CREATE CONTROL message is among evs with every initial
// member, ascending, and the creator as actor.
func checkCreateSeen(who string, evs []*qimv1.MailboxEvent, g *qimv1.GroupCreated, creator contract.UserID, members ...contract.UserID) error {
	want := userIDs(append([]contract.UserID{creator}, members...))
	slices.Sort(want)
	for _, ev := range evs {
		if !bytes.Equal(ev.GetConversationId(), g.GetConversationId()) {
			continue
		}
		ch, err := membershipOf(ev)
		if err != nil || ch == nil || contract.MembershipOp(ch.GetOp()) != contract.MembershipCreate {
			continue
		}
		if ch.GetActorUserId() != uint64(creator) || !slices.Equal(ch.GetUserIds(), want) ||
			ch.GetMembershipVersion() != g.GetMembershipVersion() || ch.GetMemberCount() != uint32(len(want)) {
			return fmt.Errorf("%s: CREATE control %v, want actor %d users %v version %d", who, ch, creator, want, g.GetMembershipVersion())
		}
		return nil
	}
	return fmt.Errorf("%s: the group's CREATE control message is not in the mailbox", who)
}

// wantChange is one membership CONTROL message a reader must see.
type wantChange struct {
	op      contract.MembershipOp
	seq     uint64 // 0: the scenario does not know it (CREATE)
	actor   contract.UserID
	sender  contract.UserID // the actor, or the owner for an administrator's change
	users   []contract.UserID
	version uint64
	count   uint32
}

// check compares a received message with the change, field by field.
func (w wantChange) check(m carried) error {
	ch, err := membershipOf(m)
	if err != nil {
		return err
	}
	if ch == nil {
		return fmt.Errorf("seq %d is message type %d, want the %s CONTROL message", m.GetConversationSeq(), m.GetMessageType(), w.op)
	}
	users := userIDs(w.users)
	slices.Sort(users)
	if contract.MembershipOp(ch.GetOp()) != w.op || (w.seq != 0 && m.GetConversationSeq() != w.seq) ||
		ch.GetActorUserId() != uint64(w.actor) || m.GetSenderUserId() != uint64(w.sender) ||
		!slices.Equal(ch.GetUserIds(), users) || ch.GetMembershipVersion() != w.version || ch.GetMemberCount() != w.count {
		return fmt.Errorf("CONTROL at seq %d from %d = %v, want %s at seq %d from %d actor %d users %v version %d count %d",
			m.GetConversationSeq(), m.GetSenderUserId(), ch, w.op, w.seq, w.sender, w.actor, users, w.version, w.count)
	}
	return nil
}

// checkText checks m is the text message of ack with body.
func checkText(m carried, ack interface {
	GetMessageId() []byte
	GetConversationSeq() uint64
}, body []byte) error {
	if !bytes.Equal(m.GetMessageId(), ack.GetMessageId()) || m.GetConversationSeq() != ack.GetConversationSeq() ||
		m.GetMessageType() != uint32(contract.MessageText) || !bytes.Equal(m.GetBody(), body) {
		return fmt.Errorf("seq %d: message %x type %d body %q, want message %x at seq %d with body %q", m.GetConversationSeq(),
			m.GetMessageId(), m.GetMessageType(), m.GetBody(), ack.GetMessageId(), ack.GetConversationSeq(), body)
	}
	return nil
}

// refusedWithoutContent checks a raw answer is ERROR NOT_MEMBER and that none of the secrets
// (bodies, ids, names the requester may not read) appear anywhere in its bytes.
func refusedWithoutContent(what string, m wire.Message, err error, secrets ...[]byte) error {
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	if m.Opcode != contract.OpError {
		return fmt.Errorf("%s by a non-member answered %s (%d bytes), want ERROR NOT_MEMBER", what, m.Opcode, len(m.Payload))
	}
	var ef qimv1.ErrorFrame
	if err := proto.Unmarshal(m.Payload, &ef); err != nil {
		return fmt.Errorf("%s: ERROR payload: %w", what, err)
	}
	if contract.ErrorCode(ef.GetCode()) != contract.ErrCodeNotMember {
		return fmt.Errorf("%s by a non-member: code %s (%q), want NOT_MEMBER", what, contract.ErrorCode(ef.GetCode()), ef.GetMessage())
	}
	for _, s := range secrets {
		if len(s) > 0 && bytes.Contains(m.Payload, s) {
			return fmt.Errorf("%s: the NOT_MEMBER answer carries %q", what, s)
		}
	}
	return nil
}

// fmtMsg prints a mailbox event or history record, ids in hex.
func fmtMsg(m carried) string {
	return fmt.Sprintf("conv %x seq %d id %x from %d type %d %q body %q", m.GetConversationId(), m.GetConversationSeq(),
		m.GetMessageId(), m.GetSenderUserId(), m.GetMessageType(), m.GetCustomType(), m.GetBody())
}

// expect checks one message a reader must see at its position in a conversation: a text
// (isText), the group's CREATE (isCreate) or a membership change (wantChange.check).
type expect func(carried) error

func isText(ack *qimv1.SendAck, body []byte) expect {
	return func(m carried) error { return checkText(m, ack, body) }
}

func isCreate(m carried) error {
	ch, err := membershipOf(m)
	if err != nil || ch == nil || contract.MembershipOp(ch.GetOp()) != contract.MembershipCreate {
		return fmt.Errorf("seq %d is not the group's CREATE: {%s} (%v)", m.GetConversationSeq(), fmtMsg(m), err)
	}
	return nil
}

// viewIs checks got (one conversation, ascending) holds exactly want.
func viewIs(what string, got []carried, want ...expect) error {
	if len(got) != len(want) {
		return fmt.Errorf("%s holds seqs %v, want %d messages", what, seqs(got), len(want))
	}
	for i, w := range want {
		if err := w(got[i]); err != nil {
			return fmt.Errorf("%s, message %d: %w", what, i, err)
		}
	}
	return nil
}

// readsExactly checks who's history of conv, paged NEWER and OLDER in pages of 2 (so pages
// cross interval bounds), and its mailbox events (when given) hold exactly want.
func readsExactly(ctx context.Context, who string, c *Client, conv []byte, mailbox []*qimv1.MailboxEvent, want ...expect) error {
	for _, dir := range []historyDirection{historyNewer, historyOlder} {
		hist, err := c.HistoryPaged(ctx, conv, dir, 2)
		if err != nil {
			return fmt.Errorf("%s's history (%s): %w", who, dir, err)
		}
		if err := viewIs(fmt.Sprintf("%s's history (%s, pages of 2)", who, dir), inConversation(hist, conv), want...); err != nil {
			return err
		}
	}
	if mailbox == nil {
		return nil
	}
	return viewIs(who+"'s mailbox", inConversation(mailbox, conv), want...)
}

func seqs(ms []carried) []uint64 {
	out := make([]uint64, len(ms))
	for i, m := range ms {
		out[i] = m.GetConversationSeq()
	}
	return out
}
