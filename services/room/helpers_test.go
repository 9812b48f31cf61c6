package room

import (
	"context"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"google.golang.org/protobuf/proto"

	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/gates/itest"
	qimv1 "github.com/qim-dev/qim/proto/qim/v1"
	internalv1 "github.com/qim-dev/qim/proto/qiminternal/v1"
	"github.com/qim-dev/qim/services/internal/rpcauth"
	"github.com/qim-dev/qim/services/room/modstore"
)

// t0 is a whole Unix second, so RoomSeqBase arithmetic in the tests is exact.
var t0 = time.Unix(1_700_000_000, 0)

// testTenant differs per run: moderation is stored in the stack's core Redis, which a reused
// stack (QIM_IT_ENDPOINTS) keeps between runs, so a fixed tenant would find old bans.
var testTenant = contract.TenantID{Hi: 0x1111, Lo: rand.Uint64()}

func TestMain(m *testing.M) { os.Exit(itest.Main(m)) }

// testRedis is a client of the stack's core Redis, closed with the test.
func testRedis(t testing.TB) *redis.Client {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: itest.Endpoints(t).RedisCore})
	t.Cleanup(func() { _ = rdb.Close() })
	return rdb
}

// clock is a test clock: the service reads it wherever it would read time.Now.
type clock struct{ now time.Time }

func (c *clock) Now() time.Time { return c.now }

func testConfig(mut func(*Config)) Config {
	cfg := Config{ListenAddr: "127.0.0.1:0", MetricsAddr: "127.0.0.1:0", RedisAddr: "127.0.0.1:6379",
		RPC: rpcauth.Config{PlaintextLoopback: true}}
	if mut != nil {
		mut(&cfg)
	}
	return cfg
}

// newTestService is a service that is never Run: its rooms, links and publishes are driven
// directly, on a test clock starting at t0, its moderation stored in the stack's core Redis.
func newTestService(t *testing.T, mut func(*Config)) (*Service, *clock) {
	t.Helper()
	s, err := New(testConfig(mut), slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	clk := &clock{now: t0}
	s.now = clk.Now
	s.mods = modstore.New(testRedis(t))
	return s, clk
}

// roomBytes is a wire room id whose top 4 bits are zero (as a client would send it).
func roomBytes(n uint64) []byte {
	b := contract.U128{Hi: 0x0abc, Lo: n}.Bytes()
	return b[:]
}

// freshRoom is a room no other test (nor an earlier run on a reused stack) has moderated.
func freshRoom() []byte { return roomBytes(rand.Uint64()) }

func cmidBytes(n uint64) []byte {
	b := contract.U128{Lo: n}.Bytes()
	return b[:]
}

func tenantBytes() []byte {
	b := testTenant.Bytes()
	return b[:]
}

// roomConv is the conversation id a wire room id maps to.
func roomConv(t *testing.T, room []byte) contract.ConversationID {
	t.Helper()
	u, err := contract.U128FromBytes(room)
	if err != nil {
		t.Fatal(err)
	}
	c, err := contract.RoomConversationID(u)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// sendReq is a client SendRequest to a room, marshalled as the gateway forwards it.
func sendReq(t *testing.T, room []byte, cmid uint64, body string, mut func(*qimv1.SendRequest)) []byte {
	t.Helper()
	req := &qimv1.SendRequest{ClientMessageId: cmidBytes(cmid), Target: &qimv1.SendRequest_RoomId{RoomId: room},
		MessageType: uint32(contract.MessageText), Body: []byte(body)}
	if mut != nil {
		mut(req)
	}
	b, err := proto.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func publishOf(t *testing.T, sender uint64, room []byte, cmid uint64, body string) *internalv1.RoomPublish {
	t.Helper()
	return &internalv1.RoomPublish{TenantId: tenantBytes(), SenderUserId: sender, SendRequest: sendReq(t, room, cmid, body, nil)}
}

func joinCall(call uint64, room []byte, user uint64, from *uint64) *internalv1.RoomJoinCall {
	return &internalv1.RoomJoinCall{CallId: call, TenantId: tenantBytes(), RoomId: room, UserId: user, ReplayFromRoomSeq: from}
}

func leaveCall(room []byte, user uint64) *internalv1.RoomLeaveCall {
	return &internalv1.RoomLeaveCall{TenantId: tenantBytes(), RoomId: room, UserId: user}
}

func ptr[T any](v T) *T { return &v }

// mustPublish publishes and fails the test on any refusal.
func mustPublish(t *testing.T, s *Service, in *internalv1.RoomPublish) *qimv1.SendAck {
	t.Helper()
	ack, _, err := s.publish(context.Background(), in)
	if err != nil {
		t.Fatalf("publish: %v", err)
	}
	return ack
}

// seqs lists the room_seq of events (empty, not nil, for none).
func seqs(evs []*qimv1.RoomEvent) []uint64 {
	out := []uint64{}
	for _, e := range evs {
		out = append(out, e.GetRoomSeq())
	}
	return out
}

// seqRange is first, first+1, …, last (empty when last < first).
func seqRange(first, last uint64) []uint64 {
	out := []uint64{}
	for s := first; s <= last; s++ {
		out = append(out, s)
	}
	return out
}

// base is the RoomSeqBase of a room instantiated at t0.
func base() uint64 { return contract.RoomSeqBase(t0.Unix()) }
