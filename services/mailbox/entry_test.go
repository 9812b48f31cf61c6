package mailbox

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/qim-dev/qim/contract"
	internalv1 "github.com/qim-dev/qim/proto/qiminternal/v1"
	"github.com/qim-dev/qim/services/internal/commitlog"
	"github.com/qim-dev/qim/services/internal/dispatch"
)

// planned returns a valid dispatch of a direct message between two users of one shard.
func planned(t *testing.T, body []byte) (*internalv1.GroupDispatch, contract.ShardCount, contract.TenantID) {
	t.Helper()
	shards, _ := contract.NewShardCount(64)
	tenant := contract.TenantID{Lo: 5}
	var a, b contract.UserID
	for u := contract.UserID(1); b == 0; u++ {
		switch {
		case shards.UserShard(tenant, u) != 9:
		case a == 0:
			a = u
		default:
			b = u
		}
	}
	mid, _ := contract.NewMessageID(uint64(time.Now().UnixMilli()), 1, 0, 1)
	mb, tb := mid.Bytes(), tenant.Bytes()
	cid := contract.DirectConversationID(tenant, a, b).Bytes()
	env := &internalv1.CommittedEnvelope{SchemaVersion: 1, Record: &internalv1.MessageRecord{TenantId: tb[:],
		ConversationId: cid[:], ConversationKind: 1, ConversationSeq: 3, MessageId: mb[:], SenderUserId: uint64(a),
		ClientMessageId: bytes.Repeat([]byte{7}, 16), MessageType: 1, Body: body, CreatedAtMs: time.Now().UnixMilli()},
		Audience: &internalv1.FrozenAudience{Audience: &internalv1.FrozenAudience_Direct{Direct: &internalv1.DirectAudience{
			RecipientUserIds: []uint64{uint64(a), uint64(b)}}}}}
	ds, err := dispatch.Plan(env, shards, 0)
	if err != nil || len(ds) != 1 {
		t.Fatalf("plan: %v (%d dispatches)", err, len(ds))
	}
	return ds[0], shards, tenant
}

func record(t *testing.T, d *internalv1.GroupDispatch, partition int32) commitlog.Record {
	t.Helper()
	v, err := proto.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	return commitlog.Record{Partition: partition, Offset: 4, Value: v}
}

// Every reason a record cannot be applied safely is refused before anything is written.
func TestDecodeDispatchRefuses(t *testing.T) {
	good, shards, _ := planned(t, []byte("x"))
	if _, _, err := decodeDispatch(record(t, good, 9), shards); err != nil {
		t.Fatalf("valid dispatch refused: %v", err)
	}
	resign := func(d *internalv1.GroupDispatch) {
		d.PayloadDigest, _ = dispatch.Digest(d)
	}
	cases := map[string]struct {
		mutate    func(*internalv1.GroupDispatch)
		partition int32
	}{
		"wrong partition":   {func(*internalv1.GroupDispatch) {}, 8},
		"digest mismatch":   {func(d *internalv1.GroupDispatch) { d.ConversationSeq++ }, 9},
		"unknown schema":    {func(d *internalv1.GroupDispatch) { d.SchemaVersion = 2 }, 9},
		"no sender anchor":  {func(d *internalv1.GroupDispatch) { d.ClientMessageId = nil; resign(d) }, 9},
		"foreign recipient": {func(d *internalv1.GroupDispatch) { d.Recipients = append(d.Recipients, 1<<40); resign(d) }, 9},
		"unsorted": {func(d *internalv1.GroupDispatch) {
			d.Recipients[0], d.Recipients[1] = d.Recipients[1], d.Recipients[0]
			resign(d)
		}, 9},
		"no created_at":    {func(d *internalv1.GroupDispatch) { d.CreatedAtMs = 0; resign(d) }, 9},
		"oversized inline": {func(d *internalv1.GroupDispatch) { d.Body = make([]byte, 9<<10); resign(d) }, 9},
	}
	for name, tc := range cases {
		d := proto.Clone(good).(*internalv1.GroupDispatch)
		tc.mutate(d)
		if _, _, err := decodeDispatch(record(t, d, tc.partition), shards); !errors.Is(err, ErrBadDispatch) {
			t.Errorf("%s: want ErrBadDispatch, got %v", name, err)
		}
	}
	if _, _, err := decodeDispatch(commitlog.Record{Partition: 9, Value: []byte{0xff}}, shards); !errors.Is(err, ErrBadDispatch) {
		t.Errorf("garbage decoded: %v", err)
	}
}

// Only the sender's own entry carries the client_message_id; entries carry compose(epoch, offset);
// a dispatch without an inline body yields entries without one (absent, not empty).
func TestBuildMaterialization(t *testing.T) {
	d, _, tenant := planned(t, []byte("body"))
	m, targets, err := buildMaterialization(d, tenant, 3, 42, 41, true)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := contract.ComposeMailboxSeq(3, 42)
	if len(m.Entries) != 2 || len(targets) != 2 || m.PrevOffset != 41 {
		t.Fatalf("%d entries, %d targets", len(m.Entries), len(targets))
	}
	for i, en := range m.Entries {
		var e internalv1.MailboxEntry
		if err := proto.Unmarshal(en.Value, &e); err != nil {
			t.Fatal(err)
		}
		isSender := uint64(en.User) == d.GetSenderUserId()
		if e.GetMailboxSeq() != uint64(want) || string(e.GetBody()) != "body" || isSender != (len(e.GetClientMessageId()) == 16) {
			t.Fatalf("entry %d: %v", i, &e)
		}
		if ev := targets[i].GetEvents()[0]; isSender != (len(ev.GetClientMessageId()) == 16) {
			t.Fatalf("push event %d anchor: %v", i, ev)
		}
	}
	big, _, _ := planned(t, make([]byte, contract.InlineBodyBudgetBytes)) // 2 × 8 KiB: not inlined
	m, _, _ = buildMaterialization(big, tenant, 1, 0, -1, false)
	var e internalv1.MailboxEntry
	_ = proto.Unmarshal(m.Entries[0].Value, &e)
	if e.Body != nil {
		t.Fatal("a body the dispatch did not inline appeared in the entry")
	}
}
