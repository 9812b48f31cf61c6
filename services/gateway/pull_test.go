package gateway

import (
	"bytes"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/qim-dev/qim/contract"
	qimv1 "github.com/qim-dev/qim/proto/qim/v1"
	internalv1 "github.com/qim-dev/qim/proto/qiminternal/v1"
)

func TestPullMailboxForwardsAndReturnsBatch(t *testing.T) {
	got := make(chan *internalv1.AuthenticatedPullMailbox, 4)
	batch := &qimv1.MailboxBatch{Entries: []*qimv1.MailboxEvent{{MailboxSeq: 0x0001_0000_0000_0000, EventType: 1, MessageId: bytes.Repeat([]byte{7}, 16),
		Body: make([]byte, 200<<10)}}, NextCursor: &qimv1.MailboxCursor{MailboxSeq: 0x0001_0000_0000_0000}, HasMore: true}
	fm := &fakeMailbox{pull: func(in *internalv1.AuthenticatedPullMailbox) *internalv1.PullMailboxOutcome {
		got <- in
		if len(in.GetPullMailbox()) == 0 {
			return &internalv1.PullMailboxOutcome{ErrorCode: uint32(contract.ErrCodeMailboxDirty), ErrorMessage: "not yet"}
		}
		return &internalv1.PullMailboxOutcome{Batch: batch}
	}}
	h := startGateway(t, harnessOpts{mailbox: fm})
	id := newIdentity(t, "phone")
	c := h.login(id)

	req, _ := proto.Marshal(&qimv1.PullMailbox{Cursor: &qimv1.MailboxCursor{MailboxSeq: 5}, Limit: 10})
	req = protowire.AppendBytes(protowire.AppendTag(req, 77, protowire.BytesType), []byte("unknown"))
	reqID := c.nextID()
	c.writeBytes(contract.OpPullMailbox, reqID, req)
	var b qimv1.MailboxBatch
	if m := c.expect(contract.OpMailboxBatch, &b); m.RequestID != reqID {
		t.Fatalf("MAILBOX_BATCH request id %d, want %d", m.RequestID, reqID)
	}
	if !proto.Equal(&b, batch) {
		t.Fatal("batch not returned unchanged")
	}
	in := <-got
	tb := id.tenant.Bytes()
	if !bytes.Equal(in.GetPullMailbox(), req) || !bytes.Equal(in.GetTenantId(), tb[:]) || in.GetUserId() != uint64(id.user) || in.GetDeviceId() != "phone" {
		t.Fatalf("PullMailbox not forwarded byte for byte with the token's identity: %v", in)
	}

	reqID = c.nextID()
	c.writeBytes(contract.OpPullMailbox, reqID, nil)
	if e := c.expectError(contract.ErrCodeMailboxDirty, reqID); contract.Opcode(e.GetRequestOpcode()) != contract.OpPullMailbox {
		t.Fatalf("ERROR = %v", e)
	}
}

func TestPullMailboxWithoutBatchIsAnError(t *testing.T) {
	fm := &fakeMailbox{pull: func(*internalv1.AuthenticatedPullMailbox) *internalv1.PullMailboxOutcome {
		return &internalv1.PullMailboxOutcome{}
	}}
	h := startGateway(t, harnessOpts{mailbox: fm})
	c := h.login(newIdentity(t, "d"))
	id := c.write(contract.OpPullMailbox, &qimv1.PullMailbox{})
	c.expectError(contract.ErrCodeInternal, id) // never an invented empty batch without a cursor
}

func TestPullHistoryForwardsToWriter(t *testing.T) {
	fw := newFakeWriter(false)
	got := make(chan *internalv1.AuthenticatedPullHistory, 2)
	fw.history = func(in *internalv1.AuthenticatedPullHistory) *internalv1.PullHistoryOutcome {
		got <- in
		if len(in.GetPullHistory()) == 0 {
			return &internalv1.PullHistoryOutcome{ErrorCode: uint32(contract.ErrCodeNotMember), ErrorMessage: "no"}
		}
		return &internalv1.PullHistoryOutcome{Batch: &qimv1.HistoryBatch{ConversationId: bytes.Repeat([]byte{1}, 16), HasMore: true}}
	}
	h := startGateway(t, harnessOpts{writer: fw})
	id := newIdentity(t, "d")
	c := h.login(id)
	req, _ := proto.Marshal(&qimv1.PullHistory{ConversationId: bytes.Repeat([]byte{1}, 16), Limit: 3})
	reqID := c.nextID()
	c.writeBytes(contract.OpPullHistory, reqID, req)
	var b qimv1.HistoryBatch
	if m := c.expect(contract.OpHistoryBatch, &b); m.RequestID != reqID || !b.GetHasMore() {
		t.Fatalf("HISTORY_BATCH = %v (request %d)", &b, m.RequestID)
	}
	if in := <-got; !bytes.Equal(in.GetPullHistory(), req) || in.GetActorUserId() != uint64(id.user) {
		t.Fatalf("PullHistory forwarded as %v", in)
	}
	reqID = c.nextID()
	c.writeBytes(contract.OpPullHistory, reqID, nil)
	c.expectError(contract.ErrCodeNotMember, reqID)
}
