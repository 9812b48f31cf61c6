package loadgen

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/qim-dev/qim/chaos/history"
	qimv1 "github.com/qim-dev/qim/proto/qim/v1"
	"github.com/qim-dev/qim/wire"
)

// Reconnect backoff: the first redial waits reconnectMin (a gateway that just died is not back
// yet), each failed attempt doubles the wait up to reconnectMax, and there is no attempt limit:
// the run's end is the only limit, because a chaos cell decides how long a server stays down.
const (
	reconnectMin = 100 * time.Millisecond
	reconnectMax = 2 * time.Second
)

// supervise owns the connection's socket: it runs readLoop on the live link, settles what a
// lost link leaves pending, and — with Config.Reconnect, until the run stops — dials a new
// link. It is the connection's only socket reader, so one goroutine per connection both reads
// and reconnects, and no link is ever read by two. Closing gone tells the connection's other
// goroutines that no link will come any more.
func (c *lgConn) supervise(ctx context.Context) {
	defer close(c.gone)
	l := c.current()
	for l != nil {
		err := c.readLoop(l)
		c.drop(l)
		c.lost(err)
		if !c.r.cfg.Reconnect || c.r.stopping.Load() {
			return
		}
		l = c.redial(ctx)
	}
}

// lost ends the lost link's SENDs in flight as unknown outcomes (info): they may or may not
// have committed, so they are neither acked nor failed, and the frame lane does not resend
// them (it measures; retrying is the SDK lane's job). Their permits come back, so a connection
// that reconnects starts with its full window. A link closed because the run is stopping is
// not a loss, but what it leaves pending is settled the same way.
func (c *lgConn) lost(err error) {
	now := time.Now()
	if !c.r.stopping.Load() {
		atomic.AddInt64(&c.r.live.ConnectionsLost, 1)
		c.r.noteError(fmt.Errorf("loadgen: connection %d (user %d) lost at %s: %w", c.idx, c.user, stamp(now), err))
	}
	c.mu.Lock()
	pend := c.pending
	c.pending = map[uint32]*pendingReq{}
	c.mu.Unlock()
	for _, p := range pend {
		if p.kind != kindSend {
			continue
		}
		c.release(p)
		if !p.timedOut { // a timed-out SEND is already info
			c.role.ledger().answer(p.ord, stateUnknown, nil)
			c.recordSend(history.Info, p.ord, now, 0)
		}
	}
}

// redial dials and authenticates the same user and device again with backoff until it succeeds
// or the run stops (nil). A KICKED's retry_after_ms stretches the first wait.
func (c *lgConn) redial(ctx context.Context) *link {
	delay := max(reconnectMin, time.Duration(c.kickDelay.Swap(0)))
	t := time.NewTimer(jitter(delay))
	defer t.Stop()
	var lastErr error
	for attempt := 1; ; attempt++ {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		l, err := c.r.dialLink(ctx, c.user)
		if err == nil {
			if !c.installLink(l) {
				l.teardown()
				return nil
			}
			c.reconnected(attempt, lastErr)
			return l
		}
		if ctx.Err() != nil {
			return nil
		}
		lastErr = err
		delay = min(2*delay, reconnectMax)
		t.Reset(jitter(delay))
	}
}

// reconnected counts a new link and asks the pull worker for a round: what arrived while the
// connection was down was pushed to nobody, so only a pull fetches it.
func (c *lgConn) reconnected(attempts int, lastErr error) {
	atomic.AddInt64(&c.r.live.Reconnects, 1)
	msg := fmt.Sprintf("loadgen: connection %d (user %d) reconnected at %s after %d attempts", c.idx, c.user,
		stamp(time.Now()), attempts)
	if lastErr != nil {
		msg += fmt.Sprintf(" (last refusal: %v)", lastErr)
	}
	c.r.noteError(errors.New(msg))
	if c.role != nil {
		c.wantPull()
	}
}

// onKicked counts a KICKED and keeps its suggested delay for the redial. The server closes the
// socket right after it, so the read loop sees the loss next. loadgen's users belong to one
// run and log in once each, so a REPLACED kick cannot start two installations evicting each
// other; a kicked connection reconnects like a lost one.
func (c *lgConn) onKicked(m wire.Message) {
	atomic.AddInt64(&c.r.live.Kicked, 1)
	var k qimv1.Kicked
	if proto.Unmarshal(m.Payload, &k) == nil && k.GetRetryAfterMs() > 0 {
		c.kickDelay.Store(int64(time.Duration(k.GetRetryAfterMs()) * time.Millisecond))
	}
}

// jitter spreads a wait over [d/2, d], so hundreds of connections lost at the same instant do
// not redial in lockstep.
func jitter(d time.Duration) time.Duration {
	return d/2 + rand.N(d/2+1)
}

// stamp is the wall-clock form of loss and reconnect times in the report's errors, to the
// millisecond, so they line up with a chaos cell's fault times.
func stamp(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }
