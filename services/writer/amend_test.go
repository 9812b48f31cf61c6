package writer

import (
	"context"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/qim-dev/qim/contract"
	qimv1 "github.com/qim-dev/qim/proto/qim/v1"
	internalv1 "github.com/qim-dev/qim/proto/qiminternal/v1"
)

// amend sends an amendment of target in the direct conversation of sender and peer.
func (w *testWriter) amend(t *testing.T, sender, peer contract.UserID, cmid []byte, target uint64, act contract.AmendAction,
	body []byte) *internalv1.SendOutcome {
	t.Helper()
	req, _ := proto.Marshal(&qimv1.SendRequest{ClientMessageId: cmid, Target: &qimv1.SendRequest_PeerUserId{PeerUserId: uint64(peer)},
		Body: body, Amend: &qimv1.Amend{TargetSeq: target, Action: uint32(act)}})
	tenant := contract.TenantID{}.Bytes()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	out, err := w.client.SendMessage(ctx, &internalv1.AuthenticatedSend{TenantId: tenant[:], SenderUserId: uint64(sender),
		SenderDeviceId: "d1", SendRequest: req})
	if err != nil {
		t.Fatalf("SendMessage rpc: %v", err)
	}
	return out
}

// bySeq is a history page of the conversation as actor reads it, by seq.
func (w *testWriter) bySeq(t *testing.T, actor contract.UserID, cid []byte) map[uint64]*qimv1.HistoryMessage {
	t.Helper()
	out := map[uint64]*qimv1.HistoryMessage{}
	for _, m := range w.history(t, actor, cid, 0, 1, 100).GetRecords() {
		out[m.GetConversationSeq()] = m
	}
	return out
}

func TestRecallEditDeleteAreServedByHistory(t *testing.T) {
	w := startWriter(t, nil)
	a, b := uniqueUsers(t)
	var seqs []uint64
	var cid []byte
	for i := 0; i < 3; i++ {
		ack := mustAck(t, w.send(t, sendSpec{sender: a, peer: b, cmid: newCmid(t), body: []byte("original"), messageType: 1}))
		seqs, cid = append(seqs, ack.GetConversationSeq()), ack.GetConversationId()
	}
	recallID := newCmid(t)
	recall := mustAck(t, w.amend(t, a, b, recallID, seqs[0], contract.AmendRecall, nil))
	if again := mustAck(t, w.amend(t, a, b, recallID, seqs[0], contract.AmendRecall, nil)); !proto.Equal(again, recall) {
		t.Fatalf("retried recall answered %v, want the first ack %v", again, recall)
	}
	mustAck(t, w.amend(t, a, b, newCmid(t), seqs[1], contract.AmendEdit, []byte("edited")))
	mustAck(t, w.amend(t, a, b, newCmid(t), seqs[2], contract.AmendDelete, nil))
	got := w.bySeq(t, b, cid)
	for i, want := range []struct {
		flags uint32
		body  []byte
	}{{contract.FlagRecalled, nil}, {contract.FlagEdited, []byte("edited")}, {contract.FlagDeleted, nil}} {
		m := got[seqs[i]]
		if m.GetFlags() != want.flags || (want.body == nil) != (m.Body == nil) || string(m.GetBody()) != string(want.body) {
			t.Errorf("seq %d: flags %d body %q, want %d %q", seqs[i], m.GetFlags(), m.Body, want.flags, want.body)
		}
	}
	ctl := got[recall.GetConversationSeq()]
	var am qimv1.MessageAmendment
	if ctl.GetMessageType() != uint32(contract.MessageControl) || ctl.GetCustomType() != contract.AmendCustomType ||
		proto.Unmarshal(ctl.GetBody(), &am) != nil || am.GetTargetSeq() != seqs[0] || am.GetAction() != uint32(contract.AmendRecall) ||
		am.GetActorUserId() != uint64(a) {
		t.Fatalf("the recall's own message: %v (amendment %v)", ctl, &am)
	}
	if len(got) != 6 {
		t.Fatalf("history holds %d messages, want 3 and their 3 amendments (a retry commits nothing)", len(got))
	}
}

func TestAmendmentRefusals(t *testing.T) {
	// A writer id no other writer of this stack held: its message_id clock starts at the wall
	// clock, not at the end of an earlier holder's claimed window (contract.HLCWindow ahead).
	fresh := uint16(4242)
	w := startWriter(t, func(c *Config) { c.RecallWindow, c.WriterID = time.Second, &fresh })
	a, b := uniqueUsers(t)
	ack := mustAck(t, w.send(t, sendSpec{sender: a, peer: b, cmid: newCmid(t), body: []byte("hello"), messageType: 1}))
	seq := ack.GetConversationSeq()
	wantCode(t, w.amend(t, b, a, newCmid(t), seq, contract.AmendRecall, nil), contract.ErrCodeForbidden)
	wantCode(t, w.amend(t, b, a, newCmid(t), seq, contract.AmendEdit, []byte("x")), contract.ErrCodeForbidden)
	wantCode(t, w.amend(t, b, a, newCmid(t), seq, contract.AmendDelete, nil), contract.ErrCodeForbidden)
	wantCode(t, w.amend(t, a, b, newCmid(t), seq+50, contract.AmendRecall, nil), contract.ErrCodeInvalidArgument)
	wantCode(t, w.amend(t, a, b, newCmid(t), seq, contract.AmendRecall, []byte("body")), contract.ErrCodeInvalidArgument)
	wantCode(t, w.amend(t, a, b, newCmid(t), seq, contract.AmendAction(9), nil), contract.ErrCodeInvalidArgument)
	edit := mustAck(t, w.amend(t, a, b, newCmid(t), seq, contract.AmendEdit, []byte("hello again")))
	wantCode(t, w.amend(t, a, b, newCmid(t), edit.GetConversationSeq(), contract.AmendRecall, nil), contract.ErrCodeForbidden)
	if got := w.bySeq(t, b, ack.GetConversationId()); len(got) != 2 {
		t.Fatalf("refused amendments committed something: %d records, want the message and its edit", len(got))
	}
	// Past the 1 s recall window, measured from the message's own commit time (the writer's
	// hybrid clock may run ahead of this one's wall clock): this test is about the window itself.
	mid, _ := contract.U128FromBytes(ack.GetMessageId())
	time.Sleep(time.Until(time.UnixMilli(int64(contract.MessageID(mid).TimeMs())).Add(1200 * time.Millisecond)))
	wantCode(t, w.amend(t, a, b, newCmid(t), seq, contract.AmendRecall, nil), contract.ErrCodeForbidden)
	del := mustAck(t, w.amend(t, a, b, newCmid(t), seq, contract.AmendDelete, nil)) // no window for a delete
	wantCode(t, w.amend(t, a, b, newCmid(t), seq, contract.AmendEdit, []byte("too late")), contract.ErrCodeForbidden)
	if m := w.bySeq(t, a, ack.GetConversationId())[seq]; m.GetFlags() != contract.FlagEdited|contract.FlagDeleted || m.Body != nil {
		t.Fatalf("after edit and delete (seq %d): flags %d body %q", del.GetConversationSeq(), m.GetFlags(), m.GetBody())
	}
}

// The recovery loop rebuilds an amendment's index merge from the stored record alone: it must
// equal what the original call merged.
func TestAmendmentOfRecordMatchesTheCall(t *testing.T) {
	cmd := &sendCmd{tenant: contract.TenantID{Lo: 1}, sender: 7, peer: 8, cmid: contract.ClientMessageID{Lo: 9},
		retention: contract.RetentionEphemeral24h}
	cmd.conversation = contract.DirectConversationID(cmd.tenant, cmd.sender, cmd.peer)
	if err := parseAmend(cmd, &qimv1.SendRequest{Body: []byte("new"), Amend: &qimv1.Amend{TargetSeq: 3, Action: 2}}); err != nil {
		t.Fatal(err)
	}
	target := &internalv1.MessageRecord{MessageId: make([]byte, 16), ConversationSeq: 3, RetentionClass: 1}
	if err := buildAmendment(cmd, target); err != nil {
		t.Fatal(err)
	}
	mid := contract.MessageID{Hi: uint64(time.Now().UnixMilli()) << 16, Lo: 1}
	b, err := cmd.record(mid)
	if err != nil {
		t.Fatal(err)
	}
	var r internalv1.MessageRecord
	_ = proto.Unmarshal(b, &r)
	r.ConversationSeq = 5
	b, _ = proto.Marshal(&r)
	got, err := amendmentOfRecord(b)
	if err != nil {
		t.Fatal(err)
	}
	want := cmd.markAmendment(5, mid)
	if got == nil || got.Target != want.Target || got.Seq != want.Seq || got.Flags != want.Flags ||
		string(got.Body) != string(want.Body) || got.ExpireAtMs != want.ExpireAtMs {
		t.Fatalf("from the record %+v, from the call %+v", got, want)
	}
}
