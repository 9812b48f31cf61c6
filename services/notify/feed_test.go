package notify

import (
	"log/slog"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/qim-dev/qim/contract"
	qimv1 "github.com/qim-dev/qim/proto/qim/v1"
	internalv1 "github.com/qim-dev/qim/proto/qiminternal/v1"
	"github.com/qim-dev/qim/services/internal/commitlog"
	"github.com/qim-dev/qim/services/internal/obs"
)

func envelope(t *testing.T, ten contract.TenantID, body []byte) commitlog.Record {
	t.Helper()
	tb, conv, mid := ten.Bytes(), contract.DirectConversationID(ten, 1, 2).Bytes(), contract.U128{Lo: 5}.Bytes()
	v, err := proto.Marshal(&internalv1.CommittedEnvelope{SchemaVersion: 1, CommittedAtMs: 77, Record: &internalv1.MessageRecord{
		TenantId: tb[:], ConversationId: conv[:], ConversationKind: uint32(contract.KindDirect), ConversationSeq: 4,
		MessageId: mid[:], SenderUserId: 1, SenderDeviceId: "phone", MessageType: 1, Body: body, CreatedAtMs: 76,
		DirectPeerUserId: 2}})
	if err != nil {
		t.Fatal(err)
	}
	return commitlog.Record{Value: v}
}

// A committed message becomes a FeedMessage keyed by its conversation, with its coordinates and
// body (an empty body present, not withheld); other tenants and undecodable records are left out.
func TestFeedRecords(t *testing.T) {
	mine, other := contract.TenantID{Lo: 9}, contract.TenantID{Lo: 10}
	f := &feed{topic: "qim.feed", tenants: map[contract.TenantID]bool{mine: true}, m: newMetrics(obs.NewRegistry("feed-test")),
		log: slog.Default()}
	out := f.records([]commitlog.Record{envelope(t, mine, []byte("hi")), envelope(t, other, []byte("no")),
		{Value: []byte{0xff}}, envelope(t, mine, nil)})
	if len(out) != 2 {
		t.Fatalf("%d feed records, want the tenant's 2", len(out))
	}
	conv := contract.DirectConversationID(mine, 1, 2).Bytes()
	for i, want := range []string{"hi", ""} {
		var m qimv1.FeedMessage
		if err := proto.Unmarshal(out[i].Value, &m); err != nil {
			t.Fatal(err)
		}
		msg := m.GetMessage()
		if string(out[i].Key) != string(conv[:]) || out[i].Topic != "qim.feed" || msg.Body == nil || string(msg.Body) != want ||
			msg.GetConversationSeq() != 4 || m.GetPeerUserId() != 2 || m.GetSenderDeviceId() != "phone" || m.GetCommittedAtMs() != 77 {
			t.Errorf("record %d: key %x, %v", i, out[i].Key, &m)
		}
	}
}
