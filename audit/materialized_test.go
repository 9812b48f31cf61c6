package audit

import (
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/twmb/franz-go/pkg/kgo"
	"google.golang.org/protobuf/proto"

	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/gates/itest"
	internalv1 "github.com/qim-dev/qim/proto/qiminternal/v1"
	"github.com/qim-dev/qim/services/mailbox/mailboxstore"
)

var nextDB atomic.Int32

// mailboxDB is a private, empty database of the stack's mailbox Redis. Database 0 belongs to the
// real MailboxNode of the crash test.
func mailboxDB(t testing.TB) *redis.Client {
	t.Helper()
	db := int(1 + nextDB.Add(1)%15)
	rdb := redis.NewClient(&redis.Options{Addr: itest.Endpoints(t).RedisMailbox, DB: db})
	t.Cleanup(func() { _ = rdb.Close() })
	if err := rdb.FlushDB(t.Context()).Err(); err != nil {
		t.Fatal(err)
	}
	return rdb
}

// materialize applies the scene's dispatch records through the store, as a MailboxNode does:
// per partition in log order with the watermark chained, one entry per recipient at
// compose(epoch, offset), up to 128 records per pipeline. A partition stops before the offset
// stop names.
func (s *scene) materialize(rdb *redis.Client, stop map[int32]int64) {
	k := s.k
	store := mailboxstore.New(rdb, s.config().Shards)
	shards := make([]uint32, s.shards)
	for i := range shards {
		shards[i] = uint32(i)
	}
	states, err := store.OpenShards(k.ctx, shards)
	if err != nil {
		k.t.Fatal(err)
	}
	byPart := map[int32][]*kgo.Record{}
	for _, r := range k.dispatches(s.dispatch) {
		if at, ok := stop[r.Partition]; (!ok || r.Offset < at) && r.Offset > states[r.Partition].Watermark {
			byPart[r.Partition] = append(byPart[r.Partition], r)
		}
	}
	for p, recs := range byPart {
		prev := states[p].Watermark
		for len(recs) > 0 {
			n := min(len(recs), 128)
			ms := make([]mailboxstore.Materialization, n)
			for i, r := range recs[:n] {
				ms[i], prev = materialization(k.t, r, states[p].Epoch, prev), r.Offset
			}
			if _, err := store.Materialize(k.ctx, ms); err != nil {
				k.t.Fatalf("materialize partition %d from %d: %v", p, recs[0].Offset, err)
			}
			recs = recs[n:]
		}
	}
}

func materialization(t testing.TB, r *kgo.Record, epoch uint16, prev int64) mailboxstore.Materialization {
	d := decodeDispatch(t, r)
	did, _ := contract.U128FromBytes(d.GetDispatchId())
	tenant, _ := contract.U128FromBytes(d.GetTenantId())
	m := mailboxstore.Materialization{Shard: d.GetShard(), Epoch: epoch, Offset: r.Offset, PrevOffset: prev,
		DispatchID: contract.DispatchID(did), Digest: d.GetPayloadDigest(), CreatedAtMs: d.GetCreatedAtMs()}
	seq, err := m.Seq()
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range d.GetRecipients() {
		e := &internalv1.MailboxEntry{EventType: uint32(contract.EventMessage), MailboxSeq: uint64(seq),
			MessageId: d.GetMessageId(), ConversationId: d.GetConversationId(), ConversationSeq: d.GetConversationSeq(),
			SenderUserId: d.GetSenderUserId(), MessageType: d.GetMessageType(), Body: d.Body, DispatchId: d.GetDispatchId(),
			CreatedAtMs: d.GetCreatedAtMs()}
		if u == d.GetSenderUserId() {
			e.ClientMessageId = d.GetClientMessageId()
		}
		v, err := proto.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		m.Entries = append(m.Entries, mailboxstore.Entry{Tenant: tenant, User: contract.UserID(u), EventType: contract.EventMessage, Value: v})
	}
	return m
}

// bucketKey is a user's day bucket in the layout mailboxstore documents (its doc.go).
func bucketKey(shard uint32, tenant contract.TenantID, user uint64, createdAtMs int64) string {
	return fmt.Sprintf("qim:mb:{s%d}:%s:%d:%d", shard, tenant, user, mailboxstore.Day(createdAtMs))
}

// The materialization pass sees an entry lost from the mailbox Redis, tells retention and trims
// (legitimate) from loss, and counts a record above its shard's watermark as not yet
// materialized; WaitCaughtUp refuses to report a shard caught up before it is.
func TestMaterializationPassCountsLostExpiredAndNotYet(t *testing.T) {
	k := newKit(t)
	old := time.Now().Add(-contract.MailboxRetention - 48*time.Hour).UnixMilli()
	s := newScene(k, 16, func(s *scene) {
		a, b := randUint(t), randUint(t)
		k.commit(s.outbox, k.envelope(a, a+1, old, "old"), k.envelope(b, b+1, old, "old"))
	})
	recs := k.dispatches(s.dispatch)
	held := recs[len(recs)-1]
	rdb := mailboxDB(t)
	s.materialize(rdb, map[int32]int64{held.Partition: held.Offset})

	var lost, trimmed *internalv1.GroupDispatch
	var expired int64
	for _, r := range recs {
		switch d := decodeDispatch(t, r); {
		case r == held:
		case d.GetCreatedAtMs() == old:
			expired += int64(len(d.GetRecipients()))
		case lost == nil:
			lost = d
		case trimmed == nil:
			trimmed = d
		}
	}
	if err := rdb.Del(k.ctx, bucketKey(lost.GetShard(), k.tenant, lost.GetRecipients()[0], lost.GetCreatedAtMs())).Err(); err != nil {
		t.Fatal(err)
	}
	store := mailboxstore.New(rdb, s.config().Shards)
	day := mailboxstore.Day(trimmed.GetCreatedAtMs())
	if _, err := store.TrimBefore(k.ctx, k.tenant, contract.UserID(trimmed.GetRecipients()[0]), day+1); err != nil {
		t.Fatal(err)
	}

	cfg := s.config()
	cfg.Mailbox = rdb
	var nce *NotCaughtUpError
	if _, err := WaitCaughtUp(k.ctx, cfg, s.group, time.Second); !errors.As(err, &nce) || nce.Who != fmt.Sprintf("mailbox shard %d", held.Partition) {
		t.Fatalf("WaitCaughtUp with shard %d behind = %v, want *NotCaughtUpError naming it", held.Partition, err)
	}
	res := k.audit(cfg, Range{})
	notYet := int64(len(decodeDispatch(t, held).GetRecipients()))
	checkCounts(t, res, map[Kind]int64{KindNotMaterialized: 1, KindNotYet: notYet}, "")
	c := res.Counts
	if !res.Mailbox || c.MailboxRecords != int64(len(recs)) || c.Expired != expired+1 ||
		c.Materialized != c.EntriesChecked-c.Expired-c.NotMaterialized {
		t.Fatalf("counts %+v: want %d records, %d expired (retention) + 1 (trim)", c, len(recs), expired)
	}
	if ex := res.Examples[KindNotMaterialized][0]; ex.User != lost.GetRecipients()[0] || ex.Partition != int32(lost.GetShard()) {
		t.Fatalf("example %+v does not name the lost entry's user %d", ex, lost.GetRecipients()[0])
	}

	s.materialize(rdb, nil)
	ends, err := WaitCaughtUp(k.ctx, cfg, s.group, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	res = k.audit(cfg, Range{Ends: ends})
	checkCounts(t, res, map[Kind]int64{KindNotMaterialized: 1}, "no entry at mailbox_seq")
}
