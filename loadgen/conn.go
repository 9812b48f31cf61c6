package loadgen

import (
	"context"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/contract/devtoken"
	qimv1 "github.com/qim-dev/qim/proto/qim/v1"
	"github.com/qim-dev/qim/wire"
)

// deviceID is the device every loadgen user logs in with (one device per user).
const deviceID = "loadgen"

// Request kinds in a connection's pending table.
const (
	kindSend uint8 = iota + 1
	kindPing       // control-group PING: its RTT is a sample
	kindBeat       // heartbeat PING of a message connection: keeps it alive, not measured
)

// lgConn is one frame-level device connection of the run: a message connection (one side of a
// 1:1 pair, sending to and receiving from its peer) or a PING control connection.
//
// Invariants: exactly one goroutine reads the socket (readLoop) and it never blocks on
// anything but the socket and one bounded hand-off to the pull worker, so ACK, PUSH and PONG
// timestamps are taken the moment a frame is decoded; every write goes through the one
// wire.Writer; a SEND is in pending from before its frame is written until its answer, its
// timeout or the loss of the connection, and holds one in-flight permit until it is answered or
// the connection is lost — a timeout does not return the permit, because the SEND is still
// queued in the system and the window exists to bound what the generator has outstanding there.
//
// How: four goroutines per message connection — readLoop, sendLoop (scheduled arrivals from a
// bounded queue), pullLoop (coalesced PULL_MAILBOX after pushes) and maintain (timeouts and
// heartbeat) — all owned by the run's WaitGroup. A control connection has readLoop and
// pingLoop.
//
// Rejected alternative: the request/response client of gates/e2e (one goroutine and one channel
// per call). It cannot keep thousands of SENDs in flight on one connection without a goroutine
// per message, and its timestamps include a channel hand-off and a scheduler wake-up.
type lgConn struct {
	r       *runState
	idx     int
	user    contract.UserID
	peer    *lgConn // nil on control connections
	out, in *flow   // this connection → peer; peer → this connection
	install contract.U128
	nc      net.Conn
	rd      *wire.Reader
	w       *wire.Writer
	beat    time.Duration // heartbeat interval from AUTH_OK
	nextID  atomic.Uint32

	jobs       chan time.Time // scheduled arrivals (intended times)
	permits    chan struct{}  // in-flight SEND permits
	pullNeeded chan struct{}  // cap 1: coalesces pull requests
	batches    chan pullAnswer
	pullID     atomic.Uint32
	sendDone   atomic.Bool   // sendLoop returned
	closed     chan struct{} // closed when readLoop returns

	mu      sync.Mutex
	pending map[uint32]*pendingReq
	ring    []ringEntry // pending requests in send order, for timeouts
	head    int
}

type pendingReq struct {
	kind     uint8
	ord      uint64
	at       time.Time
	timedOut bool
}

type ringEntry struct {
	id       uint32
	deadline time.Time
}

type pullAnswer struct {
	m   wire.Message
	at  time.Time
	err error
}

// dial connects and authenticates one user synchronously, before any goroutine exists, so the
// AUTH exchange needs no request table.
func dial(ctx context.Context, r *runState, idx int, user contract.UserID) (*lgConn, error) {
	cfg := &r.cfg
	var d net.Dialer
	nc, err := d.DialContext(ctx, "tcp", cfg.Gateway)
	if err != nil {
		return nil, fmt.Errorf("loadgen: dial %s: %w", cfg.Gateway, err)
	}
	c := &lgConn{r: r, idx: idx, user: user, nc: nc, rd: wire.NewReader(nc), closed: make(chan struct{}),
		pending: map[uint32]*pendingReq{}, install: r.installFor(idx)}
	if err := c.auth(ctx); err != nil {
		nc.Close()
		return nil, err
	}
	c.w = wire.NewWriter(nc)
	return c, nil
}

func (c *lgConn) auth(ctx context.Context) error {
	cfg := &c.r.cfg
	tok, err := devtoken.Issue(cfg.TokenSecret, devtoken.Claims{Tenant: cfg.Tenant, User: c.user, Device: deviceID,
		ExpiresAtMs: time.Now().Add(cfg.Duration + 2*time.Hour).UnixMilli()})
	if err != nil {
		return fmt.Errorf("loadgen: issue token: %w", err)
	}
	payload, err := proto.Marshal(&qimv1.AuthRequest{Token: tok, DeviceId: deviceID, ClientVersion: "qim-loadgen"})
	if err != nil {
		return fmt.Errorf("loadgen: encode AUTH: %w", err)
	}
	frame, err := wire.AppendMessage(nil, wire.Message{Opcode: contract.OpAuth, RequestID: 1, Payload: payload})
	if err != nil {
		return fmt.Errorf("loadgen: frame AUTH: %w", err)
	}
	deadline := time.Now().Add(10 * time.Second)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	_ = c.nc.SetDeadline(deadline)
	defer func() { _ = c.nc.SetDeadline(time.Time{}) }()
	if _, err := c.nc.Write(frame); err != nil {
		return fmt.Errorf("loadgen: write AUTH: %w", err)
	}
	m, err := c.rd.ReadMessage()
	if err != nil {
		return fmt.Errorf("loadgen: read AUTH answer: %w", err)
	}
	if m.Opcode == contract.OpError {
		var e qimv1.ErrorFrame
		_ = proto.Unmarshal(m.Payload, &e)
		return fmt.Errorf("loadgen: AUTH of user %d refused: %s", c.user, contract.ErrorCode(e.GetCode()))
	}
	var ok qimv1.AuthOk
	if m.Opcode != contract.OpAuthOK || proto.Unmarshal(m.Payload, &ok) != nil {
		return fmt.Errorf("loadgen: AUTH answered with %s", m.Opcode)
	}
	c.beat = time.Duration(ok.GetHeartbeatIntervalMs()) * time.Millisecond
	if c.beat <= 0 {
		c.beat = contract.HeartbeatStart
	}
	return nil
}

// register puts a request into the pending table before its frame is written.
func (c *lgConn) register(id uint32, p *pendingReq) {
	c.mu.Lock()
	c.pending[id] = p
	c.ring = append(c.ring, ringEntry{id: id, deadline: p.at.Add(c.r.cfg.AckTimeout)})
	c.mu.Unlock()
}

// take removes and returns the pending request id, if any.
func (c *lgConn) take(id uint32) *pendingReq {
	c.mu.Lock()
	p := c.pending[id]
	delete(c.pending, id)
	c.mu.Unlock()
	return p
}

// release returns the in-flight permit of an answered SEND (timed out or not: a timed-out SEND
// is still queued somewhere in the system, so it keeps its permit until the answer comes).
func (c *lgConn) release(p *pendingReq) {
	if p.kind == kindSend {
		<-c.permits
		c.r.inflight.Add(-1)
	}
}

// close tears the connection down; readLoop then returns.
func (c *lgConn) close() {
	_ = c.nc.Close()
	_ = c.w.Close()
}
