package mailboxstore

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"google.golang.org/protobuf/proto"

	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/gates/itest"
	internalv1 "github.com/qim-dev/qim/proto/qiminternal/v1"
)

func TestMain(m *testing.M) { os.Exit(itest.Main(m)) }

// testShards is large so every test gets a shard of its own (shard-level keys — epoch, watermark,
// identities — are shared by all users of a shard).
const testShards = 65536

var (
	shardSeq  atomic.Uint32
	shardBase = func() uint32 { var b [2]byte; _, _ = rand.Read(b[:]); return uint32(binary.BigEndian.Uint16(b[:])) }()
)

// fix is one test's private shard and tenant on the stack's mailbox Redis.
type fix struct {
	t      testing.TB
	rdb    *redis.Client
	store  *Store
	shard  uint32
	tenant contract.TenantID
	next   contract.UserID
	ctx    context.Context
	ep     uint16 // the shard epoch materializations are built with
}

func newFix(t testing.TB) *fix {
	t.Helper()
	ep := itest.Endpoints(t)
	rdb := redis.NewClient(&redis.Options{Addr: ep.RedisMailbox})
	t.Cleanup(func() { _ = rdb.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	n, _ := contract.NewShardCount(testShards)
	f := &fix{t: t, rdb: rdb, store: New(rdb, n), ctx: ctx,
		shard: (shardBase + shardSeq.Add(1)*7919) % testShards, tenant: randU128(t)}
	st, err := f.store.OpenShards(ctx, []uint32{f.shard})
	if err != nil {
		t.Fatal(err)
	}
	f.ep = st[0].Epoch
	return f
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

// user returns a new user of the fixture's tenant whose mailbox lives on the fixture's shard.
func (f *fix) user() contract.UserID {
	for {
		f.next++
		if f.store.shards.UserShard(f.tenant, f.next) == f.shard {
			return f.next
		}
	}
}

// testDay is today (UTC): buckets expire at the end of their day plus the retention, so a fixed
// past day would expire on write. The code under test never reads the clock; the test must.
var testDay = time.Now().UnixMilli() / dayMillis

// mat builds a materialization of one message to users at offset (prev = offset-1, or -1 at 0).
func (f *fix) mat(did contract.DispatchID, digest byte, offset int64, day int64, users ...contract.UserID) Materialization {
	f.t.Helper()
	m := Materialization{Shard: f.shard, Epoch: f.ep, Offset: offset, PrevOffset: offset - 1,
		DispatchID: did, Digest: digest32(digest), CreatedAtMs: day*dayMillis + 1234}
	seq, err := m.Seq()
	if err != nil {
		f.t.Fatal(err)
	}
	for _, u := range users {
		m.Entries = append(m.Entries, Entry{Tenant: f.tenant, User: u, EventType: contract.EventMessage,
			Value: entryBytes(f.t, seq, did, u, contract.EventMessage)})
	}
	return m
}

func digest32(b byte) []byte {
	d := make([]byte, 32)
	for i := range d {
		d[i] = b
	}
	return d
}

func entryBytes(t testing.TB, seq contract.MailboxSeq, did contract.DispatchID, u contract.UserID, et contract.EventType) []byte {
	t.Helper()
	id := did.Bytes()
	b, err := proto.Marshal(&internalv1.MailboxEntry{EventType: uint32(et), MailboxSeq: uint64(seq),
		DispatchId: id[:], SenderUserId: uint64(u), Body: []byte("hi")})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func (f *fix) apply(ms ...Materialization) []Outcome {
	f.t.Helper()
	out, err := f.store.Materialize(f.ctx, ms)
	if err != nil {
		f.t.Fatalf("materialize: %v", err)
	}
	return out
}

func (f *fix) pull(u contract.UserID, cursor contract.MailboxSeq, limit, maxBytes int) PullResult {
	f.t.Helper()
	r, err := f.store.Pull(f.ctx, PullQuery{Tenant: f.tenant, User: u, Device: "dev", Cursor: cursor,
		Limit: limit, MaxBytes: maxBytes, StoreCursor: true})
	if err != nil {
		f.t.Fatalf("pull: %v", err)
	}
	return r
}

func (f *fix) watermark() int64 {
	f.t.Helper()
	st, err := f.store.ReadShard(f.ctx, f.shard)
	if err != nil {
		f.t.Fatal(err)
	}
	return st.Watermark
}

func seqOf(t testing.TB, e uint16, o uint64) contract.MailboxSeq {
	s, err := contract.ComposeMailboxSeq(e, o)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func newDispatchID(t testing.TB) contract.DispatchID { return contract.DispatchID(randU128(t)) }

func seqs(r PullResult) []contract.MailboxSeq {
	out := make([]contract.MailboxSeq, len(r.Entries))
	for i, e := range r.Entries {
		out[i] = e.Seq
	}
	return out
}

func redisZ(member []byte) redis.Z { return redis.Z{Score: 0, Member: member} }
