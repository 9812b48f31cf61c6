package mailbox

import (
	"context"
	"crypto/rand"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"google.golang.org/protobuf/proto"

	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/gates/itest"
	internalv1 "github.com/qim-dev/qim/proto/qiminternal/v1"
	"github.com/qim-dev/qim/services/internal/commitlog"
	"github.com/qim-dev/qim/services/internal/dispatch"
	"github.com/qim-dev/qim/services/mailbox/mailboxstore"
)

func TestMain(m *testing.M) { os.Exit(itest.Main(m)) }

// env is one test's view of the package's stack: its own shard(s) of qim.dispatch (tests share
// the topic and the mailbox Redis, so each test owns shards nobody else writes), a tenant, a
// dispatch producer and a store for assertions.
type env struct {
	t        testing.TB
	ctx      context.Context
	ep       brokers
	shards   contract.ShardCount
	tenant   contract.TenantID
	rdb      *redis.Client
	store    *mailboxstore.Store
	producer *commitlog.DispatchProducer
	nextUser contract.UserID
}

type brokers struct {
	kafka []string
	redis string
}

var (
	shardMu   sync.Mutex
	shardNext uint32
)

func newEnv(t testing.TB) *env {
	t.Helper()
	ep := itest.Endpoints(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	n, err := contract.NewShardCount(ep.DispatchShards)
	if err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(&redis.Options{Addr: ep.RedisMailbox})
	t.Cleanup(func() { _ = rdb.Close() })
	p, err := commitlog.NewDispatchProducer(commitlog.DispatchConfig{Brokers: ep.KafkaBrokers})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return &env{t: t, ctx: ctx, ep: brokers{kafka: ep.KafkaBrokers, redis: ep.RedisMailbox}, shards: n,
		tenant: randU128(t), rdb: rdb, store: mailboxstore.New(rdb, n), producer: p}
}

// claimShard returns a shard no test of this run has used whose partition is still empty and
// which has no watermark (so its first record is at offset 0, even on a reused stack).
func (e *env) claimShard() uint32 {
	e.t.Helper()
	adm, err := commitlog.NewAdmin(e.ep.kafka)
	if err != nil {
		e.t.Fatal(err)
	}
	defer adm.Close()
	shardMu.Lock()
	defer shardMu.Unlock()
	for ; shardNext < uint32(e.shards); shardNext++ {
		s := shardNext
		b, err := adm.Watermarks(e.ctx, contract.TopicDispatch, int32(s))
		if err != nil {
			e.t.Fatal(err)
		}
		st, err := e.store.ReadShard(e.ctx, s)
		if err != nil {
			e.t.Fatal(err)
		}
		if b[int32(s)].High == 0 && st.Watermark < 0 {
			shardNext++
			return s
		}
	}
	e.t.Fatal("no unused dispatch shard left on this stack")
	return 0
}

// user returns a fresh user of the env's tenant whose mailbox is on shard.
func (e *env) user(shard uint32) contract.UserID {
	for {
		e.nextUser++
		if e.shards.UserShard(e.tenant, e.nextUser) == shard {
			return e.nextUser
		}
	}
}

func randU128(t testing.TB) contract.U128 {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	u, _ := contract.U128FromBytes(b[:])
	u.Lo |= 1
	return u
}

var midSeq atomic.Uint32

// message plans a direct message sender → peer and returns its dispatches (one per shard).
func (e *env) message(sender, peer contract.UserID, body []byte) (cmid []byte, ds []*internalv1.GroupDispatch) {
	e.t.Helper()
	now := time.Now().UnixMilli()
	mid, err := contract.NewMessageID(uint64(now), midSeq.Add(1), 0, 1)
	if err != nil {
		e.t.Fatal(err)
	}
	mb, tb := mid.Bytes(), e.tenant.Bytes()
	cid := contract.DirectConversationID(e.tenant, sender, peer).Bytes()
	c := randU128(e.t).Bytes()
	env := &internalv1.CommittedEnvelope{SchemaVersion: 1, Record: &internalv1.MessageRecord{
		TenantId: tb[:], ConversationId: cid[:], ConversationKind: uint32(contract.KindDirect), ConversationSeq: 7,
		MessageId: mb[:], SenderUserId: uint64(sender), SenderDeviceId: "d1", ClientMessageId: c[:], MessageType: 1,
		Body: body, CreatedAtMs: now, DirectPeerUserId: uint64(peer)},
		Audience: &internalv1.FrozenAudience{Audience: &internalv1.FrozenAudience_Direct{Direct: &internalv1.DirectAudience{
			RecipientUserIds: []uint64{uint64(min(sender, peer)), uint64(max(sender, peer))}}}}}
	ds, err = dispatch.Plan(env, e.shards, 0)
	if err != nil {
		e.t.Fatal(err)
	}
	return c[:], ds
}

// produce writes dispatches to their shards' partitions and returns their offsets.
func (e *env) produce(ds ...*internalv1.GroupDispatch) []int64 {
	e.t.Helper()
	recs := make([]commitlog.Record, len(ds))
	for i, d := range ds {
		v, err := proto.Marshal(d)
		if err != nil {
			e.t.Fatal(err)
		}
		recs[i] = commitlog.Record{Partition: int32(d.GetShard()), Key: d.GetDispatchId(), Value: v}
	}
	if err := e.producer.ProduceBatch(e.ctx, recs); err != nil {
		e.t.Fatal(err)
	}
	out := make([]int64, len(recs))
	for i := range recs {
		out[i] = recs[i].Offset
	}
	return out
}

// waitWatermark waits until shard's watermark reaches offset.
func (e *env) waitWatermark(shard uint32, offset int64) {
	e.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		st, err := e.store.ReadShard(e.ctx, shard)
		if err != nil {
			e.t.Fatal(err)
		}
		if st.Watermark >= offset {
			return
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("shard %d watermark %d did not reach %d", shard, st.Watermark, offset)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func seqAt(t testing.TB, offset int64) contract.MailboxSeq {
	s, err := contract.ComposeMailboxSeq(1, uint64(offset))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// counterValue reads a counter (optionally one label value) from the node's registry.
func counterValue(t testing.TB, svc *Service, name, label string) float64 {
	t.Helper()
	mfs, err := svc.Registry().Gatherer().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		total := 0.0
		for _, m := range mf.GetMetric() {
			ok := label == ""
			for _, lp := range m.GetLabel() {
				ok = ok || lp.GetValue() == label
			}
			if ok {
				total += m.GetCounter().GetValue()
			}
		}
		return total
	}
	return 0
}

// waitCounter polls counterValue until it reaches at least want (or 30 s pass) and returns the
// value it saw last: for counters a worker increments just after the durable write a test
// waited for.
func waitCounter(t testing.TB, svc *Service, name, label string, want float64) float64 {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		v := counterValue(t, svc, name, label)
		if v >= want || time.Now().After(deadline) {
			return v
		}
		time.Sleep(10 * time.Millisecond)
	}
}
