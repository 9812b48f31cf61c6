package loadgen

import (
	"context"
	"sync/atomic"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/qim-dev/qim/chaos/history"
	"github.com/qim-dev/qim/contract"
	qimv1 "github.com/qim-dev/qim/proto/qim/v1"
	"github.com/qim-dev/qim/wire"
)

// offer is the scheduler's sink: it queues an arrival on a connection without blocking. A full
// queue means the generator is already a queue's worth behind on that connection; the arrival
// is dropped and counted as unsent, so the achieved rate says so.
func (c *lgConn) offer(intended time.Time) bool {
	select {
	case c.jobs <- intended:
		return true
	default:
		return false
	}
}

// sendLoop turns scheduled arrivals into SEND frames in schedule order. The time between an
// arrival's intended time and its frame reaching the socket is generator lag (queueing here,
// waiting for an in-flight permit or for a reconnect, the scheduler oversleeping), recorded as
// its own segment so it is never silently folded into — or hidden from — the pipeline's numbers.
//
// While the connection is between links, arrivals stay in the bounded queue (a full queue is
// counted as unsent by offer, as always), and sending resumes on the next link.
func (c *lgConn) sendLoop(ctx context.Context) {
	req := &qimv1.SendRequest{MessageType: uint32(contract.MessageText), Body: make([]byte, c.r.cfg.BodyBytes)}
	if c.member() != nil {
		req.Target = &qimv1.SendRequest_GroupId{GroupId: c.member().g.id}
	} else {
		req.Target = &qimv1.SendRequest_PeerUserId{PeerUserId: uint64(c.direct().peer.user)}
	}
	var buf []byte
	for {
		var intended time.Time
		select {
		case <-ctx.Done():
			return
		case <-c.r.sendStop:
			return
		case <-c.gone:
			return
		case intended = <-c.jobs:
		}
		l := c.ready(ctx)
		if l == nil {
			atomic.AddInt64(&c.r.live.Unsent, 1) // stopped while waiting for a link or a permit: it never went out
			return
		}
		var err error
		buf, err = c.sendOne(ctx, l, req, buf, intended)
		if err != nil && !c.r.cfg.Reconnect {
			return // the supervisor reports the lost connection
		}
	}
}

// ready waits for a live link and an in-flight permit, in that order, and returns the link
// holding the permit; nil when sending is over (ctx, the end of the window, the connection
// gone). A link lost during the permit wait sends the wait back to the next link.
func (c *lgConn) ready(ctx context.Context) *link {
	for {
		l := c.waitLink(ctx, c.r.sendStop)
		if l == nil {
			return nil
		}
		if c.acquire(ctx, l) {
			if !l.down() {
				return l
			}
			<-c.permits // never used: nothing is in flight for it
		}
		if c.sendingOver(ctx) {
			return nil
		}
	}
}

// acquire takes an in-flight permit, counting the waits so a saturated window is visible. It
// gives up when sending is over or the link is lost (whose SENDs then return their permits).
func (c *lgConn) acquire(ctx context.Context, l *link) bool {
	select {
	case c.permits <- struct{}{}:
		return true
	default:
	}
	atomic.AddInt64(&c.r.live.InflightWaits, 1)
	select {
	case c.permits <- struct{}{}:
		return true
	case <-ctx.Done():
	case <-c.r.sendStop:
	case <-c.gone:
	case <-l.closed:
	}
	return false
}

// sendingOver reports whether the sendLoop must stop taking arrivals.
func (c *lgConn) sendingOver(ctx context.Context) bool {
	select {
	case <-ctx.Done():
		return true
	case <-c.r.sendStop:
		return true
	case <-c.gone:
		return true
	default:
		return false
	}
}

// sendOne writes one SEND; the body's timestamp is taken right before the frame is queued on
// the writer, so TCP back-pressure from a gateway at its in-flight limit counts against the
// system (it is a queue in the system), not against the generator.
//
// The history's Invoke is recorded before the write, the ledger's rule: the record exists
// before the frame can be answered. A write that fails settles its SEND as info (the bytes may
// have left), unless the supervisor settled it first as part of the lost link.
func (c *lgConn) sendOne(ctx context.Context, l *link, req *qimv1.SendRequest, buf []byte, intended time.Time) ([]byte, error) {
	ord := c.role.ledger().add()
	cmid := contract.DeriveClientMessageID(c.install, ord)
	b := contract.U128(cmid).Bytes()
	req.ClientMessageId = b[:]
	now := time.Now()
	putBody(req.Body, bodyHeader{run: c.r.runID, sentUs: now.UnixMicro(), sender: uint32(c.idx), ordinal: ord})
	req.ClientTimeMs = now.UnixMilli()
	var err error
	if buf, err = (proto.MarshalOptions{}).MarshalAppend(buf[:0], req); err != nil {
		<-c.permits
		c.role.ledger().answer(ord, stateFailed, nil)
		c.r.noteError(err)
		return buf, err
	}
	id := c.nextID.Add(1)
	c.r.inflight.Add(1)
	c.register(id, &pendingReq{kind: kindSend, ord: ord, at: now})
	c.r.rec.Record(SegGenLag, now.Sub(intended).Microseconds())
	c.recordSend(history.Invoke, ord, now, 0)
	if err := l.w.Send(ctx, wire.Message{Opcode: contract.OpSend, RequestID: id, Payload: buf}); err != nil {
		if p := c.take(id); p != nil {
			c.release(p)
			c.role.ledger().answer(ord, stateUnknown, nil)
			c.recordSend(history.Info, ord, time.Now(), 0)
		}
		return buf, err
	}
	c.r.rec.CountSent()
	atomic.AddInt64(&c.r.live.Sent, 1)
	if now.Before(c.r.windowEnd()) {
		atomic.AddInt64(&c.r.live.SentInWindow, 1)
	}
	return buf, nil
}

// maintain times out SENDs and PINGs that got no answer within AckTimeout and keeps a message
// connection alive with heartbeat PINGs on the live link (none while reconnecting: there is no
// socket to keep alive).
func (c *lgConn) maintain(ctx context.Context, beat bool) {
	t := time.NewTicker(250 * time.Millisecond)
	defer t.Stop()
	var nextBeat time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-c.gone:
			return
		case now := <-t.C:
			c.sweep(now)
			l := c.current()
			if !beat || l == nil {
				continue
			}
			if nextBeat.IsZero() {
				nextBeat = now.Add(l.beat / 2)
			}
			if now.After(nextBeat) {
				nextBeat = now.Add(l.beat / 2)
				c.ping(ctx, l, kindBeat)
			}
		}
	}
}

// sweep expires pending requests in send order. A timed-out SEND becomes an unknown outcome
// and is counted; it stays in pending, with its permit, so a late answer still records the truth
// and the generator cannot pile more work onto a system that has not answered.
func (c *lgConn) sweep(now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for c.head < len(c.ring) && now.After(c.ring[c.head].deadline) {
		e := c.ring[c.head]
		c.head++
		p := c.pending[e.id]
		if p == nil || p.timedOut {
			continue
		}
		if p.kind != kindSend {
			delete(c.pending, e.id)
			atomic.AddInt64(&c.r.live.PingTimeouts, 1)
			continue
		}
		p.timedOut = true
		atomic.AddInt64(&c.r.live.Timeouts, 1)
		c.role.ledger().answer(p.ord, stateUnknown, nil)
		c.recordSend(history.Info, p.ord, now, 0)
	}
	if c.head > 1024 && c.head*2 > len(c.ring) {
		c.ring = append(c.ring[:0], c.ring[c.head:]...)
		c.head = 0
	}
}

// ping writes one PING of the given kind (a control-group sample or a heartbeat) on l.
func (c *lgConn) ping(ctx context.Context, l *link, kind uint8) {
	now := time.Now()
	payload, _ := proto.Marshal(&qimv1.Ping{ClientTimeMs: now.UnixMilli(), Foreground: true})
	id := c.nextID.Add(1)
	c.register(id, &pendingReq{kind: kind, at: now})
	if err := l.w.Send(ctx, wire.Message{Opcode: contract.OpPing, RequestID: id, Payload: payload}); err != nil {
		c.take(id)
		return
	}
	if kind == kindPing {
		atomic.AddInt64(&c.r.live.Pings, 1)
	}
}

// pingLoop is a control connection's life: PING every PingInterval (open model too: a slow
// PONG does not delay the next PING) and expire the unanswered ones. A control connection
// reconnects like a message connection (Config.Reconnect); between links it skips its PINGs.
func (c *lgConn) pingLoop(ctx context.Context) {
	t := time.NewTicker(c.r.cfg.PingInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-c.gone:
			return
		case now := <-t.C:
			c.sweep(now)
			if l := c.current(); l != nil {
				c.ping(ctx, l, kindPing)
			}
		}
	}
}
