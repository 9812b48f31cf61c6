package writer

import (
	"context"
	"crypto/rand"
	"io"
	"log/slog"
	"os"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/gates/itest"
	qimv1 "github.com/qim-dev/qim/proto/qim/v1"
	internalv1 "github.com/qim-dev/qim/proto/qiminternal/v1"
)

func TestMain(m *testing.M) {
	code := itest.Main(m)
	removeTestCerts()
	os.Exit(code)
}

// testWriter is an in-process ConversationWriter against the package's real stack.
type testWriter struct {
	svc    *Service
	client internalv1.WriterClient
	stop   func() error
}

func startWriter(t testing.TB, mutate func(*Config)) *testWriter {
	t.Helper()
	ep := itest.Endpoints(t)
	cfg := Config{RedisAddr: ep.RedisCore, KafkaBrokers: ep.KafkaBrokers, ListenAddr: "127.0.0.1:0",
		MetricsAddr: "127.0.0.1:0", RecoveryInterval: 100 * time.Millisecond, RecoveryGrace: 200 * time.Millisecond,
		RPC: writerRPC(t)}
	if mutate != nil {
		mutate(&cfg)
	}
	svc, err := New(cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- svc.Run(ctx) }()
	deadline := time.Now().Add(30 * time.Second)
	for svc.GRPCAddr() == "" {
		select {
		case err := <-errc:
			cancel()
			t.Fatalf("writer did not start: %v", err)
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			cancel()
			t.Fatal("writer did not start within 30 s")
		}
	}
	conn, err := grpc.NewClient(svc.GRPCAddr(), dialAs(t, "gateway"))
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	w := &testWriter{svc: svc, client: internalv1.NewWriterClient(conn)}
	stopped := false
	w.stop = func() error {
		if stopped {
			return nil
		}
		stopped = true
		conn.Close()
		cancel()
		return <-errc
	}
	t.Cleanup(func() {
		if err := w.stop(); err != nil {
			t.Errorf("writer stopped with error: %v", err)
		}
	})
	return w
}

// sendSpec describes one client send for tests.
type sendSpec struct {
	tenant      contract.TenantID
	sender      contract.UserID
	peer        contract.UserID
	cmid        []byte
	body        []byte
	messageType uint32
	customType  string
}

func newCmid(t testing.TB) []byte {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return b
}

func sendRequest(s sendSpec) *internalv1.AuthenticatedSend {
	req, _ := proto.Marshal(&qimv1.SendRequest{ClientMessageId: s.cmid, Target: &qimv1.SendRequest_PeerUserId{PeerUserId: uint64(s.peer)},
		MessageType: s.messageType, CustomType: s.customType, Body: s.body})
	tenant := s.tenant.Bytes()
	return &internalv1.AuthenticatedSend{TenantId: tenant[:], SenderUserId: uint64(s.sender), SenderDeviceId: "d1", SendRequest: req}
}

func (w *testWriter) send(t testing.TB, s sendSpec) *internalv1.SendOutcome {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	out, err := w.client.SendMessage(ctx, sendRequest(s))
	if err != nil {
		t.Fatalf("SendMessage rpc: %v", err)
	}
	return out
}

func mustAck(t testing.TB, o *internalv1.SendOutcome) *qimv1.SendAck {
	t.Helper()
	if o.GetAck() == nil {
		t.Fatalf("expected ACK, got error %s: %s", contract.ErrorCode(o.GetErrorCode()), o.GetErrorMessage())
	}
	return o.GetAck()
}

func wantCode(t testing.TB, o *internalv1.SendOutcome, code contract.ErrorCode) {
	t.Helper()
	if o.GetAck() != nil || contract.ErrorCode(o.GetErrorCode()) != code {
		t.Fatalf("want %s, got ack=%v code=%s (%s)", code, o.GetAck() != nil, contract.ErrorCode(o.GetErrorCode()), o.GetErrorMessage())
	}
}

// uniqueUsers returns two user ids no other test uses, so tests share one stack safely.
func uniqueUsers(t testing.TB) (contract.UserID, contract.UserID) {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	base := contract.UserID(uint64(b[0])<<40|uint64(b[1])<<32|uint64(b[2])<<24|uint64(b[3])<<16) | 1
	return base, base + 1
}

func mailboxRedis(t testing.TB) string { return itest.Endpoints(t).RedisMailbox }
