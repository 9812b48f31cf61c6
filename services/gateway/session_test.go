package gateway

import (
	"bytes"
	"net/http"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/qim-dev/qim/contract"
	qimv1 "github.com/qim-dev/qim/proto/qim/v1"
	internalv1 "github.com/qim-dev/qim/proto/qiminternal/v1"
)

// PULL_SESSION_LIST reaches the session service byte for byte (unknown fields included) with the
// token's identity, and its batch or error comes back unchanged; an answer with neither is never
// turned into an empty list.
func TestPullSessionListForwardsToSession(t *testing.T) {
	got := make(chan *internalv1.AuthenticatedPullSessionList, 4)
	batch := &qimv1.SessionListBatch{Sessions: []*qimv1.SessionEntry{{ConversationId: bytes.Repeat([]byte{1}, 16),
		UnreadCount: 3, UnreadExact: true, ReadConversationSeq: 9}}, NextPageToken: []byte("next"), HasMore: true}
	fs := &fakeSession{list: func(in *internalv1.AuthenticatedPullSessionList) *internalv1.PullSessionListOutcome {
		got <- in
		switch len(in.GetPullSessionList()) {
		case 0:
			return &internalv1.PullSessionListOutcome{ErrorCode: uint32(contract.ErrCodeInternal), ErrorMessage: "refused"}
		case 1:
			return &internalv1.PullSessionListOutcome{}
		}
		return &internalv1.PullSessionListOutcome{Batch: batch}
	}}
	h := startGateway(t, harnessOpts{session: fs})
	id := newIdentity(t, "tablet")
	c := h.login(id)

	req, _ := proto.Marshal(&qimv1.PullSessionList{PageToken: []byte("tok"), Limit: 7})
	req = protowire.AppendBytes(protowire.AppendTag(req, 99, protowire.BytesType), []byte("future field"))
	reqID := c.nextID()
	c.writeBytes(contract.OpPullSessionList, reqID, req)
	var b qimv1.SessionListBatch
	if m := c.expect(contract.OpSessionListBatch, &b); m.RequestID != reqID || !proto.Equal(&b, batch) {
		t.Fatalf("SESSION_LIST_BATCH (request %d) = %v, want the session service's batch unchanged", m.RequestID, &b)
	}
	in := <-got
	tb := id.tenant.Bytes()
	if !bytes.Equal(in.GetPullSessionList(), req) || !bytes.Equal(in.GetTenantId(), tb[:]) || in.GetUserId() != uint64(id.user) ||
		in.GetDeviceId() != "tablet" {
		t.Fatalf("PullSessionList not forwarded byte for byte with the token's identity: %v", in)
	}
	reqID = c.nextID()
	c.writeBytes(contract.OpPullSessionList, reqID, nil)
	if e := c.expectError(contract.ErrCodeInternal, reqID); e.GetMessage() != "refused" {
		t.Fatalf("ERROR = %v", e)
	}
	reqID = c.nextID()
	c.writeBytes(contract.OpPullSessionList, reqID, []byte{0x10}) // one byte: the fake answers nothing
	c.expectError(contract.ErrCodeInternal, reqID)
	c.ping() // the connection stays usable
}

// MARK_READ is forwarded the same way; the MARK_READ_ACK carries the session service's absolute
// watermark, not the requested one.
func TestMarkReadForwardsToSession(t *testing.T) {
	cid := bytes.Repeat([]byte{2}, 16)
	fs := &fakeSession{mark: func(in *internalv1.AuthenticatedMarkRead) *internalv1.MarkReadOutcome {
		var req qimv1.MarkRead
		_ = proto.Unmarshal(in.GetMarkRead(), &req)
		if req.GetReadConversationSeq() == 0 {
			return &internalv1.MarkReadOutcome{ErrorCode: uint32(contract.ErrCodeNotMember), ErrorMessage: "no"}
		}
		return &internalv1.MarkReadOutcome{Ack: &qimv1.MarkReadAck{ConversationId: req.GetConversationId(),
			ReadConversationSeq: 42, UnreadCount: 1, UnreadExact: true}}
	}}
	h := startGateway(t, harnessOpts{session: fs})
	c := h.login(newIdentity(t, "d"))
	c.write(contract.OpMarkRead, &qimv1.MarkRead{ConversationId: cid, ReadConversationSeq: 5})
	var ack qimv1.MarkReadAck
	c.expect(contract.OpMarkReadAck, &ack)
	if ack.GetReadConversationSeq() != 42 || !bytes.Equal(ack.GetConversationId(), cid) {
		t.Fatalf("MARK_READ_ACK = %v", &ack)
	}
	id := c.write(contract.OpMarkRead, &qimv1.MarkRead{ConversationId: cid})
	c.expectError(contract.ErrCodeNotMember, id)
}

func TestSessionBackendDown(t *testing.T) {
	h := startGateway(t, harnessOpts{mutate: func(c *Config) {
		c.SessionAddrs = []string{"127.0.0.1:1"} // nothing listens there
		c.BackendTimeout = 300 * time.Millisecond
	}})
	if code, body := get(t, "http://"+h.addrs.Metrics+"/healthz"); code != http.StatusServiceUnavailable || !strings.Contains(body, "session") {
		t.Fatalf("/healthz with the session service down = %d %q, want 503 naming it", code, body)
	}
	c := h.login(newIdentity(t, "d"))
	id := c.write(contract.OpPullSessionList, &qimv1.PullSessionList{})
	if e := c.expectError(contract.ErrCodeUnavailable, id); strings.Contains(e.GetMessage(), "127.0.0.1:1") {
		t.Fatalf("ERROR message %q leaks the backend address", e.GetMessage())
	}
	c.ping()
}
