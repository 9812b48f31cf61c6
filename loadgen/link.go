package loadgen

import (
	"context"
	"fmt"
	"net"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/contract/devtoken"
	qimv1 "github.com/qim-dev/qim/proto/qim/v1"
	"github.com/qim-dev/qim/wire"
)

// link is one authenticated socket of a connection: the part that dies with the TCP
// connection. A connection has at most one live link; Config.Reconnect replaces a lost one
// (reconnect.go), and everything else of the connection (pending table, flows, pull cursor,
// queues) survives the swap.
type link struct {
	nc     net.Conn
	rd     *wire.Reader
	w      *wire.Writer
	beat   time.Duration // heartbeat interval from AUTH_OK
	closed chan struct{} // closed once the link is torn down and its reader has returned
}

// down reports whether the link has been retired.
func (l *link) down() bool {
	select {
	case <-l.closed:
		return true
	default:
		return false
	}
}

// teardown closes the socket first (so a writer stuck on a dead peer fails at once), then the
// writer, which waits for its goroutine. Both are idempotent and safe to race.
func (l *link) teardown() {
	_ = l.nc.Close()
	_ = l.w.Close()
}

// dialLink connects and authenticates user.
func (r *runState) dialLink(ctx context.Context, user contract.UserID) (*link, error) {
	var d net.Dialer
	gw := r.cfg.gatewayOf(user)
	nc, err := d.DialContext(ctx, "tcp", gw)
	if err != nil {
		return nil, fmt.Errorf("loadgen: dial %s: %w", gw, err)
	}
	l := &link{nc: nc, rd: wire.NewReader(nc), closed: make(chan struct{})}
	if l.beat, err = r.auth(ctx, l, user); err != nil {
		nc.Close()
		return nil, err
	}
	l.w = wire.NewWriter(nc)
	return l, nil
}

// auth runs the AUTH exchange on a fresh socket and returns the heartbeat interval. It ends
// when ctx does (a redial in progress must not hold up the end of the run): the watcher moves
// the socket's deadline into the past.
func (r *runState) auth(ctx context.Context, l *link, user contract.UserID) (time.Duration, error) {
	frame, err := r.authFrame(user)
	if err != nil {
		return 0, err
	}
	deadline := time.Now().Add(10 * time.Second)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	_ = l.nc.SetDeadline(deadline)
	unwatch := context.AfterFunc(ctx, func() { _ = l.nc.SetDeadline(time.Unix(1, 0)) })
	beat, err := authExchange(l, frame, user)
	if !unwatch() && err == nil {
		err = fmt.Errorf("loadgen: AUTH of user %d: %w", user, ctx.Err()) // the deadline is in the past now
	}
	if err != nil {
		return 0, err
	}
	_ = l.nc.SetDeadline(time.Time{})
	return beat, nil
}

func (r *runState) authFrame(user contract.UserID) ([]byte, error) {
	cfg := &r.cfg
	ttl := cfg.Duration + 2*time.Hour
	var tok string
	var err error
	if cfg.Token != nil {
		tok, err = cfg.Token(user, deviceID, ttl)
	} else {
		tok, err = devtoken.Issue(cfg.TokenSecret, devtoken.Claims{Tenant: cfg.Tenant, User: user, Device: deviceID,
			ExpiresAtMs: time.Now().Add(ttl).UnixMilli()})
	}
	if err != nil {
		return nil, fmt.Errorf("loadgen: issue token: %w", err)
	}
	payload, err := proto.Marshal(&qimv1.AuthRequest{Token: tok, DeviceId: deviceID, ClientVersion: "qim-loadgen"})
	if err != nil {
		return nil, fmt.Errorf("loadgen: encode AUTH: %w", err)
	}
	frame, err := wire.AppendMessage(nil, wire.Message{Opcode: contract.OpAuth, RequestID: 1, Payload: payload})
	if err != nil {
		return nil, fmt.Errorf("loadgen: frame AUTH: %w", err)
	}
	return frame, nil
}

func authExchange(l *link, frame []byte, user contract.UserID) (time.Duration, error) {
	if _, err := l.nc.Write(frame); err != nil {
		return 0, fmt.Errorf("loadgen: write AUTH: %w", err)
	}
	m, err := l.rd.ReadMessage()
	if err != nil {
		return 0, fmt.Errorf("loadgen: read AUTH answer: %w", err)
	}
	if m.Opcode == contract.OpError {
		var e qimv1.ErrorFrame
		_ = proto.Unmarshal(m.Payload, &e)
		return 0, fmt.Errorf("loadgen: AUTH of user %d refused: %s", user, contract.ErrorCode(e.GetCode()))
	}
	var ok qimv1.AuthOk
	if m.Opcode != contract.OpAuthOK || proto.Unmarshal(m.Payload, &ok) != nil {
		return 0, fmt.Errorf("loadgen: AUTH answered with %s", m.Opcode)
	}
	beat := time.Duration(ok.GetHeartbeatIntervalMs()) * time.Millisecond
	if beat <= 0 {
		beat = contract.HeartbeatStart
	}
	return beat, nil
}

// current is the live link, nil while reconnecting and after the end.
func (c *lgConn) current() *link {
	c.lmu.Lock()
	defer c.lmu.Unlock()
	return c.cur
}

// waitLink returns the live link, waiting through a reconnect; nil when the connection is gone,
// ctx ends or stop (may be nil) is closed.
func (c *lgConn) waitLink(ctx context.Context, stop <-chan struct{}) *link {
	for {
		c.lmu.Lock()
		l, up := c.cur, c.up
		c.lmu.Unlock()
		if l != nil {
			return l
		}
		select {
		case <-up:
		case <-c.gone:
			return nil
		case <-ctx.Done():
			return nil
		case <-stop:
			return nil
		}
	}
}

// installLink makes l the live link and wakes its waiters, unless the connection was closed
// for good in the meantime (the run stopped while a redial was under way).
func (c *lgConn) installLink(l *link) bool {
	c.lmu.Lock()
	defer c.lmu.Unlock()
	if c.shut {
		return false
	}
	c.cur = l
	close(c.up)
	return true
}

// drop retires l once its reader has returned: waiters from now on wait for the next link,
// then the socket and writer are torn down (a SEND still being written fails and is settled by
// its sender) and l.closed releases whoever waits for an answer on l.
func (c *lgConn) drop(l *link) {
	c.lmu.Lock()
	if c.cur == l {
		c.cur = nil
		c.up = make(chan struct{})
	}
	c.lmu.Unlock()
	l.teardown()
	close(l.closed)
}

// close ends the connection for good: no link is installed afterwards, and the live one is
// torn down so its reader (the supervisor) returns.
func (c *lgConn) close() {
	c.lmu.Lock()
	c.shut = true
	l := c.cur
	c.lmu.Unlock()
	if l != nil {
		l.teardown()
	}
}
