package archiver

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

	"github.com/redis/go-redis/v9"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"google.golang.org/protobuf/proto"

	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/gates/itest"
	"github.com/qim-dev/qim/gates/stack"
	internalv1 "github.com/qim-dev/qim/proto/qiminternal/v1"
	"github.com/qim-dev/qim/services/internal/commitlog"
	"github.com/qim-dev/qim/services/internal/cqlstore"
)

func TestMain(m *testing.M) { os.Exit(itest.Main(m, stack.WithCQL(true))) }

func testCtx(t testing.TB) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
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

func kafkaAdmin(t testing.TB) *kadm.Client {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(itest.Endpoints(t).KafkaBrokers...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return kadm.NewClient(cl)
}

// privateOutbox creates a one-partition topic only this test uses.
func privateOutbox(t testing.TB) string {
	t.Helper()
	name := "qim-test-archiver-" + randomHex(t, 6)
	if _, err := kafkaAdmin(t).CreateTopic(testCtx(t), 1, -1, nil, name); err != nil {
		t.Fatal(err)
	}
	return name
}

// testConfig archives topic into a freshly migrated keyspace under a private group.
func testConfig(t testing.TB, topic string) Config {
	t.Helper()
	ep := itest.Endpoints(t)
	cfg := Config{KafkaBrokers: ep.KafkaBrokers, CQLHosts: []string{ep.CQL}, CQLKeyspace: "qim_arch_" + randomHex(t, 5),
		RedisAddr: ep.RedisCore, OutboxTopic: topic, Group: "qim-archiver-test-" + randomHex(t, 6), MetricsAddr: "127.0.0.1:0",
		RetryBackoffMin: 10 * time.Millisecond, RetryBackoffMax: 50 * time.Millisecond}
	if _, err := cqlstore.Migrate(testCtx(t), cqlstore.Config{Hosts: cfg.CQLHosts, Keyspace: cfg.CQLKeyspace},
		cqlstore.MigrateOptions{ReplicationFactor: 1}); err != nil {
		t.Fatal(err)
	}
	return cfg
}

var testTenant = contract.TenantID{Hi: 7, Lo: 9}

// envelope is a committed direct message at seq in the conversation of (1000+conv, 2000+conv).
func envelope(t testing.TB, conv uint64, seq uint64, body string) (key, value []byte) {
	t.Helper()
	mid, err := contract.NewMessageID(uint64(time.Now().UnixMilli()), uint32(seq), 1, uint16(conv))
	if err != nil {
		t.Fatal(err)
	}
	mb, tb := mid.Bytes(), testTenant.Bytes()
	cid := contract.DirectConversationID(testTenant, contract.UserID(1000+conv), contract.UserID(2000+conv)).Bytes()
	cmid := make([]byte, 16)
	binary.BigEndian.PutUint64(cmid[8:], seq)
	v, err := proto.Marshal(&internalv1.CommittedEnvelope{SchemaVersion: 1, CommittedAtMs: time.Now().UnixMilli(),
		Record: &internalv1.MessageRecord{TenantId: tb[:], ConversationId: cid[:], ConversationKind: 1, ConversationSeq: seq,
			MessageId: mb[:], SenderUserId: 1000 + conv, SenderDeviceId: "d1", ClientMessageId: cmid, MessageType: 1,
			Body: []byte(body), CreatedAtMs: time.Now().UnixMilli(), DirectPeerUserId: 2000 + conv}})
	if err != nil {
		t.Fatal(err)
	}
	return mb[:], v
}

func conversationOf(conv uint64) contract.ConversationID {
	return contract.DirectConversationID(testTenant, contract.UserID(1000+conv), contract.UserID(2000+conv))
}

// produce appends values to topic in order through the Outbox producer (acks=all).
func produce(t testing.TB, topic string, keys, values [][]byte) {
	t.Helper()
	p, err := commitlog.NewOutboxProducer(commitlog.OutboxConfig{Brokers: itest.Endpoints(t).KafkaBrokers, Topic: topic})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	var wg sync.WaitGroup
	var mu sync.Mutex
	var first error
	for i := range values {
		wg.Add(1)
		p.Produce(context.Background(), keys[i], values[i], func(_ int64, err error) {
			defer wg.Done()
			mu.Lock()
			defer mu.Unlock()
			if first == nil {
				first = err
			}
		})
	}
	wg.Wait()
	if first != nil {
		t.Fatal(first)
	}
}

// produceMessages appends n messages spread over convs conversations (seq 1, 2, … in each).
func produceMessages(t testing.TB, topic string, n, convs int) {
	t.Helper()
	keys, values := make([][]byte, n), make([][]byte, n)
	for i := range n {
		conv := uint64(i % convs)
		keys[i], values[i] = envelope(t, conv, uint64(i/convs)+1, "m"+randomHex(t, 2))
	}
	produce(t, topic, keys, values)
}

type run struct {
	svc  *Service
	stop func() error
	done chan struct{} // closed when Run returned
	err  error         // Run's error, valid once done is closed
}

func start(t testing.TB, cfg Config) *run { t.Helper(); return runService(t, newService(t, cfg)) }

func newService(t testing.TB, cfg Config) *Service {
	t.Helper()
	svc, err := New(cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	return svc
}

// runService runs svc until stop (which returns Run's error) or the test ends.
func runService(t testing.TB, svc *Service) *run {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	r := &run{svc: svc, done: make(chan struct{})}
	go func() { r.err = svc.Run(ctx); close(r.done) }()
	r.stop = func() error { cancel(); <-r.done; return r.err }
	t.Cleanup(func() { _ = r.stop() })
	return r
}

// exited waits until Run returned by itself and returns its error.
func (r *run) exited(t testing.TB, within time.Duration) error {
	t.Helper()
	select {
	case <-r.done:
		return r.err
	case <-time.After(within):
		t.Fatalf("Run still running after %v", within)
		return nil
	}
}

func (r *run) waitPosition(t testing.TB, want int64) {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for r.svc.Position() != want {
		if time.Now().After(deadline) {
			t.Fatalf("position %d, want %d after 90 s", r.svc.Position(), want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func openStore(t testing.TB, cfg Config) *cqlstore.Store {
	t.Helper()
	st, err := cqlstore.Open(testCtx(t), cfg.cql())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	return st
}

func coreRedis(t testing.TB) *redis.Client {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: itest.Endpoints(t).RedisCore})
	t.Cleanup(func() { _ = rdb.Close() })
	return rdb
}

func metricValue(t testing.TB, svc *Service, name string) float64 {
	t.Helper()
	mfs, err := svc.reg.Gatherer().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			var sum float64
			for _, m := range mf.GetMetric() {
				sum += m.GetCounter().GetValue() + m.GetGauge().GetValue() + float64(m.GetHistogram().GetSampleCount())
			}
			return sum
		}
	}
	t.Fatalf("metric %s not registered", name)
	return 0
}
