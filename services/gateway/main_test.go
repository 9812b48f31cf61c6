package gateway

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"io"
	"log/slog"
	"os"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/contract/devtoken"
	"github.com/qim-dev/qim/gates/itest"
	internalv1 "github.com/qim-dev/qim/proto/qiminternal/v1"
	"github.com/qim-dev/qim/services/internal/rpcauth"
)

func TestMain(m *testing.M) { os.Exit(itest.Main(m)) }

const testSecret = "gateway-test-secret-0123456789"

// harness is a gateway under test: real core Redis (session_epoch), fake writer, mailbox and
// session service behind real gRPC.
type harness struct {
	t       testing.TB
	svc     *Service
	addrs   Addrs
	writer  *fakeWriter
	mailbox *fakeMailbox
	session *fakeSession
	stop    func() error
}

type harnessOpts struct {
	writer  *fakeWriter
	mailbox *fakeMailbox
	session *fakeSession
	mutate  func(*Config)
	// untilExpiry replaces how long a session waits for its credential's expiry (watchExpiry),
	// so a test ends sessions without racing a short-lived token against a busy machine.
	untilExpiry func(time.Time) time.Duration
}

func startGateway(t testing.TB, o harnessOpts) *harness {
	t.Helper()
	ep := itest.Endpoints(t)
	if o.writer == nil {
		o.writer = newFakeWriter(false)
	}
	if o.mailbox == nil {
		o.mailbox = &fakeMailbox{}
	}
	if o.session == nil {
		o.session = &fakeSession{}
	}
	writerAddr := serveGRPC(t, func(gs *grpc.Server) { internalv1.RegisterWriterServer(gs, o.writer) })
	mailboxAddr := serveGRPC(t, func(gs *grpc.Server) { internalv1.RegisterMailboxServer(gs, o.mailbox) })
	sessionAddr := serveGRPC(t, func(gs *grpc.Server) { internalv1.RegisterSessionServer(gs, o.session) })
	roomAddr := serveGRPC(t, func(gs *grpc.Server) { internalv1.RegisterRoomWriterServer(gs, newFakeRoom()) })
	cfg := Config{ListenAddr: "127.0.0.1:0", WSListenAddr: "127.0.0.1:0", PushListenAddr: "127.0.0.1:0", MetricsAddr: "127.0.0.1:0",
		WriterAddrs: []string{writerAddr}, MailboxAddrs: []string{mailboxAddr}, SessionAddrs: []string{sessionAddr}, RoomAddrs: []string{roomAddr}, RedisAddr: ep.RedisCore,
		TokenSecret: Secret(testSecret), RPC: rpcauth.Config{PlaintextLoopback: true},
		// Every test connects from 127.0.0.1 and many refuse credentials on purpose: the
		// per-address limit is off here but where a test sets it (auth_rate_limited).
		AuthFailureBurst: 1_000_000}
	if o.mutate != nil {
		o.mutate(&cfg)
	}
	svc, err := New(cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	if o.untilExpiry != nil {
		svc.untilExpiry = o.untilExpiry
	}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- svc.Run(ctx) }()
	select {
	case <-svc.Ready():
	case err := <-errc:
		cancel()
		t.Fatalf("gateway did not start: %v", err)
	case <-time.After(30 * time.Second):
		cancel()
		t.Fatal("gateway did not start within 30 s")
	}
	h := &harness{t: t, svc: svc, addrs: svc.Addrs(), writer: o.writer, mailbox: o.mailbox, session: o.session}
	stopped := false
	h.stop = func() error {
		if stopped {
			return nil
		}
		stopped = true
		cancel()
		return <-errc
	}
	t.Cleanup(func() {
		if err := h.stop(); err != nil {
			t.Errorf("gateway stopped with error: %v", err)
		}
	})
	return h
}

// identity is one (tenant, user, device) with a valid token.
type identity struct {
	tenant contract.TenantID
	user   contract.UserID
	device string
	token  string
}

// newIdentity mints a token for a user no other test uses, so tests share one Redis safely.
func newIdentity(t testing.TB, device string) identity {
	t.Helper()
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	id := identity{tenant: contract.TenantID{Hi: binary.BigEndian.Uint64(b[:8])}, user: contract.UserID(binary.BigEndian.Uint64(b[8:])>>1 | 1), device: device}
	id.token = issue(t, id, time.Hour)
	return id
}

func issue(t testing.TB, id identity, ttl time.Duration) string {
	t.Helper()
	tok, err := devtoken.Issue([]byte(testSecret), devtoken.Claims{Tenant: id.tenant, User: id.user, Device: id.device,
		ExpiresAtMs: time.Now().Add(ttl).UnixMilli()})
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// login dials TCP and authenticates id.
func (h *harness) login(id identity) *client {
	h.t.Helper()
	c := dialTCP(h.t, h.addrs.TCP)
	c.auth(id.token, 0)
	return c
}

// pushClient dials the gateway's Push service as the MailboxNode would.
func (h *harness) pushClient() internalv1.PushClient {
	h.t.Helper()
	cc, err := grpc.NewClient(h.addrs.Push, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(func() { _ = cc.Close() })
	return internalv1.NewPushClient(cc)
}

// eventually polls cond until it holds or fails the test after timeout.
func eventually(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
