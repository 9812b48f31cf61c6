package sdk

import (
	"context"
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/qim-dev/qim/contract"
	qimv1 "github.com/qim-dev/qim/proto/qim/v1"
	"github.com/qim-dev/qim/wire"
)

// fakeGateway accepts connections and runs script on each; it counts accepted connections.
type fakeGateway struct {
	ln       net.Listener
	accepted atomic.Int32
	wg       sync.WaitGroup
}

func startFakeGateway(t *testing.T, script func(conn net.Conn, r *wire.Reader, w *wire.Writer)) *fakeGateway {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g := &fakeGateway{ln: ln}
	g.wg.Add(1)
	go func() {
		defer g.wg.Done()
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			g.accepted.Add(1)
			g.wg.Add(1)
			go func() {
				defer g.wg.Done()
				defer conn.Close()
				w := wire.NewWriter(conn)
				defer w.Close()
				script(conn, wire.NewReader(conn), w)
			}()
		}
	}()
	t.Cleanup(func() { ln.Close(); g.wg.Wait() })
	return g
}

func reply(w *wire.Writer, op contract.Opcode, id uint32, m proto.Message) {
	b, _ := proto.Marshal(m)
	_ = w.Send(context.Background(), wire.Message{Opcode: op, RequestID: id, Payload: b})
}

// serveAuthAndEmptyMailbox answers AUTH and every PULL_MAILBOX with an empty batch, then calls
// after (if any) once the client is reconciled; after returning true closes the connection.
func serveAuthAndEmptyMailbox(after func(w *wire.Writer) bool) func(net.Conn, *wire.Reader, *wire.Writer) {
	return func(_ net.Conn, r *wire.Reader, w *wire.Writer) {
		for {
			m, err := r.ReadMessage()
			if err != nil {
				return
			}
			switch m.Opcode {
			case contract.OpAuth:
				reply(w, contract.OpAuthOK, m.RequestID, &qimv1.AuthOk{UserId: uint64(self), SessionEpoch: 1, HeartbeatIntervalMs: 60000})
			case contract.OpPullMailbox:
				reply(w, contract.OpMailboxBatch, m.RequestID, &qimv1.MailboxBatch{NextCursor: &qimv1.MailboxCursor{}})
				if after != nil {
					if after(w) {
						return
					}
					after = nil
				}
			case contract.OpPullSessionList:
				reply(w, contract.OpSessionListBatch, m.RequestID, &qimv1.SessionListBatch{})
			case contract.OpPing:
				reply(w, contract.OpPong, m.RequestID, &qimv1.Pong{})
			}
		}
	}
}

func openTestClient(t *testing.T, addr string) *Client {
	t.Helper()
	c, err := Open(Config{DataDir: t.TempDir(), Endpoint: contract.Endpoint{Address: addr, Mode: contract.ModeTCP},
		User: self, Device: "d1", Token: StaticToken("tok"), ReconnectMin: 50 * time.Millisecond, ReconnectMax: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// waitEvent returns the first event of type T, or fails after d.
func waitEvent[T Event](t *testing.T, c *Client, d time.Duration) T {
	t.Helper()
	timeout := time.After(d)
	for {
		select {
		case ev, ok := <-c.Events():
			if !ok {
				t.Fatal("events closed")
			}
			if e, ok := ev.(T); ok {
				return e
			}
		case <-timeout:
			var zero T
			t.Fatalf("no %T within %v", zero, d)
		}
	}
}

// KICKED{REPLACED}: a Kicked event, the loop stops and does not dial again — also when the
// server closes the socket right after the frame, as the gateway does (the end of the stream and
// the KICKED frame then race in the connection goroutine; repeated to give the race its chances).
func TestKickedClientDoesNotReconnect(t *testing.T) {
	for i := 0; i < 10; i++ {
		kickedOnce(t, i%2 == 0)
	}
}

func kickedOnce(t *testing.T, closeAfterKick bool) {
	g := startFakeGateway(t, serveAuthAndEmptyMailbox(func(w *wire.Writer) bool {
		reply(w, contract.OpKicked, 0, &qimv1.Kicked{Reason: uint32(contract.KickReplaced)})
		return closeAfterKick // the socket closes right behind the frame
	}))
	c := openTestClient(t, g.ln.Addr().String())
	if err := c.Connect(context.Background()); err != nil {
		t.Fatal(err)
	}
	if k := waitEvent[Kicked](t, c, 5*time.Second); k.Reconnect || k.Reason != contract.KickReplaced {
		t.Fatalf("kicked event %+v", k)
	}
	if off := waitEvent[Offline](t, c, 5*time.Second); off.Retry || !errors.Is(off.Err, ErrKicked) {
		t.Fatalf("offline after kick %+v, want a final one", off)
	}
	time.Sleep(300 * time.Millisecond) // several backoff periods
	if n := g.accepted.Load(); n != 1 {
		t.Fatalf("a replaced client dialled %d times, want 1", n)
	}
	// An explicit Connect (the user logs in again) is allowed.
	if err := c.Connect(context.Background()); err != nil {
		t.Fatalf("Connect after a kick: %v", err)
	}
}

// A gateway that accepts but never answers is reported within contract.UnavailableDetectMax.
func TestSilentGatewayReportedWithinDetectMax(t *testing.T) {
	g := startFakeGateway(t, func(conn net.Conn, r *wire.Reader, _ *wire.Writer) {
		for {
			if _, err := r.ReadMessage(); err != nil {
				return
			}
		}
	})
	c := openTestClient(t, g.ln.Addr().String())
	start := time.Now()
	if err := c.Connect(context.Background()); err != nil {
		t.Fatal(err)
	}
	off := waitEvent[Offline](t, c, 10*time.Second)
	took := time.Since(start)
	if !off.Retry || !errors.Is(off.Err, errDead) {
		t.Fatalf("offline %+v, want a retrying errDead", off)
	}
	if took > contract.UnavailableDetectMax+500*time.Millisecond {
		t.Fatalf("unavailability reported after %v, contract says %v", took, contract.UnavailableDetectMax)
	}
}

// Offline: Send is pending at once and survives Close; nothing waits for a network.
func TestOfflineSendIsPendingImmediately(t *testing.T) {
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := ln.Addr().String()
	ln.Close() // nothing listens: every dial fails
	dir := t.TempDir()
	cfg := Config{DataDir: dir, Endpoint: contract.Endpoint{Address: addr, Mode: contract.ModeTCP},
		User: self, Device: "d1", Token: StaticToken("tok")}
	c, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Connect(context.Background()); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	cmid, err := c.Send(context.Background(), peer, []byte("while offline"), SendOptions{})
	if err != nil || time.Since(start) > time.Second {
		t.Fatalf("offline Send: %v after %v", err, time.Since(start))
	}
	p, _ := c.Pending(context.Background())
	if len(p) != 1 || p[0].ClientMessageID != cmid {
		t.Fatalf("pending %+v, want the send", p)
	}
	if err := c.Close(); err != nil { // never read Events: Close must not hang on the queue
		t.Fatal(err)
	}
	c, err = Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if p, _ = c.Pending(context.Background()); len(p) != 1 || p[0].ClientMessageID != cmid {
		t.Fatalf("after reopen pending %+v, want the same send", p)
	}
}
