package session

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"google.golang.org/protobuf/proto"

	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/gates/itest"
	internalv1 "github.com/qim-dev/qim/proto/qiminternal/v1"
	"github.com/qim-dev/qim/services/internal/commitlog"
	"github.com/qim-dev/qim/services/internal/dispatch"
	"github.com/qim-dev/qim/services/internal/msgstore"
)

func TestMain(m *testing.M) { os.Exit(itest.Main(m)) }

// env is one test's slice of the package's real stack: a private dispatch topic (so a test's
// checkpoints, records and topic recreation touch no other test), a fresh tenant, the writer's
// MessageStore on the core Redis (history is written exactly as the writer writes it) and a
// dispatch producer (records are planned exactly as the fanout plans them).
type env struct {
	t      *testing.T
	ctx    context.Context
	redis  string
	kafka  []string
	topic  string
	parts  int
	shards contract.ShardCount
	tenant contract.TenantID
	rdb    *redis.Client
	hist   *msgstore.Store
	prod   *commitlog.DispatchProducer
	users  atomic.Uint64
}

var midCounter atomic.Uint32

func randBytes(t testing.TB, n int) []byte {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return b
}

func newEnv(t *testing.T, parts int) *env {
	t.Helper()
	ep := itest.Endpoints(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	t.Cleanup(cancel)
	n, err := contract.NewShardCount(parts)
	if err != nil {
		t.Fatal(err)
	}
	tenant, _ := contract.U128FromBytes(randBytes(t, 16))
	e := &env{t: t, ctx: ctx, redis: ep.RedisCore, kafka: ep.KafkaBrokers, parts: parts, shards: n, tenant: tenant,
		topic: "session-test-" + hex.EncodeToString(randBytes(t, 6))}
	e.createTopic()
	e.rdb = redis.NewClient(&redis.Options{Addr: ep.RedisCore})
	t.Cleanup(func() { _ = e.rdb.Close() })
	e.hist = msgstore.New(e.rdb)
	if e.prod, err = commitlog.NewDispatchProducer(commitlog.DispatchConfig{Brokers: ep.KafkaBrokers, Topic: e.topic}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.prod.Close)
	return e
}

func (e *env) admin() *kadm.Client {
	cl, err := kgo.NewClient(kgo.SeedBrokers(e.kafka...))
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(cl.Close)
	return kadm.NewClient(cl)
}

// createTopic creates the env's topic (retrying while a deleted namesake is still going away)
// and waits until every partition is served.
func (e *env) createTopic() {
	e.t.Helper()
	adm := e.admin()
	for {
		_, err := adm.CreateTopic(e.ctx, int32(e.parts), -1, nil, e.topic)
		if err == nil {
			break
		}
		if e.ctx.Err() != nil {
			e.t.Fatalf("create topic %s: %v", e.topic, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	la, err := commitlog.NewAdmin(e.kafka)
	if err != nil {
		e.t.Fatal(err)
	}
	defer la.Close()
	for {
		wm, err := la.Watermarks(e.ctx, e.topic)
		if err == nil && len(wm) == e.parts {
			return
		}
		if e.ctx.Err() != nil {
			e.t.Fatalf("topic %s not served: %v", e.topic, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (e *env) user() contract.UserID { return contract.UserID(1000 + e.users.Add(1)) }

func (e *env) key(u contract.UserID) userKey { return userKey{tenant: e.tenant, user: u} }

// msg is one message a test sends; the zero value is a TEXT message with a small body.
type msg struct {
	from, to   contract.UserID
	typ        contract.MessageType
	flags      uint32
	hole       bool // reserve the seq only: a hole in history, no dispatch
	noDispatch bool // history only (the projection has not seen it yet)
	// group, when set, makes it a message of that group conversation (to is unused), dispatched
	// to audience(seq): the members whose interval holds its seq (group_test.go).
	group    contract.ConversationID
	audience func(seq uint64) []uint64
}

// send commits messages to history as the writer does (one fused script per message, in one
// batch) and produces their dispatches as the fanout plans them. It returns the seqs.
func (e *env) send(ms ...msg) []uint64 {
	e.t.Helper()
	seqs := make([]uint64, len(ms))
	var recs []commitlog.Record
	for i, m := range ms {
		if m.typ == 0 {
			m.typ = contract.MessageText
		}
		in, rec := e.intent(m)
		var c msgstore.Commit
		var err error
		if m.hole {
			c, err = e.hist.Reserve(e.ctx, in)
		} else {
			cs, errs := e.hist.ReserveAndRecord(e.ctx, []msgstore.Intent{in})
			c, err = cs[0], errs[0]
		}
		if err != nil {
			e.t.Fatal(err)
		}
		seqs[i] = uint64(c.Seq)
		if m.hole || m.noDispatch {
			continue
		}
		rec.ConversationSeq = seqs[i]
		recips := directRecipients(rec)
		if m.audience != nil {
			recips = m.audience(seqs[i])
		}
		recs = append(recs, e.dispatches(rec, recips)...)
	}
	e.produce(recs)
	return seqs
}

// produce writes dispatch records to the env's topic.
func (e *env) produce(recs []commitlog.Record) {
	e.t.Helper()
	for len(recs) > 0 {
		n := min(len(recs), 4096)
		if err := e.prod.ProduceBatch(e.ctx, recs[:n]); err != nil {
			e.t.Fatal(err)
		}
		recs = recs[n:]
	}
}

func (e *env) intent(m msg) (msgstore.Intent, *internalv1.MessageRecord) {
	now := time.Now().UnixMilli()
	mid, err := contract.NewMessageID(uint64(now), midCounter.Add(1), 0, 3)
	if err != nil {
		e.t.Fatal(err)
	}
	cmidU, _ := contract.U128FromBytes(randBytes(e.t, 16))
	cmid := contract.ClientMessageID(cmidU)
	conv := contract.DirectConversationID(e.tenant, m.from, m.to)
	if m.group != (contract.ConversationID{}) {
		conv = m.group
	}
	mb, tb, cb, kb := mid.Bytes(), e.tenant.Bytes(), conv.Bytes(), cmidU.Bytes()
	rec := &internalv1.MessageRecord{TenantId: tb[:], ConversationId: cb[:], ConversationKind: uint32(conv.Kind()),
		MessageId: mb[:], SenderUserId: uint64(m.from), SenderDeviceId: "d", ClientMessageId: kb[:],
		MessageType: uint32(m.typ), Body: []byte("body"), CreatedAtMs: now, TraceId: mb[:], Flags: m.flags}
	if conv.Kind() == contract.KindDirect {
		rec.DirectPeerUserId = uint64(m.to)
	} else if m.typ == contract.MessageControl {
		rec.CustomType = contract.MembershipCustomType
	}
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(rec)
	if err != nil {
		e.t.Fatal(err)
	}
	var idn [36]byte
	copy(idn[:], randBytes(e.t, 36))
	return msgstore.Intent{Key: msgstore.CommitKey{Tenant: e.tenant, Sender: m.from, ClientMessageID: cmid, Conversation: conv},
		Identity: idn, MessageID: mid, Record: b, NowMs: now}, rec
}

// directRecipients is the audience of a direct message: both participants, ascending.
func directRecipients(rec *internalv1.MessageRecord) []uint64 {
	a, b := rec.GetSenderUserId(), rec.GetDirectPeerUserId()
	recips := []uint64{min(a, b)}
	if a != b {
		recips = append(recips, max(a, b))
	}
	return recips
}

// dispatches plans rec's dispatch records to recips, as the fanout plans them from the frozen
// audience: a direct one, or a group one carrying its recipients by value.
func (e *env) dispatches(rec *internalv1.MessageRecord, recips []uint64) []commitlog.Record {
	aud := &internalv1.FrozenAudience{Audience: &internalv1.FrozenAudience_Direct{
		Direct: &internalv1.DirectAudience{RecipientUserIds: recips}}}
	if rec.GetConversationKind() == uint32(contract.KindGroup) {
		shards := make([]uint32, len(recips))
		for i, u := range recips {
			shards[i] = e.shards.UserShard(e.tenant, contract.UserID(u))
		}
		slices.Sort(shards)
		aud.Audience = &internalv1.FrozenAudience_Group{Group: &internalv1.GroupAudience{GroupId: rec.GetConversationId(),
			MembershipVersion: rec.GetMembershipVersion(), MemberCount: uint32(len(recips)),
			TargetShards: slices.Compact(shards), RecipientUserIds: recips}}
	}
	envl := &internalv1.CommittedEnvelope{SchemaVersion: 1, Record: rec, CommittedAtMs: rec.GetCreatedAtMs(), Audience: aud}
	ds, err := dispatch.Plan(envl, e.shards, 0)
	if err != nil {
		e.t.Fatal(err)
	}
	out := make([]commitlog.Record, len(ds))
	for i, d := range ds {
		v, err := proto.Marshal(d)
		if err != nil {
			e.t.Fatal(err)
		}
		out[i] = commitlog.Record{Partition: int32(d.GetShard()), Key: d.GetDispatchId(), Value: v}
	}
	return out
}

func (e *env) conv(a, b contract.UserID) contract.ConversationID {
	return contract.DirectConversationID(e.tenant, a, b)
}
