package gateway

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/coder/websocket"
	"google.golang.org/protobuf/proto"

	"github.com/qim-dev/qim/contract"
	qimv1 "github.com/qim-dev/qim/proto/qim/v1"
	"github.com/qim-dev/qim/wire"
)

// client is a frame-level test client: it writes raw frames (so tests can also write broken
// ones) and reads logical messages with the real wire.Reader.
//
// A goroutine reads into a channel, because a wire.Reader's errors are sticky: a read timeout
// would end the stream, and tests need "nothing arrives for 300 ms" without ending it.
type client struct {
	t     testing.TB
	nc    net.Conn
	in    chan readResult
	reqID uint32
	err   error // terminal read error, once seen
}

type readResult struct {
	m   wire.Message
	err error
}

func newClient(t testing.TB, nc net.Conn) *client {
	t.Helper()
	c := &client{t: t, nc: nc, in: make(chan readResult, 64)}
	done := make(chan struct{})
	go func() {
		defer close(done)
		r := wire.NewReader(nc)
		for {
			m, err := r.ReadMessage()
			c.in <- readResult{m, err}
			if err != nil {
				return
			}
		}
	}()
	t.Cleanup(func() { _ = nc.Close(); <-done })
	return c
}

func dialTCP(t testing.TB, addr string) *client {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	return newClient(t, nc)
}

func dialTLS(t testing.TB, addr string, cfg *tls.Config) *client {
	t.Helper()
	nc, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", addr, cfg)
	if err != nil {
		t.Fatalf("dial tls %s: %v", addr, err)
	}
	return newClient(t, nc)
}

func dialWS(t testing.TB, addr string) *client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	wc, resp, err := websocket.Dial(ctx, "ws://"+addr+wsPath, nil)
	if resp != nil && resp.Body != nil {
		_ = resp.Body.Close()
	}
	if err != nil {
		t.Fatalf("dial ws %s: %v", addr, err)
	}
	return newClient(t, websocket.NetConn(context.Background(), wc, websocket.MessageBinary))
}

// nextID returns a fresh request id.
func (c *client) nextID() uint32 {
	c.reqID++
	return c.reqID
}

// writeRaw writes bytes as they are.
func (c *client) writeRaw(b []byte) {
	c.t.Helper()
	_ = c.nc.SetWriteDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.nc.Write(b); err != nil {
		c.t.Fatalf("client write: %v", err)
	}
}

// writeBytes frames payload under op and request id.
func (c *client) writeBytes(op contract.Opcode, reqID uint32, payload []byte) {
	c.t.Helper()
	stream := wire.DataStream
	if op.IsControl() {
		stream = wire.ControlStream
	}
	b, err := wire.AppendMessage(nil, wire.Message{Opcode: op, StreamID: stream, RequestID: reqID, Payload: payload})
	if err != nil {
		c.t.Fatalf("encode frame: %v", err)
	}
	c.writeRaw(b)
}

// write frames a protobuf message and returns its request id.
func (c *client) write(op contract.Opcode, msg proto.Message) uint32 {
	c.t.Helper()
	b, err := proto.Marshal(msg)
	if err != nil {
		c.t.Fatal(err)
	}
	id := c.nextID()
	c.writeBytes(op, id, b)
	return id
}

// read returns the next message or fails the test after timeout.
func (c *client) read(timeout time.Duration) wire.Message {
	c.t.Helper()
	m, err := c.tryRead(timeout)
	if err != nil {
		c.t.Fatalf("client read: %v", err)
	}
	return m
}

// errReadTimeout is what tryRead returns when nothing arrived in time; the stream stays usable.
var errReadTimeout = errors.New("client: read timeout")

func (c *client) tryRead(timeout time.Duration) (wire.Message, error) {
	if c.err != nil {
		return wire.Message{}, c.err
	}
	select {
	case r := <-c.in:
		if r.err != nil {
			c.err = r.err
		}
		return r.m, r.err
	case <-time.After(timeout):
		return wire.Message{}, errReadTimeout
	}
}

// expect reads the next message, requires its opcode and decodes it into msg (may be nil).
func (c *client) expect(op contract.Opcode, msg proto.Message) wire.Message {
	c.t.Helper()
	m := c.read(5 * time.Second)
	if m.Opcode != op {
		detail := ""
		if m.Opcode == contract.OpError {
			var e qimv1.ErrorFrame
			_ = proto.Unmarshal(m.Payload, &e)
			detail = " " + contract.ErrorCode(e.GetCode()).String() + ": " + e.GetMessage()
		}
		c.t.Fatalf("got %v%s, want %v", m.Opcode, detail, op)
	}
	if msg != nil {
		if err := proto.Unmarshal(m.Payload, msg); err != nil {
			c.t.Fatalf("decode %v: %v", op, err)
		}
	}
	return m
}

// expectError reads an ERROR frame and checks its code and request id.
func (c *client) expectError(code contract.ErrorCode, reqID uint32) *qimv1.ErrorFrame {
	c.t.Helper()
	var e qimv1.ErrorFrame
	m := c.expect(contract.OpError, &e)
	if contract.ErrorCode(e.GetCode()) != code {
		c.t.Fatalf("ERROR code %v (%s), want %v", contract.ErrorCode(e.GetCode()), e.GetMessage(), code)
	}
	if m.RequestID != reqID {
		c.t.Fatalf("ERROR request id %d, want %d", m.RequestID, reqID)
	}
	return &e
}

// expectClosed requires the server to close the connection (EOF or reset) within timeout,
// skipping at most a few frames still in flight.
func (c *client) expectClosed(timeout time.Duration) {
	c.t.Helper()
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		m, err := c.tryRead(time.Until(deadline))
		if err == nil {
			c.t.Logf("frame %v before close", m.Opcode)
			continue
		}
		if errors.Is(err, errReadTimeout) {
			break
		}
		return // EOF, reset or a close handshake: closed
	}
	c.t.Fatalf("connection still open after %v", timeout)
}

// expectSilence requires that nothing arrives for d.
func (c *client) expectSilence(d time.Duration) {
	c.t.Helper()
	m, err := c.tryRead(d)
	switch {
	case err == nil:
		c.t.Fatalf("unexpected frame %v", m.Opcode)
	case !errors.Is(err, errReadTimeout):
		c.t.Fatalf("connection ended (%v), want it open and silent", err)
	}
}

// auth sends AUTH and returns AUTH_OK.
func (c *client) auth(token string, cursor uint64) *qimv1.AuthOk {
	c.t.Helper()
	req := &qimv1.AuthRequest{Token: token, ClientVersion: "gateway-test/1"}
	if cursor != 0 {
		req.LastMailboxCursor = &qimv1.MailboxCursor{MailboxSeq: cursor}
	}
	id := c.write(contract.OpAuth, req)
	var ok qimv1.AuthOk
	if m := c.expect(contract.OpAuthOK, &ok); m.RequestID != id {
		c.t.Fatalf("AUTH_OK request id %d, want %d", m.RequestID, id)
	}
	return &ok
}

// ping sends PING and waits for its PONG.
func (c *client) ping() *qimv1.Pong {
	c.t.Helper()
	id := c.write(contract.OpPing, &qimv1.Ping{ClientTimeMs: 12345})
	var p qimv1.Pong
	if m := c.expect(contract.OpPong, &p); m.RequestID != id {
		c.t.Fatalf("PONG request id %d, want %d", m.RequestID, id)
	}
	return &p
}
