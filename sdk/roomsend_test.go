package sdk

import (
	"context"
	"errors"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/qim-dev/qim/contract"
	qimv1 "github.com/qim-dev/qim/proto/qim/v1"
)

// roomSend hands the engine a SendRoom call.
func (h *harness) roomSend(ctx context.Context, room contract.U128, body string) *roomCmd {
	h.t.Helper()
	key, err := roomKey(room)
	if err != nil {
		h.t.Fatal(err)
	}
	s := newRoomSend(ctx, room, key, []byte(body), SendOptions{Type: contract.MessageText}, h.now)
	cmd := &roomCmd{op: roomSendOp, room: room, key: key, send: s, reply: make(chan roomResult, 1)}
	s.reply = cmd.reply
	h.e.startRoom(cmd, h.now)
	return cmd
}

func sendReq(t *testing.T, f sentFrame) *qimv1.SendRequest {
	t.Helper()
	var req qimv1.SendRequest
	if err := proto.Unmarshal(f.payload, &req); err != nil {
		t.Fatal(err)
	}
	return &req
}

// roomAck answers a room SEND as the RoomWriter does: room_seq in conversation_seq, a zero
// message_id, the room's conversation.
func (h *harness) roomAck(f sentFrame, roomSeq uint64) {
	h.t.Helper()
	req := sendReq(h.t, f)
	u, _ := contract.U128FromBytes(req.GetRoomId())
	conv, _ := contract.RoomConversationID(u)
	c := conv.Bytes()
	h.frame(contract.OpSendAck, f.id, &qimv1.SendAck{ClientMessageId: req.GetClientMessageId(), MessageId: make([]byte, 16),
		ConversationId: c[:], ConversationSeq: roomSeq, CommittedAtMs: 1234})
}

// A room send goes out at once (the mailbox is still being reconciled), is sent again with the
// same client_message_id after the connection was lost, and its ack carries the room_seq.
func TestRoomSendAckAndRetryAfterLostConnection(t *testing.T) {
	h := newHarness(t)
	h.connect()
	cmd := h.roomSend(ctxBG, roomB, "hello room")
	first := h.sent(contract.OpSend)
	if len(first) != 1 {
		t.Fatalf("%d SEND frames, want the room send at once", len(first))
	}
	req := sendReq(t, first[0])
	if string(req.GetRoomId()) != string(roomIDBytes(roomB)) || req.GetPeerUserId() != 0 || string(req.GetBody()) != "hello room" {
		t.Fatalf("SEND %+v, want the room target", req)
	}
	h.reconnect()
	sends := h.sent(contract.OpSend)
	if len(sends) != 2 {
		t.Fatalf("%d SEND frames after the reconnect, want the retry", len(sends))
	}
	if retry := sendReq(t, sends[1]); string(retry.GetClientMessageId()) != string(req.GetClientMessageId()) ||
		string(retry.GetBody()) != "hello room" {
		t.Fatal("the retry changed the client_message_id or the content")
	}
	unanswered(t, cmd)
	h.roomAck(sends[1], 4242)
	r := answer(t, cmd)
	cmid, _ := contract.ParseClientMessageID(req.GetClientMessageId())
	if r.err != nil || r.ack.RoomSeq != 4242 || r.ack.ClientMessageID != cmid || r.ack.Room != roomB || r.ack.SentAtMs != 1234 {
		t.Fatalf("SendRoom answered %+v, want room_seq 4242 and the request's id", r)
	}
	if n := countEvents[Committed](h.events) + countEvents[Failed](h.events); n != 0 {
		t.Fatalf("%d Committed/Failed events for a room send", n)
	}
}

// A retryable refusal is retried after the pause with the same id; a definite one answers the
// call; a call whose caller gave up is not sent again; an ack naming another conversation is a
// protocol violation.
func TestRoomSendRefusals(t *testing.T) {
	h := newHarness(t)
	h.connect()
	cmd := h.roomSend(ctxBG, roomA, "x")
	h.frame(contract.OpError, h.lastSent(contract.OpSend).id, &qimv1.ErrorFrame{Code: uint32(contract.ErrCodeUnavailable)})
	h.e.onTick(h.now)
	if n := len(h.sent(contract.OpSend)); n != 1 {
		t.Fatalf("%d SEND frames right after UNAVAILABLE, want no retry before the pause", n)
	}
	h.now = h.e.nextDeadline(h.now)
	h.e.onTick(h.now)
	sends := h.sent(contract.OpSend)
	if len(sends) != 2 || string(sendReq(t, sends[1]).GetClientMessageId()) != string(sendReq(t, sends[0]).GetClientMessageId()) {
		t.Fatalf("%d SEND frames after the pause, want the retry with the same id", len(sends))
	}
	h.frame(contract.OpError, sends[1].id, &qimv1.ErrorFrame{Code: uint32(contract.ErrCodePayloadTooLarge)})
	var se *ServerError
	if r := answer(t, cmd); !errors.As(r.err, &se) || se.Code != contract.ErrCodePayloadTooLarge {
		t.Fatalf("definite refusal: %v", r.err)
	}
	if len(h.e.rooms.sends) != 0 {
		t.Fatal("the refused send is still queued")
	}
	cmd = h.roomSend(ctxBG, roomA, "slow mode")
	h.frame(contract.OpError, h.lastSent(contract.OpSend).id, &qimv1.ErrorFrame{Code: uint32(contract.ErrCodeRateLimited),
		RetryAfterMs: 30000})
	if r := answer(t, cmd); !errors.As(r.err, &se) || se.Code != contract.ErrCodeRateLimited || se.RetryAfter != 30*time.Second {
		t.Fatalf("slow mode: %v, want RATE_LIMITED with its retry-after returned, not waited out", r.err)
	}

	ctx, cancel := context.WithCancel(ctxBG)
	h.roomSend(ctx, roomA, "given up")
	h.e.fail(errDisk)
	h.e.detach()
	cancel()
	h.connect()
	if n := len(h.sent(contract.OpSend)); n != 4 {
		t.Fatalf("%d SEND frames, want the abandoned send not sent again", n)
	}

	cmd = h.roomSend(ctxBG, roomA, "y")
	f := h.lastSent(contract.OpSend)
	other := contract.DirectConversationID(contract.TenantID{}, self, peer).Bytes()
	h.frame(contract.OpSendAck, f.id, &qimv1.SendAck{ClientMessageId: sendReq(t, f).GetClientMessageId(),
		MessageId: make([]byte, 16), ConversationId: other[:], ConversationSeq: 9})
	if r := answer(t, cmd); !errors.Is(r.err, ErrProtocol) || h.e.end == nil {
		t.Fatalf("ack for another conversation: %v (end %v), want ErrProtocol and a dropped connection", r.err, h.e.end)
	}
}

// Room sends and pending sends share MaxInflightSends: the gateway holds a permit for each.
func TestRoomSendsShareTheInflightCap(t *testing.T) {
	h := newHarness(t)
	h.e.cfg.MaxInflightSends = 2
	h.addPending("durable")
	h.connect()
	h.roomSend(ctxBG, roomA, "r1")
	h.roomSend(ctxBG, roomA, "r2")
	h.roomSend(ctxBG, roomA, "r3")
	h.answerPull(false)
	if n := len(h.sent(contract.OpSend)); n != 2 {
		t.Fatalf("%d SEND frames in flight, want the cap of 2", n)
	}
	h.roomAck(h.sent(contract.OpSend)[0], 1)
	if n := len(h.sent(contract.OpSend)); n != 3 || sendReq(t, h.sent(contract.OpSend)[2]).GetRoomId() == nil {
		t.Fatalf("%d SEND frames after one ack, want the third room send next", n)
	}
}

// Room traffic never touches the store: the cursor, the conversations, the pending table and the
// local messages are what the mailbox made them, and no room frame causes a pull or a MARK_READ.
func TestRoomTrafficNeverTouchesTheStore(t *testing.T) {
	h := newHarness(t)
	h.connect()
	h.answerPull(false, h.event(1, peer, contract.ClientMessageID{}))
	cursor, pulls := h.storedCursor(), len(h.sent(contract.OpPullMailbox))
	before, err := h.st.Conversations(ctxBG)
	if err != nil || len(before) != 1 {
		t.Fatalf("conversations %+v %v, want the direct one", before, err)
	}
	mark := len(h.events)

	h.roomCall(roomJoinOp, roomA, RoomJoinOptions{Replay: true})
	h.answerJoin(roomA, 5, false)
	h.roomEvents(roomA, 3, 4, 5)
	send := h.roomSend(ctxBG, roomA, "to the room")
	h.roomAck(h.lastSent(contract.OpSend), 6)
	h.roomEvents(roomA, 6, 9)
	h.roomLeft(roomA, contract.RoomLeftSlowConsumer, 0)
	h.answerJoin(roomA, 9, false)
	h.roomCall(roomLeaveOp, roomA, RoomJoinOptions{})
	h.frame(contract.OpRoomLeft, h.lastSent(contract.OpLeaveRoom).id, &qimv1.RoomLeft{RoomId: roomIDBytes(roomA)})
	if r := answer(t, send); r.err != nil {
		t.Fatal(r.err)
	}

	if c := h.storedCursor(); c != cursor {
		t.Fatalf("cursor %d after room traffic, was %d", c, cursor)
	}
	after, _ := h.st.Conversations(ctxBG)
	if len(after) != 1 || after[0].ID != before[0].ID || after[0].Unread != before[0].Unread {
		t.Fatalf("conversations %+v after room traffic, want only %+v", after, before)
	}
	if p, _ := h.st.PendingAll(ctxBG); len(p) != 0 {
		t.Fatalf("pending rows %+v after a room send", p)
	}
	conv, _ := contract.RoomConversationID(roomA)
	if msgs, _, _ := h.st.Messages(ctxBG, conv, 0, Older, 100); len(msgs) != 0 {
		t.Fatalf("%d room messages stored", len(msgs))
	}
	if n := len(h.sent(contract.OpPullMailbox)); n != pulls || len(h.sent(contract.OpMarkRead)) != 0 {
		t.Fatalf("room frames caused %d pulls and %d MARK_READs", n-pulls, len(h.sent(contract.OpMarkRead)))
	}
	for _, ev := range h.events[mark:] {
		switch ev.(type) {
		case MessagesAdded, ConversationsUpdated, Committed, Failed:
			t.Fatalf("room traffic emitted %T", ev)
		}
	}
	if got := delivered(h.events); !seqsEqual(got, 3, 4, 5, 6, 9) {
		t.Fatalf("delivered %v", got)
	}
}
