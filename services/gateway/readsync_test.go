package gateway

import (
	"bytes"
	"context"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/qim-dev/qim/contract"
	qimv1 "github.com/qim-dev/qim/proto/qim/v1"
	internalv1 "github.com/qim-dev/qim/proto/qiminternal/v1"
)

// A MARK_READ on the phone reaches the laptop as SESSION_DELTA with the session service's entry,
// through the user's MailboxNode and back to the Push service (as a node with one gateway does);
// the phone itself gets its MARK_READ_ACK and no delta.
func TestMarkReadReachesTheOtherDevices(t *testing.T) {
	entry := &qimv1.SessionEntry{ConversationId: make([]byte, 16), ReadConversationSeq: 9, LatestConversationSeq: 9,
		ConversationKind: uint32(contract.KindDirect)}
	sess := &fakeSession{mark: func(in *internalv1.AuthenticatedMarkRead) *internalv1.MarkReadOutcome {
		return &internalv1.MarkReadOutcome{Ack: &qimv1.MarkReadAck{ConversationId: entry.GetConversationId(), ReadConversationSeq: 9}, Entry: entry}
	}}
	mbox := &fakeMailbox{}
	h := startGateway(t, harnessOpts{mailbox: mbox, session: sess})
	mbox.sessionPush = func(tg *internalv1.PushTarget) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if _, err := h.pushClient().PushBatch(ctx, &internalv1.PushBatchRequest{Targets: []*internalv1.PushTarget{tg}}); err != nil {
			t.Error(err)
		}
	}
	id := newIdentity(t, "phone")
	phone := h.login(id)
	other := id
	other.device, other.token = "laptop", issue(t, identity{tenant: id.tenant, user: id.user, device: "laptop"}, time.Hour)
	laptop := h.login(other)
	phone.write(contract.OpMarkRead, &qimv1.MarkRead{ConversationId: entry.GetConversationId(), ReadConversationSeq: 9})
	phone.expect(contract.OpMarkReadAck, &qimv1.MarkReadAck{})
	var d qimv1.SessionDelta
	if m := laptop.expect(contract.OpSessionDelta, &d); m.RequestID != 0 {
		t.Fatalf("SESSION_DELTA request id %d, want 0", m.RequestID)
	}
	if len(d.GetSessions()) != 1 || !proto.Equal(d.GetSessions()[0], entry) {
		t.Fatalf("SESSION_DELTA = %v, want the session service's entry", &d)
	}
	phone.expectSilence(300 * time.Millisecond)
}

// TYPING reaches the peer's devices as TYPING_EVENT through the peer's MailboxNode; a flood is
// cut to the connection's burst; a TYPING without a peer is INVALID_ARGUMENT; nothing is stored.
func TestTypingReachesThePeerAndIsLimited(t *testing.T) {
	mbox := &fakeMailbox{}
	h := startGateway(t, harnessOpts{mailbox: mbox})
	mbox.sessionPush = func(tg *internalv1.PushTarget) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if _, err := h.pushClient().PushBatch(ctx, &internalv1.PushBatchRequest{Targets: []*internalv1.PushTarget{tg}}); err != nil {
			t.Error(err)
		}
	}
	aliceID := newIdentity(t, "phone")
	bobID := identity{tenant: aliceID.tenant, user: aliceID.user + 2, device: "phone"} // the same tenant
	bobID.token = issue(t, bobID, time.Hour)
	alice, bob := h.login(aliceID), h.login(bobID)
	alice.write(contract.OpTyping, &qimv1.Typing{PeerUserId: uint64(bobID.user), Typing: true})
	var ev qimv1.TypingEvent
	if m := bob.expect(contract.OpTypingEvent, &ev); m.RequestID != 0 {
		t.Fatalf("TYPING_EVENT request id %d, want 0", m.RequestID)
	}
	conv := contract.DirectConversationID(aliceID.tenant, aliceID.user, bobID.user).Bytes()
	if !bytes.Equal(ev.GetConversationId(), conv[:]) || ev.GetUserId() != uint64(aliceID.user) || !ev.GetTyping() ||
		ev.GetExpiresInMs() != uint32(contract.TypingExpiry.Milliseconds()) {
		t.Fatalf("TYPING_EVENT = %v", &ev)
	}
	for range 20 {
		alice.write(contract.OpTyping, &qimv1.Typing{PeerUserId: uint64(bobID.user), Typing: true})
	}
	got := 0
	for {
		m, err := bob.tryRead(500 * time.Millisecond)
		if err != nil {
			break
		}
		if m.Opcode == contract.OpTypingEvent {
			got++
		}
	}
	if got > contract.TypingBurst {
		t.Errorf("%d TYPING_EVENTs from a flood of 20 after one, want at most the burst of %d", got, contract.TypingBurst)
	}
	id := alice.write(contract.OpTyping, &qimv1.Typing{Typing: true})
	alice.expectError(contract.ErrCodeInvalidArgument, id)
	if n := h.mailbox.pulls.Load(); n != 0 {
		t.Errorf("typing caused %d mailbox pulls", n)
	}
}
