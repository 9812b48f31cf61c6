package loadgen

import (
	"slices"

	"google.golang.org/protobuf/proto"

	"github.com/qim-dev/qim/contract"
	qimv1 "github.com/qim-dev/qim/proto/qim/v1"
	"github.com/qim-dev/qim/wire"
)

// mangleFunc decides the fate of the fake gateway's n-th group mailbox entry (1-based, counted
// over every group message and member, own copies included) for member to of a message from
// sender: dropped (never in the mailbox, never pushed) or doubled (a second entry under a new
// message id: a double commit as one member sees it).
type mangleFunc func(n int64, to, sender contract.UserID) (drop, double bool)

// setMangle installs f before a run.
func (g *fakeGateway) setMangle(f mangleFunc) {
	g.mu.Lock()
	g.mangle = f
	g.mu.Unlock()
}

// createGroup serves CREATE_GROUP as the gateway does: the group id derived from (tenant,
// creator, request id), a CONTROL message at seq 1 in every member's mailbox, pushed to the
// live members (the creator included) BEFORE the GROUP_CREATED answer, as a real fanout may.
func (g *fakeGateway) createGroup(w *wire.Writer, user contract.UserID, m wire.Message) {
	var req qimv1.CreateGroup
	_ = proto.Unmarshal(m.Payload, &req)
	rid, _ := contract.U128FromBytes(req.GetClientRequestId())
	conv := contract.DeriveGroupID(contract.TenantID{}, user, rid)
	members := []contract.UserID{user}
	for _, u := range req.GetMemberUserIds() {
		if !slices.Contains(members, contract.UserID(u)) {
			members = append(members, contract.UserID(u))
		}
	}
	if len(members) > contract.GroupMaxMembers {
		reply(w, contract.OpError, m.RequestID, &qimv1.ErrorFrame{Code: uint32(contract.ErrCodeGroupFull),
			RequestOpcode: uint32(contract.OpCreateGroup)})
		return
	}
	body, _ := proto.Marshal(&qimv1.MembershipChange{Op: uint32(contract.MembershipCreate), ActorUserId: uint64(user),
		MembershipVersion: 1, MemberCount: uint32(len(members))})
	g.mu.Lock()
	g.groups[conv] = members
	pushes := g.storeGroupMessage(conv, user, members, contract.MessageControl, body, nil, false)
	g.mu.Unlock()
	for _, p := range pushes {
		reply(p.to, contract.OpPushEvents, 0, &qimv1.PushEvents{Events: []*qimv1.MailboxEvent{p.ev}})
	}
	cb := conv.Bytes()
	reply(w, contract.OpGroupCreated, m.RequestID, &qimv1.GroupCreated{ClientRequestId: req.GetClientRequestId(),
		GroupId: cb[:], ConversationId: cb[:], MembershipVersion: 1})
}

// groupSend commits a SEND to a group: every member's mailbox gets an entry (the sender's
// carries its client_message_id), every other live member a push. A sender outside the group
// is refused with NOT_MEMBER.
func (g *fakeGateway) groupSend(w *wire.Writer, user contract.UserID, id uint32, req *qimv1.SendRequest) {
	gid, _ := contract.U128FromBytes(req.GetGroupId())
	conv := contract.ConversationID(gid)
	g.mu.Lock()
	members := g.groups[conv]
	if !slices.Contains(members, user) {
		g.mu.Unlock()
		reply(w, contract.OpError, id, &qimv1.ErrorFrame{Code: uint32(contract.ErrCodeNotMember), RequestOpcode: uint32(contract.OpSend)})
		return
	}
	pushes := g.storeGroupMessage(conv, user, members, contract.MessageType(req.GetMessageType()), req.GetBody(),
		req.GetClientMessageId(), true)
	h := g.convs[conv][len(g.convs[conv])-1]
	g.mu.Unlock()
	if !g.hold.Load() {
		cb := conv.Bytes()
		reply(w, contract.OpSendAck, id, &qimv1.SendAck{ClientMessageId: req.GetClientMessageId(), MessageId: h.GetMessageId(),
			ConversationId: cb[:], ConversationSeq: h.GetConversationSeq()})
	}
	for _, p := range pushes {
		if p.ev.GetSenderUserId() != uint64(p.user) {
			reply(p.to, contract.OpPushEvents, 0, &qimv1.PushEvents{Events: []*qimv1.MailboxEvent{p.ev}})
		}
	}
}

type fakePush struct {
	to   *wire.Writer
	user contract.UserID
	ev   *qimv1.MailboxEvent
}

// storeGroupMessage appends one message to the group conversation and an entry to each member's
// mailbox (through mangle when the message is a load message), and returns the pushes to make.
// As the server's dispatch does, entries carry the body only when members × len(body) fits
// contract.InlineBodyBudgetBytes (absent, not empty, otherwise); history always has it.
// g.mu is held.
func (g *fakeGateway) storeGroupMessage(conv contract.ConversationID, sender contract.UserID, members []contract.UserID,
	typ contract.MessageType, body, cmid []byte, mangled bool) []fakePush {
	cb := conv.Bytes()
	newMid := func() []byte {
		g.nextMsg++
		b := contract.U128{Hi: 2, Lo: g.nextMsg}.Bytes()
		return b[:]
	}
	mid := newMid()
	seq := uint64(len(g.convs[conv]) + 1)
	g.convs[conv] = append(g.convs[conv], &qimv1.HistoryMessage{MessageId: mid, ConversationId: cb[:], ConversationSeq: seq,
		SenderUserId: uint64(sender), MessageType: uint32(typ), Body: body})
	inline := body
	if len(members)*len(body) > contract.InlineBodyBudgetBytes {
		inline = nil
	}
	var pushes []fakePush
	for _, to := range members {
		drop, double := false, false
		if mangled {
			g.entries++
			if g.mangle != nil {
				drop, double = g.mangle(g.entries, to, sender)
			}
		}
		if drop {
			continue
		}
		ev := &qimv1.MailboxEvent{MailboxSeq: uint64(len(g.mailbox[to]) + 1), EventType: 1, MessageId: mid, ConversationId: cb[:],
			ConversationSeq: seq, SenderUserId: uint64(sender), MessageType: uint32(typ), Body: inline}
		if to == sender {
			ev.ClientMessageId = cmid
		}
		g.mailbox[to] = append(g.mailbox[to], ev)
		if double {
			again := proto.Clone(ev).(*qimv1.MailboxEvent)
			again.MessageId, again.MailboxSeq = newMid(), ev.MailboxSeq+1
			g.mailbox[to] = append(g.mailbox[to], again)
		}
		if live := g.live[to]; live != nil {
			pushes = append(pushes, fakePush{to: live, user: to, ev: ev})
		}
	}
	return pushes
}
