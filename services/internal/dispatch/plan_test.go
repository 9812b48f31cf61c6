package dispatch

import (
	"bytes"
	"errors"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/qim-dev/qim/contract"
	internalv1 "github.com/qim-dev/qim/proto/qiminternal/v1"
)

func envelopeFor(sender, peer uint64, body []byte) *internalv1.CommittedEnvelope {
	mid, _ := contract.NewMessageID(1_700_000_000_000, 1, 0, 1)
	b := mid.Bytes()
	tenant := contract.TenantID{}.Bytes()
	cid := contract.DirectConversationID(contract.TenantID{}, contract.UserID(sender), contract.UserID(peer)).Bytes()
	return &internalv1.CommittedEnvelope{SchemaVersion: 1,
		Record: &internalv1.MessageRecord{TenantId: tenant[:], ConversationId: cid[:], ConversationSeq: 7, MessageId: b[:],
			SenderUserId: sender, ClientMessageId: bytes.Repeat([]byte{9}, 16), MessageType: 1, Body: body, DirectPeerUserId: peer},
		Audience: &internalv1.FrozenAudience{Audience: &internalv1.FrozenAudience_Direct{Direct: &internalv1.DirectAudience{
			RecipientUserIds: []uint64{min(sender, peer), max(sender, peer)}}}}}
}

func TestPlanIsDeterministicAndCoversBothParticipants(t *testing.T) {
	shards, _ := contract.NewShardCount(64)
	env := envelopeFor(1, 2, []byte("hi"))
	a, err := Plan(env, shards, 10)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := Plan(env, shards, 99) // a replay at another Outbox offset
	if len(a) != len(b) {
		t.Fatal("replay planned a different number of dispatches")
	}
	got := map[uint64]bool{}
	for i := range a {
		if !bytes.Equal(a[i].GetDispatchId(), b[i].GetDispatchId()) || !bytes.Equal(a[i].GetPayloadDigest(), b[i].GetPayloadDigest()) {
			t.Fatal("replay changed dispatch identity or digest")
		}
		if i > 0 && a[i-1].GetShard() >= a[i].GetShard() {
			t.Fatal("dispatches not ordered by shard")
		}
		if err := Verify(a[i]); err != nil {
			t.Fatal(err)
		}
		for _, r := range a[i].GetRecipients() {
			if shards.UserShard(contract.TenantID{}, contract.UserID(r)) != a[i].GetShard() {
				t.Fatalf("recipient %d planned to the wrong shard", r)
			}
			got[r] = true
		}
	}
	if !got[1] || !got[2] || len(got) != 2 {
		t.Fatalf("recipients = %v, want sender and peer", got)
	}
}

func TestInlineBudgetAndTamperDetection(t *testing.T) {
	shards, _ := contract.NewShardCount(64)
	small, _ := Plan(envelopeFor(1, 2, make([]byte, contract.InlineBodyBudgetBytes/2)), shards, 0)
	big, _ := Plan(envelopeFor(1, 2, make([]byte, contract.InlineBodyBudgetBytes/2+1)), shards, 0)
	if small[0].Body == nil || big[0].Body != nil {
		t.Fatal("inline rule is members × body ≤ 8 KiB")
	}
	d := proto.Clone(small[0]).(*internalv1.GroupDispatch)
	d.ConversationSeq++
	if err := Verify(d); !errors.Is(err, ErrDigestMismatch) {
		t.Fatalf("tampered dispatch verified: %v", err)
	}
	bad := envelopeFor(1, 2, nil)
	bad.SchemaVersion = 2
	if _, err := Plan(bad, shards, 0); !errors.Is(err, ErrUnplannable) {
		t.Fatal("unknown schema planned")
	}
}
