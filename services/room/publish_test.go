package room

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/qim-dev/qim/contract"
	qimv1 "github.com/qim-dev/qim/proto/qim/v1"
	internalv1 "github.com/qim-dev/qim/proto/qiminternal/v1"
)

func TestPublishAck(t *testing.T) {
	s, clk := newTestService(t, nil)
	room := roomBytes(1)
	ack := mustPublish(t, s, publishOf(t, 42, room, 9, "hello"))
	conv := roomConv(t, room).Bytes()
	if !bytes.Equal(ack.GetClientMessageId(), cmidBytes(9)) || !bytes.Equal(ack.GetMessageId(), make([]byte, 16)) ||
		!bytes.Equal(ack.GetConversationId(), conv[:]) || ack.GetConversationSeq() != base()+1 ||
		ack.GetCommittedAtMs() != t0.UnixMilli() {
		t.Fatalf("ack %v: want cmid 9, zero message id, conversation %x, seq base+1 (%d), committed %d",
			ack, conv, base()+1, t0.UnixMilli())
	}
	if conv[0]>>4 != byte(contract.KindRoom) {
		t.Fatalf("conversation id %x does not carry the ROOM kind", conv)
	}
	clk.now = t0.Add(1500 * time.Millisecond)
	next := mustPublish(t, s, publishOf(t, 43, room, 10, "again"))
	if next.GetConversationSeq() != base()+2 || next.GetCommittedAtMs() != clk.now.UnixMilli() {
		t.Fatalf("second ack %v: want seq base+2 at the later clock (the room keeps its epoch)", next)
	}
	// The largest body the configuration allows is accepted.
	mustPublish(t, s, publishOf(t, 43, room, 11, strings.Repeat("x", s.cfg.MaxBody)))
}

// A retry still in the buffer answers the first ack and broadcasts nothing; other content under
// the same key is CONFLICT; once the event left the buffer, the key is free again.
func TestPublishIdempotency(t *testing.T) {
	s, clk := newTestService(t, nil)
	room := roomBytes(2)
	l := s.openLink()
	s.join(l, joinCall(1, room, 5, nil))
	first := mustPublish(t, s, publishOf(t, 42, room, 9, "hello"))
	clk.now = t0.Add(time.Second)
	retry := mustPublish(t, s, publishOf(t, 42, room, 9, "hello"))
	if !proto.Equal(retry, first) {
		t.Fatalf("retry answered %v, want the first ack %v", retry, first)
	}
	// Another sender may use the same client_message_id: the key is per sender.
	other := mustPublish(t, s, publishOf(t, 43, room, 9, "hello"))
	if other.GetConversationSeq() != first.GetConversationSeq()+1 {
		t.Fatalf("another sender's publish got seq %d, want %d", other.GetConversationSeq(), first.GetConversationSeq()+1)
	}
	for _, c := range []struct {
		name string
		mut  func(*qimv1.SendRequest)
	}{
		{"other body", func(r *qimv1.SendRequest) { r.Body = []byte("HELLO") }},
		{"other type", func(r *qimv1.SendRequest) { r.MessageType = uint32(contract.MessageCustom) }},
		{"other custom type", func(r *qimv1.SendRequest) { r.CustomType = "poll" }},
	} {
		in := &internalv1.RoomPublish{TenantId: tenantBytes(), SenderUserId: 42, SendRequest: sendReq(t, room, 9, "hello", c.mut)}
		out, err := grpcServer{s: s}.Publish(context.Background(), in)
		if err != nil || contract.ErrorCode(out.GetErrorCode()) != contract.ErrCodeConflict || out.GetAck() != nil {
			t.Fatalf("%s: outcome %v, %v; want CONFLICT", c.name, out, err)
		}
	}
	items := l.take(nil)
	if len(items) != 3 || items[0].answer == nil || items[1].ev.GetRoomSeq() != first.GetConversationSeq() ||
		items[2].ev.GetRoomSeq() != other.GetConversationSeq() {
		t.Fatalf("link got %d items, want the join answer and one event per distinct publish", len(items))
	}
	// The idempotency window is the buffer's life.
	clk.now = t0.Add(s.cfg.BufferAge + time.Second)
	late := mustPublish(t, s, publishOf(t, 42, room, 9, "other content, now a new event"))
	if late.GetConversationSeq() != other.GetConversationSeq()+1 {
		t.Fatalf("a publish after the first left the buffer got seq %d, want a new one (%d)",
			late.GetConversationSeq(), other.GetConversationSeq()+1)
	}
}

func TestPublishRefusals(t *testing.T) {
	s, _ := newTestService(t, nil)
	room := roomBytes(3)
	req := func(mut func(*qimv1.SendRequest)) []byte { return sendReq(t, room, 9, "hello", mut) }
	for _, c := range []struct {
		name string
		in   *internalv1.RoomPublish
		want contract.ErrorCode
	}{
		{"no sender", &internalv1.RoomPublish{TenantId: tenantBytes(), SendRequest: req(nil)}, contract.ErrCodeUnauthorized},
		{"malformed SendRequest", &internalv1.RoomPublish{TenantId: tenantBytes(), SenderUserId: 1, SendRequest: []byte{0xff, 0xff}},
			contract.ErrCodeInvalidArgument},
		{"group target", &internalv1.RoomPublish{TenantId: tenantBytes(), SenderUserId: 1, SendRequest: req(func(r *qimv1.SendRequest) {
			r.Target = &qimv1.SendRequest_GroupId{GroupId: room}
		})}, contract.ErrCodeInvalidArgument},
		{"peer target", &internalv1.RoomPublish{TenantId: tenantBytes(), SenderUserId: 1, SendRequest: req(func(r *qimv1.SendRequest) {
			r.Target = &qimv1.SendRequest_PeerUserId{PeerUserId: 2}
		})}, contract.ErrCodeInvalidArgument},
		{"no target", &internalv1.RoomPublish{TenantId: tenantBytes(), SenderUserId: 1, SendRequest: req(func(r *qimv1.SendRequest) {
			r.Target = nil
		})}, contract.ErrCodeInvalidArgument},
		{"short room id", &internalv1.RoomPublish{TenantId: tenantBytes(), SenderUserId: 1, SendRequest: req(func(r *qimv1.SendRequest) {
			r.Target = &qimv1.SendRequest_RoomId{RoomId: room[:15]}
		})}, contract.ErrCodeInvalidArgument},
		{"zero room id", &internalv1.RoomPublish{TenantId: tenantBytes(), SenderUserId: 1, SendRequest: req(func(r *qimv1.SendRequest) {
			r.Target = &qimv1.SendRequest_RoomId{RoomId: make([]byte, 16)}
		})}, contract.ErrCodeInvalidArgument},
		{"room id of kind bits only", &internalv1.RoomPublish{TenantId: tenantBytes(), SenderUserId: 1, SendRequest: req(func(r *qimv1.SendRequest) {
			r.Target = &qimv1.SendRequest_RoomId{RoomId: append([]byte{0x30}, make([]byte, 15)...)}
		})}, contract.ErrCodeInvalidArgument},
		{"short tenant", &internalv1.RoomPublish{TenantId: tenantBytes()[:3], SenderUserId: 1, SendRequest: req(nil)},
			contract.ErrCodeInvalidArgument},
		{"zero client_message_id", &internalv1.RoomPublish{TenantId: tenantBytes(), SenderUserId: 1, SendRequest: req(func(r *qimv1.SendRequest) {
			r.ClientMessageId = make([]byte, 16)
		})}, contract.ErrCodeInvalidArgument},
		{"short client_message_id", &internalv1.RoomPublish{TenantId: tenantBytes(), SenderUserId: 1, SendRequest: req(func(r *qimv1.SendRequest) {
			r.ClientMessageId = cmidBytes(9)[:15]
		})}, contract.ErrCodeInvalidArgument},
		{"CONTROL", &internalv1.RoomPublish{TenantId: tenantBytes(), SenderUserId: 1, SendRequest: req(func(r *qimv1.SendRequest) {
			r.MessageType = uint32(contract.MessageControl)
		})}, contract.ErrCodeInvalidArgument},
		{"SYSTEM", &internalv1.RoomPublish{TenantId: tenantBytes(), SenderUserId: 1, SendRequest: req(func(r *qimv1.SendRequest) {
			r.MessageType = uint32(contract.MessageSystem)
		})}, contract.ErrCodeInvalidArgument},
		{"custom_type too long", &internalv1.RoomPublish{TenantId: tenantBytes(), SenderUserId: 1, SendRequest: req(func(r *qimv1.SendRequest) {
			r.CustomType = strings.Repeat("c", contract.CustomTypeMaxBytes+1)
		})}, contract.ErrCodePayloadTooLarge},
		{"body too large", &internalv1.RoomPublish{TenantId: tenantBytes(), SenderUserId: 1, SendRequest: req(func(r *qimv1.SendRequest) {
			r.Body = make([]byte, s.cfg.MaxBody+1)
		})}, contract.ErrCodePayloadTooLarge},
	} {
		out, err := grpcServer{s: s}.Publish(context.Background(), c.in)
		if err != nil {
			t.Fatalf("%s: transport error %v; a refusal is an outcome", c.name, err)
		}
		if got := contract.ErrorCode(out.GetErrorCode()); got != c.want || out.GetErrorMessage() == "" || out.GetAck() != nil {
			t.Errorf("%s: outcome %v (%s), want %s with a message", c.name, out, got, c.want)
		}
	}
	if n := s.rooms.len(); n != 0 {
		t.Fatalf("refused publishes instantiated %d rooms", n)
	}
	// Every server-only type is refused, whatever the contract adds.
	for _, mt := range contract.ServerOnlyMessageTypes() {
		in := &internalv1.RoomPublish{TenantId: tenantBytes(), SenderUserId: 1, SendRequest: req(func(r *qimv1.SendRequest) {
			r.MessageType = uint32(mt)
		})}
		if _, _, err := s.publish(context.Background(), in); err == nil {
			t.Fatalf("message_type %s accepted", mt)
		}
	}
}

// Idle rooms are dropped, and a room re-created afterwards starts a larger epoch.
func TestSweepDropsIdleRooms(t *testing.T) {
	s, clk := newTestService(t, func(c *Config) { c.BufferAge = time.Second })
	quiet, joined := roomBytes(4), roomBytes(5)
	old := mustPublish(t, s, publishOf(t, 1, quiet, 1, "x"))
	l := s.openLink()
	s.join(l, joinCall(1, joined, 7, nil))
	clk.now = t0.Add(time.Second)
	if n := s.rooms.sweep(clk.now); n != 0 {
		t.Fatalf("swept %d rooms at exactly the buffer age; the newest event is not older yet", n)
	}
	clk.now = t0.Add(time.Second + time.Nanosecond)
	if n := s.rooms.sweep(clk.now); n != 1 || s.rooms.len() != 1 {
		t.Fatalf("swept %d rooms, %d left; want the quiet one dropped and the joined one kept", n, s.rooms.len())
	}
	again := mustPublish(t, s, publishOf(t, 1, quiet, 1, "x"))
	if again.GetConversationSeq() <= old.GetConversationSeq() ||
		again.GetConversationSeq() != contract.RoomSeqBase(clk.now.Unix())+1 {
		t.Fatalf("re-created room issued %d after %d; want the first of a larger epoch", again.GetConversationSeq(), old.GetConversationSeq())
	}
	s.leave(l, leaveCall(joined, 7))
	clk.now = clk.now.Add(2 * time.Second)
	if n := s.rooms.sweep(clk.now); n != 2 || s.rooms.len() != 0 {
		t.Fatalf("swept %d rooms, %d left; want both idle rooms dropped", n, s.rooms.len())
	}
}
