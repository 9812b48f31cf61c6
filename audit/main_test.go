package audit

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"io"
	"log/slog"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"google.golang.org/protobuf/proto"

	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/gates/itest"
	internalv1 "github.com/qim-dev/qim/proto/qiminternal/v1"
	"github.com/qim-dev/qim/services/fanout"
)

func TestMain(m *testing.M) { os.Exit(itest.Main(m)) }

// kit is one test's access to the package's stack: a producer that writes to exact partitions
// (acks=all, idempotent: the defaults) and an admin client. Tests use private topics, so a
// record planted by one test is never seen by another.
type kit struct {
	t       testing.TB
	ctx     context.Context
	brokers []string
	cl      *kgo.Client
	adm     *kadm.Client
	tenant  contract.TenantID
}

func newKit(t testing.TB) *kit {
	t.Helper()
	ep := itest.Endpoints(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	t.Cleanup(cancel)
	cl, err := kgo.NewClient(kgo.SeedBrokers(ep.KafkaBrokers...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return &kit{t: t, ctx: ctx, brokers: ep.KafkaBrokers, cl: cl, adm: kadm.NewClient(cl), tenant: contract.TenantID{Hi: 7, Lo: randUint(t)}}
}

func randUint(t testing.TB) uint64 {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	return binary.BigEndian.Uint64(b[:])>>16 | 1
}

// topic creates a private topic and waits until every partition is listed.
func (k *kit) topic(prefix string, partitions int) string {
	k.t.Helper()
	var b [6]byte
	_, _ = rand.Read(b[:])
	name := "qim-test-audit-" + prefix + "-" + hex.EncodeToString(b[:])
	if _, err := k.adm.CreateTopic(k.ctx, int32(partitions), -1, nil, name); err != nil {
		k.t.Fatalf("create topic %s: %v", name, err)
	}
	for {
		ends, err := k.adm.ListEndOffsets(k.ctx, name)
		if err == nil && ends.Error() == nil && len(ends[name]) == partitions {
			return name
		}
		if k.ctx.Err() != nil {
			k.t.Fatalf("topic %s not served: %v", name, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// produce appends recs synchronously and returns them with their offsets.
func (k *kit) produce(recs ...*kgo.Record) []*kgo.Record {
	k.t.Helper()
	if err := k.cl.ProduceSync(k.ctx, recs...).FirstErr(); err != nil {
		k.t.Fatalf("produce: %v", err)
	}
	return recs
}

var msgSeq atomic.Uint32

// envelope is a committed direct message from sender to peer, as the writer publishes it.
func (k *kit) envelope(sender, peer uint64, createdAtMs int64, body string) *internalv1.CommittedEnvelope {
	k.t.Helper()
	n := msgSeq.Add(1)
	mid, err := contract.NewMessageID(uint64(createdAtMs), n, 1, uint16(randUint(k.t)))
	if err != nil {
		k.t.Fatal(err)
	}
	mb, tb := mid.Bytes(), k.tenant.Bytes()
	cid := contract.DirectConversationID(k.tenant, contract.UserID(sender), contract.UserID(peer)).Bytes()
	cmid := make([]byte, 16)
	binary.BigEndian.PutUint64(cmid[8:], uint64(n))
	return &internalv1.CommittedEnvelope{SchemaVersion: 1, CommittedAtMs: createdAtMs,
		Record: &internalv1.MessageRecord{TenantId: tb[:], ConversationId: cid[:], ConversationKind: 1,
			ConversationSeq: uint64(n), MessageId: mb[:], SenderUserId: sender, SenderDeviceId: "d1",
			ClientMessageId: cmid, MessageType: 1, Body: []byte(body), CreatedAtMs: createdAtMs,
			TraceId: cmid, DirectPeerUserId: peer},
		Audience: &internalv1.FrozenAudience{Audience: &internalv1.FrozenAudience_Direct{
			Direct: &internalv1.DirectAudience{RecipientUserIds: []uint64{min(sender, peer), max(sender, peer)}}}}}
}

// commit appends envelopes to the Outbox topic.
func (k *kit) commit(topic string, envs ...*internalv1.CommittedEnvelope) []*kgo.Record {
	k.t.Helper()
	return k.produce(k.commitRecords(topic, envs...)...)
}

// commitRecords encodes envelopes as Outbox records (key = message_id, as the writer writes them).
func (k *kit) commitRecords(topic string, envs ...*internalv1.CommittedEnvelope) []*kgo.Record {
	recs := make([]*kgo.Record, len(envs))
	for i, env := range envs {
		v, _ := proto.Marshal(env) // a message built by envelope always encodes
		recs[i] = &kgo.Record{Topic: topic, Partition: 0, Key: env.GetRecord().GetMessageId(), Value: v}
	}
	return recs
}

// messages commits n messages between fresh pairs of users (each user gets exactly one entry).
func (k *kit) messages(topic string, n int) []*kgo.Record {
	k.t.Helper()
	envs := make([]*internalv1.CommittedEnvelope, n)
	for i := range envs {
		a := randUint(k.t)
		envs[i] = k.envelope(a, a+1, time.Now().UnixMilli(), "hello")
	}
	return k.commit(topic, envs...)
}

// fanout runs a real FanoutCoordinator in-process over the private topics until its committed
// position is want, then stops it.
func (k *kit) fanout(outbox, dispatch string, shards int, group string, want int64) {
	k.t.Helper()
	svc, err := fanout.New(fanout.Config{KafkaBrokers: k.brokers, ShardCount: shards, OutboxTopic: outbox,
		DispatchTopic: dispatch, Group: group, MetricsAddr: "127.0.0.1:0",
		RetryBackoffMin: 10 * time.Millisecond, RetryBackoffMax: 50 * time.Millisecond},
		slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		k.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(k.ctx)
	errc := make(chan error, 1)
	go func() { errc <- svc.Run(ctx) }()
	deadline := time.Now().Add(90 * time.Second)
	for svc.Position() != want {
		select {
		case err := <-errc:
			cancel()
			k.t.Fatalf("fanout stopped at position %d (want %d): %v", svc.Position(), want, err)
		default:
		}
		if time.Now().After(deadline) {
			cancel()
			err := <-errc
			k.t.Fatalf("fanout position %d, want %d after 90 s (Run: %v)", svc.Position(), want, err)
		}
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	if err := <-errc; err != nil {
		k.t.Fatalf("fanout: %v", err)
	}
}

// dispatches reads every record of a topic's partitions up to their current ends.
func (k *kit) dispatches(topic string) []*kgo.Record {
	k.t.Helper()
	ends, err := listed(k.adm.ListEndOffsets(k.ctx, topic))
	if err != nil {
		k.t.Fatal(err)
	}
	var ranges []PartitionRange
	var total int64
	for p, e := range ends {
		ranges, total = append(ranges, PartitionRange{Partition: p, From: 0, To: e}), total+e
	}
	r, err := newLogReader([]kgo.Opt{kgo.SeedBrokers(k.brokers...)}, topic, ranges, func(g Gap) { k.t.Fatalf("reading %s: %+v", topic, g) })
	if err != nil {
		k.t.Fatal(err)
	}
	defer r.close()
	out := make([]*kgo.Record, 0, total)
	if err := r.run(k.ctx, func(_ int32, rec *kgo.Record) (bool, error) { out = append(out, rec); return false, nil }); err != nil {
		k.t.Fatal(err)
	}
	return out
}

// audit runs the audit over cfg with the kit's brokers.
func (k *kit) audit(cfg Config, rng Range) *Result {
	k.t.Helper()
	cfg.Brokers = k.brokers
	res, err := Run(k.ctx, cfg, rng)
	if err != nil {
		k.t.Fatalf("audit: %v", err)
	}
	return res
}

func decodeDispatch(t testing.TB, r *kgo.Record) *internalv1.GroupDispatch {
	t.Helper()
	d := &internalv1.GroupDispatch{}
	if err := proto.Unmarshal(r.Value, d); err != nil {
		t.Fatal(err)
	}
	return d
}

func encode(t testing.TB, m proto.Message) []byte {
	t.Helper()
	b, err := proto.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
