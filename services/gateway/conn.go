package gateway

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"
	"google.golang.org/protobuf/proto"

	"github.com/qim-dev/qim/contract"
	qimv1 "github.com/qim-dev/qim/proto/qim/v1"
	"github.com/qim-dev/qim/wire"
)

const (
	// lingerTime is how long a connection we close on purpose (KICKED, a failed AUTH) keeps
	// reading after its last frame. Closing a TCP socket with unread input sends RST, and an RST
	// can make the peer's kernel discard the KICKED or ERROR frame before the app has read it.
	lingerTime     = 500 * time.Millisecond
	lingerMaxBytes = 1 << 20
	// kickQueueTimeout bounds how long a KICKED may wait for room in a stuck connection's write
	// queue; the socket write itself is bounded by Config.WriteTimeout.
	kickQueueTimeout = time.Second
)

// conn is one client connection.
//
// Invariants: exactly one goroutine (the read loop, which runs serve) reads the socket and owns
// the AUTH state, the send pipe and the call counter; every downlink frame goes through the one
// wire.Writer, so control frames (PONG, KICKED, ERROR) overtake large batches; every helper
// goroutine (push pump, pull worker, send-outcome receiver) is counted in wg and ends when ctx is
// cancelled, and teardown waits for all of them before it closes the wire.Writer.
//
// How: serve authenticates, starts the push pump, then reads frames and dispatches them by
// opcode. Anything else that must end the connection (a kick, a dead socket seen by a writer)
// calls interrupt, which cancels ctx and expires the read deadline so the read loop returns.
//
// Rejected: a goroutine per request. SENDs are multiplexed on one Writer.SendStream with a
// permit window, pulls go through one bounded worker, pushes through one bounded queue, so a
// connection costs a fixed number of goroutines however fast its client sends.
type conn struct {
	s         *Service
	nc        net.Conn
	hardClose func() error // closes the socket now, without a WebSocket close handshake
	transport string
	r         *wire.Reader
	w         *wire.Writer
	ctx       context.Context
	cancel    context.CancelFunc
	wg        sync.WaitGroup
	kicked    atomic.Bool
	linger    atomic.Bool // a final frame was sent: half-close and drain before closing

	// Set by the read loop during AUTH, before the session is published to the registry.
	sess        *session
	expiresAt   time.Time // the credential's expiry; zero when it has none
	tenantBytes []byte
	sendBucket  *rate.Limiter // the connection's SEND rate limit (ratelimit); nil: none
	typingLimit *rate.Limiter // TYPING frames (contract.TypingPerSecond, TypingBurst)
	hb          beat          // the adaptive heartbeat; owned by the read loop after AUTH
	pushQ       chan []byte
	roomQ       chan outFrame // ROOM_JOINED, ROOM_EVENTS, ROOM_LEFT REQUESTED: FIFO; full = slow consumer
	roomBytes   atomic.Int64  // payload bytes in roomQ (bounded by Config.RoomQueueBytes)
	ctrlQ       chan outFrame // answers and notices from goroutines that must not block

	// Owned by the read loop.
	permits  chan struct{}
	pipes    []*sendPipe // by writer instance; nil until the first SEND
	nextCall uint64
	pullQ    chan pullJob
}

// maxOpenStreams bounds the chunked uplink messages a client may have half-sent at once. The
// wire.Writer never interleaves two data messages and control messages fit one frame, so a
// conforming client needs one; each open stream may buffer up to 4 MiB, so this is also the
// per-connection memory bound a hostile client can force.
const maxOpenStreams = 2

func newConn(s *Service, nc net.Conn, transport string, hardClose func() error) *conn {
	ctx, cancel := context.WithCancel(context.Background())
	if hardClose == nil {
		hardClose = nc.Close
	}
	return &conn{
		s: s, nc: nc, hardClose: hardClose, transport: transport, ctx: ctx, cancel: cancel,
		r: wire.NewReader(nc, wire.WithMaxStreams(maxOpenStreams)),
		w: wire.NewWriter(deadlineWriter{nc: nc, timeout: s.cfg.WriteTimeout}),
	}
}

// deadlineWriter bounds every socket write, so a client that stops reading fails its writes
// (and is closed) instead of pinning the wire.Writer and whoever waits on it.
type deadlineWriter struct {
	nc      net.Conn
	timeout time.Duration
}

func (d deadlineWriter) Write(p []byte) (int, error) {
	if err := d.nc.SetWriteDeadline(time.Now().Add(d.timeout)); err != nil {
		return 0, err
	}
	return d.nc.Write(p)
}

// serve runs the connection to its end; the caller has admitted it.
func (c *conn) serve() {
	defer c.s.releaseConn(c)
	defer c.teardown()
	if !c.authenticate() {
		return
	}
	defer c.watchExpiry()()
	c.wg.Add(1)
	go c.pumpPushes()
	c.readLoop()
}

// watchExpiry ends the session when its credential does: KICKED{CREDENTIAL_EXPIRED}, after
// which the client reconnects with a fresh token. The timer calls kick on its own goroutine
// (not kickAsync: it may fire while the connection is ending, after its WaitGroup slot is gone);
// kick's compare-and-swap makes a kick racing another one a no-op. The returned func stops it.
func (c *conn) watchExpiry() (stop func()) {
	if c.expiresAt.IsZero() {
		return func() {}
	}
	t := time.AfterFunc(c.s.untilExpiry(c.expiresAt), func() {
		c.kick(contract.KickCredentialExpired, "the token expired: reconnect with a fresh one", 0)
	})
	return func() { t.Stop() }
}

// interrupt ends the connection from any goroutine: cancel first, then expire the read
// deadline, so the read loop either sees the cancellation before its next read or is woken
// from the read it is in.
func (c *conn) interrupt() {
	c.cancel()
	_ = c.nc.SetReadDeadline(time.Unix(1, 0))
}

// kick sends KICKED and closes the connection. It runs on a goroutine of its own (see
// Service.kickAsync) because the socket write may take up to WriteTimeout.
func (c *conn) kick(reason contract.KickReason, detail string, retryAfterMs uint32) {
	if !c.kicked.CompareAndSwap(false, true) {
		return
	}
	c.s.m.kicks.WithLabelValues(kickLabel(reason)).Inc()
	payload, _ := proto.Marshal(&qimv1.Kicked{Reason: uint32(reason), Detail: detail, RetryAfterMs: retryAfterMs})
	ctx, cancel := context.WithTimeout(c.ctx, kickQueueTimeout)
	if c.w.Send(ctx, wire.Message{Opcode: contract.OpKicked, Payload: payload}) == nil {
		c.linger.Store(true)
	}
	cancel()
	c.interrupt()
}

func kickLabel(r contract.KickReason) string {
	switch r {
	case contract.KickReplaced:
		return "replaced"
	case contract.KickServerDrain:
		return "server_drain"
	case contract.KickLoggedOut:
		return "logged_out"
	case contract.KickBanned:
		return "banned"
	case contract.KickCredentialExpired:
		return "credential_expired"
	case contract.KickByAdmin:
		return "kicked_by_admin"
	}
	return "unspecified"
}

// teardown releases everything the connection holds, in an order that cannot deadlock: leave
// the registry (no new pushes), cancel helpers, half-close the writer streams, close the socket
// (unblocks their writes), wait for them — the outcome receiver until the writer has answered
// what it holds, at most BackendTimeout — then close the wire.Writer.
func (c *conn) teardown() {
	if c.sess != nil && c.s.registry.unregister(c.sess) && c.s.presence != nil {
		c.s.presence.publish(c.ctx, c.sess, false)
	}
	if c.s.rooms != nil && c.sess != nil {
		c.s.rooms.hub.dropConn(c)
	}
	c.cancel()
	for _, p := range c.pipes {
		if p != nil && !p.isDead() {
			// Half-close: the writer finishes the SENDs it already holds (see openPipe). The
			// read loop has returned, so no Send can run concurrently with CloseSend.
			_ = p.stream.CloseSend()
		}
	}
	if c.linger.Load() {
		c.lingerClose()
	}
	_ = c.nc.Close()
	c.wg.Wait()
	_ = c.w.Close()
	c.drainPulls()
}

// lingerClose half-closes a TCP or TLS socket after its final frame and reads what the peer
// still sends for a moment, so the close is a FIN the peer reads after our frame, not an RST.
// WebSocket closes with its own handshake in Close.
func (c *conn) lingerClose() {
	cw, ok := c.nc.(interface{ CloseWrite() error })
	if !ok || cw.CloseWrite() != nil {
		return
	}
	_ = c.nc.SetReadDeadline(time.Now().Add(lingerTime))
	_, _ = io.Copy(io.Discard, io.LimitReader(c.nc, lingerMaxBytes))
}

// readFailed classifies why reading stopped and counts it. A malformed frame closes the
// connection at once (no resync); an oversize one is answered with PAYLOAD_TOO_LARGE first,
// since the client can act on that. beforeAuth selects the counter a timeout goes to.
func (c *conn) readFailed(err error, beforeAuth bool) {
	switch {
	case c.ctx.Err() != nil, errors.Is(err, io.EOF):
		return // we closed it, or the client did
	case isTimeout(err):
		if beforeAuth {
			c.s.m.authFailures.WithLabelValues("timeout").Inc()
		} else {
			c.s.m.heartbeatClosed.Inc()
		}
		return
	}
	reason := wireReason(err)
	if reason == "" {
		return // a network failure, not the client's framing
	}
	c.s.m.framesRejected.WithLabelValues(reason).Inc()
	c.s.log.Debug("gateway: closing connection on malformed frame", "transport", c.transport, "reason", reason)
	if errors.Is(err, wire.ErrOversize) {
		c.finalError(0, 0, contract.ErrCodePayloadTooLarge, "frame above the contract's payload limit")
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.Is(err, os.ErrDeadlineExceeded) || errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, context.Canceled) || (errors.As(err, &ne) && ne.Timeout())
}

// wireReason maps the wire package's decode errors onto the frames-rejected label.
func wireReason(err error) string {
	for _, r := range []struct {
		err    error
		reason string
	}{
		{wire.ErrBadMagic, "bad_magic"}, {wire.ErrBadVersion, "bad_version"}, {wire.ErrBadCRC, "bad_crc"},
		{wire.ErrBadFlags, "bad_flags"}, {wire.ErrOversize, "oversize"}, {wire.ErrProtocol, "protocol"},
		{wire.ErrCompression, "compression"},
	} {
		if errors.Is(err, r.err) {
			return r.reason
		}
	}
	return ""
}
