package loadgen

import (
	"fmt"
	"sync/atomic"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/qim-dev/qim/chaos/history"
	"github.com/qim-dev/qim/contract"
	qimv1 "github.com/qim-dev/qim/proto/qim/v1"
	"github.com/qim-dev/qim/wire"
)

// readLoop is the only reader of link l and returns the error that ended it. Each frame is
// timestamped the moment it is decoded and handled inline (a map lookup, a histogram record)
// or handed to the pull worker through a one-slot channel, so a slow consumer elsewhere never
// delays the next timestamp.
func (c *lgConn) readLoop(l *link) error {
	for {
		m, err := l.rd.ReadMessage()
		if err != nil {
			return err
		}
		now := time.Now()
		switch m.Opcode {
		case contract.OpSendAck:
			c.onAck(m, now)
		case contract.OpError:
			c.onError(m, now)
		case contract.OpPushEvents:
			c.onPush(m, now)
		case contract.OpMailboxBatch:
			c.handBatch(pullAnswer{m: m, at: now}, m.RequestID)
		case contract.OpHistoryBatch:
			c.handStored(pullAnswer{m: m, at: now}, m.RequestID)
		case contract.OpPong:
			if p := c.take(m.RequestID); p != nil && p.kind == kindPing {
				c.r.rec.Record(SegPing, now.Sub(p.at).Microseconds())
			}
		case contract.OpPing: // the server's liveness probe
			c.r.probe.serverPings.Add(1)
			pong, _ := proto.Marshal(&qimv1.Pong{})
			_ = l.w.Send(c.r.connCtx, wire.Message{Opcode: contract.OpPong, RequestID: m.RequestID, Payload: pong})
		case contract.OpKicked:
			c.onKicked(m)
		}
	}
}

func (c *lgConn) onAck(m wire.Message, now time.Time) {
	p := c.take(m.RequestID)
	if p == nil || p.kind != kindSend {
		atomic.AddInt64(&c.r.live.StrayAnswers, 1)
		return
	}
	var ack qimv1.SendAck
	if err := proto.Unmarshal(m.Payload, &ack); err != nil {
		c.r.noteError(fmt.Errorf("loadgen: undecodable SEND_ACK: %w", err))
	}
	c.release(p)
	if p.timedOut {
		atomic.AddInt64(&c.r.live.LateAnswers, 1)
	}
	c.r.rec.Record(SegSendAck, now.Sub(p.at).Microseconds())
	c.r.rec.CountAcked()
	if now.Before(c.r.windowEnd()) {
		atomic.AddInt64(&c.r.live.AckedInWindow, 1)
	}
	c.role.ledger().ackedAt(p.ord, now.UnixMicro())
	c.role.ledger().answer(p.ord, stateAcked, ack.GetMessageId())
	c.recordAck(p.ord, now, &ack)
	if c.member() != nil {
		c.fileAck(p, ack.GetMessageId())
	}
}

// onError routes an ERROR to the SEND, pull, history read or PING it answers. A SEND error is a
// failure of the run either way; UNAVAILABLE and INTERNAL leave the outcome unknown (the server
// says "retry with the same client_message_id"), every other code is definite: never visible.
func (c *lgConn) onError(m wire.Message, now time.Time) {
	var e qimv1.ErrorFrame
	_ = proto.Unmarshal(m.Payload, &e)
	code := contract.ErrorCode(e.GetCode())
	if m.RequestID != 0 && m.RequestID == c.pullID.Load() {
		c.handBatch(pullAnswer{at: now, err: fmt.Errorf("loadgen: PULL_MAILBOX refused: %s", code)}, m.RequestID)
		return
	}
	if m.RequestID != 0 && m.RequestID == c.storedID.Load() {
		c.handStored(pullAnswer{at: now, err: fmt.Errorf("ERROR %s", code)}, m.RequestID)
		return
	}
	p := c.take(m.RequestID)
	if p == nil {
		atomic.AddInt64(&c.r.live.StrayAnswers, 1)
		return
	}
	c.release(p)
	if p.kind != kindSend {
		c.r.countFailure("PING " + code.String())
		return
	}
	c.r.countFailure(code.String())
	state, kind := stateFailed, history.Fail
	if code == contract.ErrCodeUnavailable || code == contract.ErrCodeInternal {
		state, kind = stateUnknown, history.Info
	}
	c.role.ledger().answer(p.ord, state, nil)
	c.recordSend(kind, p.ord, now, code)
}

// handBatch gives a MAILBOX_BATCH (or its ERROR) to the pull worker if it is still waiting for
// that request; a stale answer (the worker gave up on it) is counted and dropped.
func (c *lgConn) handBatch(a pullAnswer, id uint32) {
	if id != c.pullID.Load() {
		atomic.AddInt64(&c.r.live.StrayAnswers, 1)
		return
	}
	select {
	case c.batches <- a:
	default:
		atomic.AddInt64(&c.r.live.StrayAnswers, 1)
	}
}

func (c *lgConn) onPush(m wire.Message, now time.Time) {
	atomic.AddInt64(&c.r.live.Pushes, 1)
	if c.role == nil {
		return
	}
	var p qimv1.PushEvents
	if err := proto.Unmarshal(m.Payload, &p); err != nil {
		c.r.noteError(fmt.Errorf("loadgen: undecodable PUSH_EVENTS: %w", err))
		return
	}
	fromPeer := false
	for _, ev := range p.GetEvents() {
		atomic.AddInt64(&c.r.live.PushEvents, 1)
		if c.member() != nil {
			fromPeer = c.groupEvent(history.Push, ev, now) || fromPeer
			continue
		}
		if contract.UserID(ev.GetSenderUserId()) == c.user {
			c.recordOwnCopy(history.Push, ev, now)
			continue
		}
		h, ok := c.fromPeer(ev)
		if !ok {
			continue
		}
		fromPeer = true
		c.recordMailbox(history.Push, ev, h, now)
		nowUs := now.UnixMicro()
		if first, sinceAck := c.direct().in.pushed(h.ordinal, nowUs); first {
			c.r.rec.Record(SegSendPush, nowUs-h.sentUs)
			if sinceAck >= 0 {
				c.r.rec.Record(SegAckPush, sinceAck)
			}
		}
	}
	if fromPeer {
		c.wantPull()
	}
}

// fromPeer decodes the body of an event the peer sent in this run (direct mode; group events
// go through groupEvent); own copies (the sender's mailbox copy of its own message) and foreign
// events return false.
func (c *lgConn) fromPeer(ev *qimv1.MailboxEvent) (bodyHeader, bool) {
	if contract.UserID(ev.GetSenderUserId()) == c.user {
		return bodyHeader{}, false
	}
	h, err := parseBody(ev.GetBody())
	if err != nil || h.run != c.r.runID || int(h.sender) != c.direct().peer.idx {
		atomic.AddInt64(&c.r.live.ForeignEvents, 1)
		return bodyHeader{}, false
	}
	return h, true
}

// wantPull asks the pull worker for a round without blocking; requests made while a round is
// running coalesce into one more round.
func (c *lgConn) wantPull() {
	select {
	case c.pullNeeded <- struct{}{}:
	default:
	}
}
