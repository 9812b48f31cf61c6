package writer

import (
	"context"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/qim-dev/qim/contract"
	qimv1 "github.com/qim-dev/qim/proto/qim/v1"
	internalv1 "github.com/qim-dev/qim/proto/qiminternal/v1"
)

// retrySend is one SEND as the writer receives it: the authenticated sender and the request,
// each field separately variable.
type retrySend struct {
	tenant     contract.TenantID
	sender     contract.UserID
	device     string
	cmid       []byte
	peer       contract.UserID
	msgType    uint32
	customType string
	mentions   []uint64
	body       []byte
	clientTime int64
	unknown    bool // append a field the server does not know (number 999)
}

func (s retrySend) outcome(t *testing.T, w *testWriter) *internalv1.SendOutcome {
	t.Helper()
	req, err := proto.Marshal(&qimv1.SendRequest{ClientMessageId: s.cmid, Target: &qimv1.SendRequest_PeerUserId{PeerUserId: uint64(s.peer)},
		MessageType: s.msgType, CustomType: s.customType, Mentions: s.mentions, Body: s.body, ClientTimeMs: s.clientTime})
	if err != nil {
		t.Fatal(err)
	}
	if s.unknown {
		req = protowire.AppendVarint(protowire.AppendTag(req, 999, protowire.VarintType), 7)
	}
	tenant := s.tenant.Bytes()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	out, err := w.client.SendMessage(ctx, &internalv1.AuthenticatedSend{TenantId: tenant[:], SenderUserId: uint64(s.sender),
		SenderDeviceId: s.device, SendRequest: req})
	if err != nil {
		t.Fatalf("SendMessage rpc: %v", err)
	}
	return out
}

// TestIdempotencyFieldByField retries one committed SEND with each field varied in turn and
// checks the answer docs/protocol.md §7.4 documents: the idempotency key is (tenant, sender,
// client_message_id); the same content (device, target, message_type, custom_type, mentions as
// a set, body byte for byte) returns the original SEND_ACK whatever client_time_ms or unknown
// fields say; other content is CONFLICT and consumes nothing; another sender or tenant is
// another key, so a new message.
func TestIdempotencyFieldByField(t *testing.T) {
	w := startWriter(t, nil)
	a, b := uniqueUsers(t)
	other := b + 2
	orig := retrySend{sender: a, device: "phone", cmid: newCmid(t), peer: b, msgType: 1, customType: "card",
		mentions: []uint64{uint64(b), 5}, body: []byte("hello world"), clientTime: 1_000}
	first := mustAck(t, orig.outcome(t, w))

	type outcome int
	const (
		originalAck outcome = iota
		conflict
		newMessage
	)
	cases := []struct {
		name string
		vary func(*retrySend)
		want outcome
	}{
		{"identical", func(*retrySend) {}, originalAck},
		{"client_time_ms", func(s *retrySend) { s.clientTime = 2_000 }, originalAck},
		{"mentions reordered and repeated", func(s *retrySend) { s.mentions = []uint64{5, uint64(b), 5} }, originalAck},
		{"a field the server does not know", func(s *retrySend) { s.unknown = true }, originalAck},
		{"body of the same length", func(s *retrySend) { s.body = []byte("hello World") }, conflict},
		{"body of another length", func(s *retrySend) { s.body = []byte("hello world!") }, conflict},
		{"empty body", func(s *retrySend) { s.body = nil }, conflict},
		{"message_type", func(s *retrySend) { s.msgType = 2 }, conflict},
		{"custom_type", func(s *retrySend) { s.customType = "cart" }, conflict},
		{"custom_type removed", func(s *retrySend) { s.customType = "" }, conflict},
		{"mentions, another set", func(s *retrySend) { s.mentions = []uint64{5} }, conflict},
		{"target, another peer", func(s *retrySend) { s.peer = other }, conflict},
		{"device of the same user", func(s *retrySend) { s.device = "laptop" }, conflict},
		{"sender", func(s *retrySend) { s.sender = other }, newMessage},
		{"tenant", func(s *retrySend) { s.tenant = contract.TenantID{Hi: 0, Lo: 7} }, newMessage},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := orig
			s.mentions = append([]uint64(nil), orig.mentions...)
			c.vary(&s)
			o := s.outcome(t, w)
			switch c.want {
			case originalAck:
				if got := mustAck(t, o); !proto.Equal(got, first) {
					t.Fatalf("ACK %v, want the original %v", got, first)
				}
			case conflict:
				wantCode(t, o, contract.ErrCodeConflict)
			case newMessage:
				if got := mustAck(t, o); got.GetMessageId() == nil || proto.Equal(got, first) ||
					string(got.GetMessageId()) == string(first.GetMessageId()) {
					t.Fatalf("ACK %v: want a message of its own, not the original %v", got, first)
				}
			}
			// Whatever the variation did, the original still answers with its ACK.
			if again := mustAck(t, orig.outcome(t, w)); !proto.Equal(again, first) {
				t.Fatalf("after the variation the original retry got %v, want %v", again, first)
			}
		})
	}

	// One record in the conversation, none in the other peer's, and no seq consumed.
	if n := len(w.history(t, a, first.GetConversationId(), 0, 1, 50).GetRecords()); n != 1 {
		t.Fatalf("%d history records under the key, want 1", n)
	}
	fresh := orig
	fresh.cmid, fresh.peer = newCmid(t), other
	toOther := mustAck(t, fresh.outcome(t, w))
	if toOther.GetConversationSeq() != 1 {
		t.Fatalf("first message to the other peer got seq %d, want 1: a CONFLICT consumed a seq", toOther.GetConversationSeq())
	}
	fresh.cmid, fresh.peer = newCmid(t), b
	if next := mustAck(t, fresh.outcome(t, w)); next.GetConversationSeq() != first.GetConversationSeq()+1 {
		t.Fatalf("next seq %d, want %d", next.GetConversationSeq(), first.GetConversationSeq()+1)
	}
}
