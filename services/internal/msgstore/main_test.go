package msgstore

import (
	"context"
	"crypto/rand"
	"net"
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

// coreClient connects to the stack's core Redis (appendfsync always) and closes it after t.
func coreClient(t testing.TB) *redis.Client {
	t.Helper()
	ep := itest.Endpoints(t)
	rdb := redis.NewClient(&redis.Options{Addr: ep.RedisCore})
	t.Cleanup(func() { _ = rdb.Close() })
	return rdb
}

func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func randU128(t testing.TB) contract.U128 {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	u, _ := contract.U128FromBytes(b[:])
	if u.IsZero() {
		u.Lo = 1
	}
	return u
}

// fixture is one fresh tenant and group conversation, so tests never share keys.
type fixture struct {
	tenant contract.TenantID
	conv   contract.ConversationID
	sender contract.UserID
}

// newFixture is a direct conversation: the store routes group conversations through the
// membership-checking scripts (group_test.go covers those).
func newFixture(t testing.TB) fixture {
	tenant, sender := randU128(t), contract.UserID(randU128(t).Hi>>1)
	conv := contract.DirectConversationID(tenant, sender, contract.UserID(randU128(t).Hi>>1))
	return fixture{tenant: tenant, conv: conv, sender: sender}
}

var midCounter atomic.Uint64

// intent builds a valid Intent with a fresh client_message_id and message_id and a canonical
// record (without conversation_seq) carrying a body of bodyLen bytes.
func (f fixture) intent(t testing.TB, bodyLen int) Intent {
	t.Helper()
	cmid := contract.ClientMessageID(randU128(t))
	mid, err := contract.NewMessageID(uint64(time.Now().UnixMilli()), uint32(midCounter.Add(1)), 1, 7)
	if err != nil {
		t.Fatal(err)
	}
	var idn [36]byte
	copy(idn[:], "QIMD")
	u := randU128(t).Bytes()
	copy(idn[4:], u[:])
	return Intent{
		Key:       CommitKey{Tenant: f.tenant, Sender: f.sender, ClientMessageID: cmid, Conversation: f.conv},
		Identity:  idn,
		MessageID: mid,
		Record:    f.record(t, mid, cmid, bodyLen),
		NowMs:     time.Now().UnixMilli(),
	}
}

func (f fixture) record(t testing.TB, mid contract.MessageID, cmid contract.ClientMessageID, bodyLen int) []byte {
	t.Helper()
	tb, cb, mb, kb := f.tenant.Bytes(), f.conv.Bytes(), mid.Bytes(), contract.U128(cmid).Bytes()
	body := make([]byte, bodyLen)
	for i := range body {
		body[i] = byte('a' + i%26)
	}
	rec := &internalv1.MessageRecord{
		TenantId: tb[:], ConversationId: cb[:], ConversationKind: uint32(f.conv.Kind()),
		MessageId: mb[:], SenderUserId: uint64(f.sender), SenderDeviceId: "dev-1",
		ClientMessageId: kb[:], MessageType: 1, Body: body, CreatedAtMs: time.Now().UnixMilli(),
	}
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(rec)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func decodeRecord(t testing.TB, b []byte) *internalv1.MessageRecord {
	t.Helper()
	var rec internalv1.MessageRecord
	if err := proto.Unmarshal(b, &rec); err != nil {
		t.Fatalf("stored record does not decode: %v", err)
	}
	return &rec
}

// reserveOne runs the fused path for one intent and fails t on error.
func reserveOne(t testing.TB, ctx context.Context, s *Store, in Intent) Commit {
	t.Helper()
	cs, errs := s.ReserveAndRecord(ctx, []Intent{in})
	if len(cs) != 1 || len(errs) != 1 {
		t.Fatalf("got %d commits, %d errors for one intent", len(cs), len(errs))
	}
	if errs[0] != nil {
		t.Fatalf("reserve_and_record: %v", errs[0])
	}
	return cs[0]
}

func counter(t testing.TB, rdb *redis.Client, f fixture) uint64 {
	t.Helper()
	n, err := New(rdb).LatestSeq(testCtx(t), f.tenant, f.conv)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// dialTo returns a dialer that connects to addr whatever address the client was configured with.
func dialTo(addr string) func(ctx context.Context, network, _ string) (net.Conn, error) {
	return func(ctx context.Context, network, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, addr)
	}
}
