package sdk

import (
	"errors"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/qim-dev/qim/contract"
	qimv1 "github.com/qim-dev/qim/proto/qim/v1"
	"github.com/qim-dev/qim/sdk/store"
)

func (h *harness) addGroupCreate(name string, members ...contract.UserID) store.GroupCreate {
	h.t.Helper()
	g, err := h.st.AddGroupCreate(ctxBG, store.NewGroupCreate{Name: name, Members: members, NowMs: h.now.UnixMilli()})
	if err != nil {
		h.t.Fatal(err)
	}
	return g
}

func (h *harness) addGroupSend(group contract.ConversationID, body string) store.Pending {
	h.t.Helper()
	p, err := h.st.AddPending(ctxBG, store.NewPending{Group: group, Type: contract.MessageText, Body: []byte(body),
		NowMs: h.now.UnixMilli()})
	if err != nil {
		h.t.Fatal(err)
	}
	return p
}

func createRequest(t *testing.T, f sentFrame) *qimv1.CreateGroup {
	t.Helper()
	var req qimv1.CreateGroup
	if err := proto.Unmarshal(f.payload, &req); err != nil {
		t.Fatal(err)
	}
	return &req
}

// answerCreate answers a CREATE_GROUP as the server does: the derived group, version 1.
func (h *harness) answerCreate(f sentFrame) {
	req := createRequest(h.t, f)
	crid, _ := contract.U128FromBytes(req.GetClientRequestId())
	g := contract.DeriveGroupID(contract.TenantID{}, self, crid).Bytes()
	h.frame(contract.OpGroupCreated, f.id, &qimv1.GroupCreated{ClientRequestId: req.GetClientRequestId(), GroupId: g[:],
		ConversationId: g[:], MembershipVersion: 1})
}

// A create recorded offline goes out after reconciliation with its durable id (again after a
// reconnect), and a send to the group waits for GROUP_CREATED: sent alongside, it could reach the
// writer before the group exists and fail NOT_MEMBER for good.
func TestGroupCreateBeforeItsSends(t *testing.T) {
	h := newHarness(t)
	g := h.addGroupCreate("team", peer, 12)
	h.addGroupSend(g.Group, "hello team")
	direct := h.addPending("hi peer")
	h.connect()
	h.answerPull(false)
	creates := h.sent(contract.OpCreateGroup)
	if len(creates) != 1 {
		t.Fatalf("%d CREATE_GROUP, want 1", len(creates))
	}
	req := createRequest(t, creates[0])
	if crid := g.ClientRequestID.Bytes(); string(req.GetClientRequestId()) != string(crid[:]) || req.GetName() != "team" ||
		len(req.GetMemberUserIds()) != 2 {
		t.Fatalf("CREATE_GROUP %+v, want the stored request", req)
	}
	if got := sendCmids(t, h.sent(contract.OpSend)); len(got) != 1 || got[0] != direct.ClientMessageID {
		t.Fatalf("sent %v before GROUP_CREATED, want only the direct send", got)
	}
	h.reconnect() // the answer is lost with the connection: the same request goes again
	h.answerPull(false)
	creates = h.sent(contract.OpCreateGroup)
	if len(creates) != 2 || string(createRequest(t, creates[1]).GetClientRequestId()) != string(req.GetClientRequestId()) {
		t.Fatalf("retry of the create: %d frames, want 2 with the same client_request_id", len(creates))
	}
	h.answerCreate(creates[1])
	sends := h.sent(contract.OpSend)
	var last qimv1.SendRequest
	if err := proto.Unmarshal(sends[len(sends)-1].payload, &last); err != nil {
		t.Fatal(err)
	}
	want := g.Group.Bytes()
	if string(last.GetGroupId()) != string(want[:]) || last.GetPeerUserId() != 0 || string(last.GetBody()) != "hello team" {
		t.Fatalf("group send after GROUP_CREATED: %+v, want target group %s", &last, g.Group)
	}
	if countEvents[GroupCreated](h.events) != 1 {
		t.Fatalf("GroupCreated events: %d", countEvents[GroupCreated](h.events))
	}
	if q, _ := h.st.QueuedGroupCreates(ctxBG, 10); len(q) != 0 {
		t.Fatalf("still queued after GROUP_CREATED: %+v", q)
	}
}

func TestGroupCreateRefusals(t *testing.T) {
	tests := []struct {
		name      string
		code      contract.ErrorCode
		wantFail  bool
		wantCause error
	}{
		{"group full fails for good", contract.ErrCodeGroupFull, true, ErrGroupFull},
		{"invalid argument fails for good", contract.ErrCodeInvalidArgument, true, ErrInvalid},
		{"unavailable is retried after the pause", contract.ErrCodeUnavailable, false, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			g := h.addGroupCreate("g", peer)
			h.addGroupSend(g.Group, "x")
			h.connect()
			h.answerPull(false)
			h.frame(contract.OpError, h.lastSent(contract.OpCreateGroup).id, &qimv1.ErrorFrame{Code: uint32(tc.code)})
			h.now = h.now.Add(time.Minute)
			h.e.onTick(h.now)
			creates, sends := len(h.sent(contract.OpCreateGroup)), len(h.sent(contract.OpSend))
			if !tc.wantFail {
				if creates != 2 || sends != 0 || countEvents[GroupCreateFailed](h.events) != 0 {
					t.Fatalf("creates %d sends %d, want the create retried and the send still held", creates, sends)
				}
				return
			}
			var failed GroupCreateFailed
			for _, ev := range h.events {
				if f, ok := ev.(GroupCreateFailed); ok {
					failed = f
				}
			}
			if failed.Group != g.Group || failed.Code != tc.code || !errors.Is(failed.Err, tc.wantCause) {
				t.Fatalf("GroupCreateFailed %+v, want code %s matching %v", failed, tc.code, tc.wantCause)
			}
			if creates != 1 || sends != 1 {
				t.Fatalf("creates %d sends %d: want no retry, and the held send released", creates, sends)
			}
		})
	}
}

// Membership CONTROL messages from the mailbox become MembershipChanged events after the
// MessagesAdded that carries them, in seq order, and never count as unread.
func TestMembershipEventsFromTheMailbox(t *testing.T) {
	h := newHarness(t)
	h.connect()
	group := contract.DeriveGroupID(contract.TenantID{}, peer, contract.U128{Lo: 3})
	control := func(seq uint64, op contract.MembershipOp, users ...uint64) *qimv1.MailboxEvent {
		ev := h.groupEvent(group, seq, peer, contract.MessageControl)
		ev.CustomType = contract.MembershipCustomType
		ev.Body, _ = proto.Marshal(&qimv1.MembershipChange{Op: uint32(op), ActorUserId: uint64(peer), UserIds: users,
			MembershipVersion: seq, MemberCount: 3, Name: "g"})
		return ev
	}
	text := h.groupEvent(group, 3, peer, contract.MessageText)
	h.answerPull(false, control(2, contract.MembershipAdd, 13), control(1, contract.MembershipCreate, uint64(self), uint64(peer)), text)
	var got []MembershipChanged
	addedAt, firstMembership := -1, -1
	for i, ev := range h.events {
		switch e := ev.(type) {
		case MessagesAdded:
			addedAt = i
		case MembershipChanged:
			got = append(got, e)
			if firstMembership < 0 {
				firstMembership = i
			}
		case ConversationsUpdated:
			if c := e.Conversations[0]; c.Unread != 1 || c.Group != group || c.LatestSeq != 3 {
				t.Fatalf("conversation %+v, want unread 1 (CONTROL never counts)", c)
			}
		}
	}
	if len(got) != 2 || got[0].Seq != 1 || got[0].Op != contract.MembershipCreate || got[1].Seq != 2 ||
		got[1].Op != contract.MembershipAdd || got[1].Users[0] != 13 || got[1].Actor != peer || got[1].Err != nil {
		t.Fatalf("membership events %+v, want CREATE then ADD 13", got)
	}
	if addedAt < 0 || firstMembership < addedAt {
		t.Fatalf("MembershipChanged at %d before MessagesAdded at %d", firstMembership, addedAt)
	}
}

// groupEvent builds a mailbox event of a group conversation.
func (h *harness) groupEvent(group contract.ConversationID, n uint64, sender contract.UserID, typ contract.MessageType) *qimv1.MailboxEvent {
	ev := h.event(n, sender, contract.ClientMessageID{})
	conv := group.Bytes()
	ev.ConversationId, ev.MessageType = conv[:], uint32(typ)
	mid, _ := contract.NewMessageID(1_800_000_000_000+n, 0, 1, 1)
	m := mid.Bytes()
	ev.MessageId = m[:]
	return ev
}

// App group requests: offline they fail at once, an answer or an ERROR reaches the caller, a
// lost connection answers ErrOffline, and a wrong answer opcode is a protocol violation.
func TestGroupRPCRouting(t *testing.T) {
	h := newHarness(t)
	cmd := func() *rpcCmd {
		return &rpcCmd{op: contract.OpLeaveGroup, want: contract.OpLeaveGroupAck, msg: &qimv1.LeaveGroup{},
			reply: make(chan rpcResult, 1)}
	}
	c := cmd()
	h.e.startRPC(c, h.now)
	if r := <-c.reply; !errors.Is(r.err, ErrOffline) {
		t.Fatalf("before connecting: %v, want ErrOffline", r.err)
	}
	h.connect()
	c = cmd()
	h.e.startRPC(c, h.now)
	h.frame(contract.OpLeaveGroupAck, h.lastSent(contract.OpLeaveGroup).id, &qimv1.LeaveGroupAck{LeftAtSeq: 9})
	if r := <-c.reply; r.err != nil || len(r.payload) == 0 {
		t.Fatalf("answer: %+v", r)
	}
	c = cmd()
	h.e.startRPC(c, h.now)
	h.frame(contract.OpError, h.lastSent(contract.OpLeaveGroup).id, &qimv1.ErrorFrame{Code: uint32(contract.ErrCodeNotMember)})
	var se *ServerError
	if r := <-c.reply; !errors.Is(r.err, ErrNotMember) || !errors.As(r.err, &se) || se.Op != contract.OpLeaveGroup {
		t.Fatalf("refusal: %v, want a *ServerError matching ErrNotMember", r.err)
	}
	c = cmd()
	h.e.startRPC(c, h.now)
	h.e.fail(errors.New("dropped"))
	h.e.detach()
	if r := <-c.reply; !errors.Is(r.err, ErrOffline) {
		t.Fatalf("connection lost: %v, want ErrOffline", r.err)
	}
	h.connect()
	c = cmd()
	h.e.startRPC(c, h.now)
	h.frame(contract.OpMembersBatch, h.lastSent(contract.OpLeaveGroup).id, &qimv1.MembersBatch{})
	if r := <-c.reply; !errors.Is(r.err, ErrProtocol) || h.e.end == nil {
		t.Fatalf("wrong answer: %v (connection end %v), want ErrProtocol and a dropped connection", r.err, h.e.end)
	}
}

// A group conversation from the session list is stored as GROUP with its group; a group_id that
// is not the conversation's is a protocol violation.
func TestSessionListGroupEntry(t *testing.T) {
	group := contract.DeriveGroupID(contract.TenantID{}, peer, contract.U128{Lo: 5})
	g := group.Bytes()
	en := &qimv1.SessionEntry{ConversationId: g[:], LatestConversationSeq: 4, ConversationKind: uint32(contract.KindGroup),
		Peer: &qimv1.SessionEntry_GroupId{GroupId: g[:]}}
	st, err := sessionState(en)
	if err != nil || st.Conversation != group || st.Peer != 0 {
		t.Fatalf("group entry: %+v %v", st, err)
	}
	other := contract.DeriveGroupID(contract.TenantID{}, peer, contract.U128{Lo: 6}).Bytes()
	en.Peer = &qimv1.SessionEntry_GroupId{GroupId: other[:]}
	if _, err := sessionState(en); err == nil {
		t.Fatal("a group_id of another group was accepted")
	}
}
