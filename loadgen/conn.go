package loadgen

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/qim-dev/qim/contract"
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

// lgConn is one frame-level device connection of the run: a message connection, whose role is
// one side of a 1:1 pair (sending to and receiving from its peer) or one member of a group
// (sending to the group and receiving every member's messages), or a PING control connection,
// which has no role. Its socket is a link (link.go); with Config.Reconnect a lost link is
// replaced and the connection lives on.
//
// Invariants: exactly one goroutine reads the socket (the supervisor, running readLoop on the
// live link) and it never blocks on anything but the socket and one bounded hand-off to the
// pull worker, so ACK, PUSH and PONG timestamps are taken the moment a frame is decoded; every
// write goes through the live link's one wire.Writer; a SEND is in pending from before its
// frame is written until its answer, its timeout or the loss of its link, and holds one
// in-flight permit until it is answered or the link is lost — a timeout does not return the
// permit, because the SEND is still queued in the system and the window exists to bound what
// the generator has outstanding there. Request ids are per connection, not per link, so an
// answer can never be matched to a request of another link.
//
// How: four goroutines per message connection, all owned by the run's WaitGroup — supervise
// (reads the live link, settles what a lost link leaves pending, redials), sendLoop (scheduled
// arrivals from a bounded queue), pullLoop (coalesced PULL_MAILBOX after pushes) and maintain
// (timeouts and heartbeat). Only the supervisor is tied to a link; the other three outlive
// links, take the live one when they write and wait (or skip) while there is none, and end when
// the connection is gone. A control connection has supervise and pingLoop.
//
// Rejected alternatives: the request/response client of gates/e2e (one goroutine and one
// channel per call) cannot keep thousands of SENDs in flight on one connection without a
// goroutine per message, and its timestamps include a channel hand-off and a scheduler wake-up.
// Restarting all four goroutines per link was rejected too: the pull cursor, the sendLoop's
// buffers and the "every sendLoop has returned" signal the end of the window waits for would
// have to be handed from one generation to the next, and a connection between links would have
// no goroutine to take its scheduled arrivals.
type lgConn struct {
	r       *runState
	idx     int
	user    contract.UserID
	role    connRole // a *directSide or a *groupMember; nil on a control connection
	install contract.U128
	nextID  atomic.Uint32

	jobs       chan time.Time // scheduled arrivals (intended times)
	permits    chan struct{}  // in-flight SEND permits
	pullNeeded chan struct{}  // cap 1: coalesces pull requests
	batches    chan pullAnswer
	pullID     atomic.Uint32
	stored     chan pullAnswer // HISTORY_BATCH answers for the stored read (stored.go)
	storedID   atomic.Uint32
	sendDone   atomic.Bool // sendLoop returned

	lmu       sync.Mutex
	cur       *link         // the live link; nil while reconnecting and after the end
	up        chan struct{} // closed when the next link is installed
	shut      bool          // closed for good: no link is installed any more
	gone      chan struct{} // closed when the supervisor returns: no link will ever come
	kickDelay atomic.Int64  // retry_after_ms of the last KICKED, as a Duration

	mu      sync.Mutex
	pending map[uint32]*pendingReq
	ring    []ringEntry // pending requests in send order, for timeouts
	head    int
}

// connRole is what a message connection does in the run's mode: one side of a 1:1 pair
// (*directSide) or one member of a group (*groupMember). The mode is the type, so no code reads
// a field of the other mode; a control connection has no role.
type connRole interface {
	// ledger is the connection's sends: a *flow to the peer or the member's *groupFlow.
	ledger() sendLedger
	// conversation is the conversation id as SEND_ACKs name it, shared with the peer or the group.
	conversation() *pairConv
}

// directSide is a connection's half of a 1:1 pair.
type directSide struct {
	peer    *lgConn
	out, in *flow // this connection → peer, and peer → this connection
	pair    *pairConv
}

func (d *directSide) ledger() sendLedger      { return d.out }
func (d *directSide) conversation() *pairConv { return d.pair }

// direct is c's side of its pair; nil in group mode and on control connections.
func (c *lgConn) direct() *directSide { d, _ := c.role.(*directSide); return d }

// member is c's place in its group; nil in direct mode and on control connections.
func (c *lgConn) member() *groupMember { m, _ := c.role.(*groupMember); return m }

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
	l, err := r.dialLink(ctx, user)
	if err != nil {
		return nil, err
	}
	c := &lgConn{r: r, idx: idx, user: user, pending: map[uint32]*pendingReq{}, install: r.installFor(idx),
		up: make(chan struct{}), gone: make(chan struct{})}
	c.installLink(l)
	return c, nil
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
