package gateway

import (
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
