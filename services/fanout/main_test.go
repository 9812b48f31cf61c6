package fanout

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"io"
	"log/slog"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"google.golang.org/protobuf/proto"

	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/gates/itest"
	internalv1 "github.com/qim-dev/qim/proto/qiminternal/v1"
	"github.com/qim-dev/qim/services/internal/commitlog"
)

func TestMain(m *testing.M) { os.Exit(itest.Main(m)) }

// testCtx is a per-test deadline generous enough for a loaded 2-core machine.
func testCtx(t testing.TB) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func randomHex(t testing.TB, n int) string {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// kafkaAdmin is a raw kadm client for what the service never does: creating topics, deleting
// records, committing positions by hand.
func kafkaAdmin(t testing.TB) *kadm.Client {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(itest.Endpoints(t).KafkaBrokers...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return kadm.NewClient(cl)
}

// createTopic creates a private topic (tests must not share the package's qim.outbox, where one
// test's poisoned record would stop every other test's fanout) and waits until it is served.
func createTopic(t testing.TB, prefix string, partitions int) string {
	t.Helper()
	ctx := testCtx(t)
	name := "qim-test-" + prefix + "-" + randomHex(t, 6)
	if _, err := kafkaAdmin(t).CreateTopic(ctx, int32(partitions), -1, nil, name); err != nil {
		t.Fatalf("create topic %s: %v", name, err)
	}
	adm, err := commitlog.NewAdmin(itest.Endpoints(t).KafkaBrokers)
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	for {
		wm, err := adm.Watermarks(ctx, name)
		if err == nil && len(wm) == partitions {
			return name
		}
		if ctx.Err() != nil {
			t.Fatalf("topic %s not served: %v", name, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// envelopeValue is a CommittedEnvelope of a direct message from sender to peer, as the writer
// publishes it; id makes the message_id unique.
func envelopeValue(t testing.TB, run uint16, id int, sender, peer uint64) (key, value []byte) {
	t.Helper()
	mid, err := contract.NewMessageID(uint64(time.Now().UnixMilli()), uint32(id), 1, run)
	if err != nil {
		t.Fatal(err)
	}
	mb := mid.Bytes()
	tenant := contract.TenantID{Hi: 7, Lo: 9}
	tb := tenant.Bytes()
	cid := contract.DirectConversationID(tenant, contract.UserID(sender), contract.UserID(peer)).Bytes()
	cmid := make([]byte, 16)
	binary.BigEndian.PutUint64(cmid[8:], uint64(id)+1)
	env := &internalv1.CommittedEnvelope{SchemaVersion: 1, CommittedAtMs: 1_700_000_000_000,
		Record: &internalv1.MessageRecord{TenantId: tb[:], ConversationId: cid[:], ConversationKind: 1,
			ConversationSeq: uint64(id + 1), MessageId: mb[:], SenderUserId: sender, SenderDeviceId: "d1",
			ClientMessageId: cmid, MessageType: 1, Body: []byte("hello"), DirectPeerUserId: peer},
		Audience: &internalv1.FrozenAudience{Audience: &internalv1.FrozenAudience_Direct{
			Direct: &internalv1.DirectAudience{RecipientUserIds: []uint64{min(sender, peer), max(sender, peer)}}}}}
	v, err := proto.Marshal(env)
	if err != nil {
		t.Fatal(err)
	}
	return mb[:], v
}

// outboxRecord is one record a test put into its private Outbox.
type outboxRecord struct {
	offset int64
	value  []byte
}

// produceOutbox appends values (already encoded, or garbage) to topic in order and returns
// them with their offsets. Keys are valid message ids so the Outbox producer accepts them.
func produceOutbox(t testing.TB, topic string, keys, values [][]byte) []outboxRecord {
	t.Helper()
	p, err := commitlog.NewOutboxProducer(commitlog.OutboxConfig{Brokers: itest.Endpoints(t).KafkaBrokers, Topic: topic})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	out := make([]outboxRecord, len(values))
	var wg sync.WaitGroup
	var mu sync.Mutex
	var first error
	for i := range values {
		wg.Add(1)
		p.Produce(context.Background(), keys[i], values[i], func(off int64, err error) {
			defer wg.Done()
			mu.Lock()
			defer mu.Unlock()
			if err != nil && first == nil {
				first = err
			}
			out[i] = outboxRecord{offset: off, value: values[i]}
		})
	}
	wg.Wait()
	if first != nil {
		t.Fatal(first)
	}
	return out
}

// produceEnvelopes appends n direct-message envelopes between pseudo-random users.
func produceEnvelopes(t testing.TB, topic string, n int) []outboxRecord {
	t.Helper()
	run := uint16(time.Now().UnixNano())
	keys, values := make([][]byte, n), make([][]byte, n)
	for i := range n {
		a := uint64(1000 + 7919*i)
		keys[i], values[i] = envelopeValue(t, run, i, a, a+1+uint64(i%13))
	}
	return produceOutbox(t, topic, keys, values)
}

// fanoutRun is a Service running in the background.
type fanoutRun struct {
	svc  *Service
	stop func() error
}

// testConfig is a fanout on private topics with a private group and fast retries.
func testConfig(t testing.TB, outbox, dispatchTopic string, shards int) Config {
	return Config{KafkaBrokers: itest.Endpoints(t).KafkaBrokers, ShardCount: shards, OutboxTopic: outbox,
		DispatchTopic: dispatchTopic, Group: "qim-fanout-test-" + randomHex(t, 6), MetricsAddr: "127.0.0.1:0",
		RetryBackoffMin: 10 * time.Millisecond, RetryBackoffMax: 50 * time.Millisecond}
}

func newService(t testing.TB, cfg Config) *Service {
	t.Helper()
	svc, err := New(cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	return svc
}

// startFanout runs svc until stop (which returns Run's error) or the test ends.
func startFanout(t testing.TB, svc *Service) *fanoutRun {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- svc.Run(ctx) }()
	var once sync.Once
	var err error
	r := &fanoutRun{svc: svc, stop: func() error {
		once.Do(func() { cancel(); err = <-errc })
		return err
	}}
	t.Cleanup(func() { _ = r.stop() })
	return r
}

// waitPosition waits until the service committed position want, failing if Run returned.
func (r *fanoutRun) waitPosition(t testing.TB, want int64) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for r.svc.Position() != want {
		if time.Now().After(deadline) {
			t.Fatalf("position %d, want %d after 60 s", r.svc.Position(), want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// committed is the group's stored Outbox position.
func committed(t testing.TB, cfg Config) (int64, bool) {
	t.Helper()
	adm, err := commitlog.NewAdmin(cfg.KafkaBrokers)
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	s, err := commitlog.NewOffsetStore(adm, cfg.Group, cfg.OutboxTopic)
	if err != nil {
		t.Fatal(err)
	}
	off, found, err := s.Fetch(testCtx(t), 0)
	if err != nil {
		t.Fatal(err)
	}
	return off, found
}

// commitPosition stores next as the group's Outbox position, as an operator (or an older
// fanout) would have.
func commitPosition(t testing.TB, cfg Config, next int64) {
	t.Helper()
	adm, err := commitlog.NewAdmin(cfg.KafkaBrokers)
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	s, err := commitlog.NewOffsetStore(adm, cfg.Group, cfg.OutboxTopic)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Commit(testCtx(t), 0, next); err != nil {
		t.Fatal(err)
	}
}

// metricValue sums every series of the named counter, gauge or histogram (its count) in the
// service's registry.
func metricValue(t testing.TB, svc *Service, name string) float64 {
	t.Helper()
	mfs, err := svc.reg.Gatherer().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		var sum float64
		for _, m := range mf.GetMetric() {
			sum += m.GetCounter().GetValue() + m.GetGauge().GetValue() + float64(m.GetHistogram().GetSampleCount())
		}
		return sum
	}
	t.Fatalf("metric %s not registered", name)
	return 0
}
