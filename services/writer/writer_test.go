package writer

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

func TestIdempotentSendAndConflict(t *testing.T) {
	w := startWriter(t, nil)
	a, b := uniqueUsers(t)
	s := sendSpec{sender: a, peer: b, cmid: newCmid(t), body: []byte("hello"), messageType: 1}
	first := mustAck(t, w.send(t, s))
	again := mustAck(t, w.send(t, s))
	if !proto.Equal(first, again) {
		t.Fatalf("retry with same cmid and content returned a different ACK:\n%v\n%v", first, again)
	}
	page := w.history(t, a, first.GetConversationId(), 0, 1, 50)
	if len(page.GetRecords()) != 1 {
		t.Fatalf("want exactly one history record, got %d", len(page.GetRecords()))
	}
	s.body = []byte("different")
	wantCode(t, w.send(t, s), contract.ErrCodeConflict)
	// The conflict consumed no sequence: the next message takes the next seq.
	next := mustAck(t, w.send(t, sendSpec{sender: a, peer: b, cmid: newCmid(t), body: []byte("x"), messageType: 1}))
	if next.GetConversationSeq() != first.GetConversationSeq()+1 {
		t.Fatalf("seq after conflict = %d, want %d", next.GetConversationSeq(), first.GetConversationSeq()+1)
	}
}

func TestBoundaryValidation(t *testing.T) {
	w := startWriter(t, nil)
	a, b := uniqueUsers(t)
	cases := []struct {
		name string
		spec sendSpec
		code contract.ErrorCode
	}{
		{"zero client_message_id", sendSpec{sender: a, peer: b, cmid: make([]byte, 16)}, contract.ErrCodeInvalidArgument},
		{"short client_message_id", sendSpec{sender: a, peer: b, cmid: []byte{1, 2, 3}}, contract.ErrCodeInvalidArgument},
		{"custom_type over 64 bytes", sendSpec{sender: a, peer: b, cmid: newCmid(t), customType: strings.Repeat("x", 65)}, contract.ErrCodePayloadTooLarge},
		{"zero peer", sendSpec{sender: a, peer: 0, cmid: newCmid(t)}, contract.ErrCodeInvalidArgument},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { wantCode(t, w.send(t, c.spec), c.code) })
	}
	// Nothing above consumed a sequence: the first real message of the conversation is seq 1.
	ack := mustAck(t, w.send(t, sendSpec{sender: a, peer: b, cmid: newCmid(t), customType: strings.Repeat("y", 64), messageType: 77}))
	if ack.GetConversationSeq() != 1 {
		t.Fatalf("first seq = %d, want 1 (rejected input must not consume sequences)", ack.GetConversationSeq())
	}
	rec := w.history(t, b, ack.GetConversationId(), 0, 1, 10).GetRecords()[0]
	if rec.GetMessageType() != 77 || rec.GetCustomType() != strings.Repeat("y", 64) {
		t.Fatalf("unknown message type or custom type not preserved: %d %q", rec.GetMessageType(), rec.GetCustomType())
	}
	if len(rec.GetClientMessageId()) != 0 {
		t.Fatal("the peer must not see the sender's client_message_id")
	}
}

func TestHistoryPagingAndAuthorisation(t *testing.T) {
	w := startWriter(t, nil)
	a, b := uniqueUsers(t)
	var cid []byte
	for i := 0; i < 30; i++ {
		ack := mustAck(t, w.send(t, sendSpec{sender: a, peer: b, cmid: newCmid(t), body: []byte{byte(i)}, messageType: 1}))
		cid = ack.GetConversationId()
	}
	var seen []uint64
	anchor := uint64(0)
	for {
		page := w.history(t, b, cid, anchor, 1, 7)
		recs := page.GetRecords()
		for i := len(recs) - 1; i >= 0; i-- {
			seen = append(seen, recs[i].GetConversationSeq())
		}
		if !page.GetHasMore() || len(recs) == 0 {
			break
		}
		anchor = recs[0].GetConversationSeq()
	}
	if len(seen) != 30 || seen[0] != 30 || seen[29] != 1 {
		t.Fatalf("OLDER paging saw %v", seen)
	}
	newer := w.history(t, a, cid, 25, 2, 100).GetRecords()
	if len(newer) != 5 || newer[0].GetConversationSeq() != 26 || !bytes.Equal(newer[4].GetBody(), []byte{29}) {
		t.Fatalf("NEWER from 25: %v", newer)
	}
	stranger, _ := uniqueUsers(t)
	o := w.historyOutcome(t, stranger, cid, 0, 1, 10)
	if contract.ErrorCode(o.GetErrorCode()) != contract.ErrCodeNotMember {
		t.Fatalf("stranger read history: code %s", contract.ErrorCode(o.GetErrorCode()))
	}
}

func TestRefusesRedisWithoutFsyncAlways(t *testing.T) {
	cfg := Config{RedisAddr: mailboxRedis(t), KafkaBrokers: []string{"127.0.0.1:1"}, ListenAddr: "127.0.0.1:0", MetricsAddr: "127.0.0.1:0",
		RPC: writerRPC(t)}
	svc, err := New(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err = svc.Run(ctx)
	if err == nil || !strings.Contains(err.Error(), "appendfsync") {
		t.Fatalf("writer started on an everysec Redis or failed for another reason: %v", err)
	}
}

func (w *testWriter) historyOutcome(t testing.TB, actor contract.UserID, cid []byte, anchor uint64, dir uint32, limit uint32) *internalv1.PullHistoryOutcome {
	t.Helper()
	req, _ := proto.Marshal(&qimv1.PullHistory{ConversationId: cid, AnchorSeq: anchor, Direction: dir, Limit: limit})
	tenant := contract.TenantID{}.Bytes()
	out, err := w.client.PullHistory(context.Background(), &internalv1.AuthenticatedPullHistory{TenantId: tenant[:], ActorUserId: uint64(actor), PullHistory: req})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func (w *testWriter) history(t testing.TB, actor contract.UserID, cid []byte, anchor uint64, dir uint32, limit uint32) *qimv1.HistoryBatch {
	t.Helper()
	o := w.historyOutcome(t, actor, cid, anchor, dir, limit)
	if o.GetErrorCode() != 0 {
		t.Fatalf("PullHistory: %s %s", contract.ErrorCode(o.GetErrorCode()), o.GetErrorMessage())
	}
	return o.GetBatch()
}
