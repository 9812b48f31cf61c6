package sdk

// Liveness: heartbeat, ACK probe and the unavailability deadline.
//
// A TCP connection can die without either end seeing a FIN (NAT timeout, a sleeping laptop, a
// pulled cable), so the client proves liveness itself. Any frame from the server proves the path
// works. When a request (SEND, PULL_MAILBOX, ...) has waited contract.SendAckProbeAfter (3 s)
// with nothing received meanwhile, or when the heartbeat interval (told by AUTH_OK/PONG) has
// passed, the client sends a PING; if nothing at all arrives within the remaining
// contract.UnavailableDetectMax − SendAckProbeAfter (4 s), the connection is declared dead and the
// loop reconnects — so a dead connection is reported within 7 s of the first unanswered request.
// A slow ACK on a live connection is not a failure: the gateway answers every SEND (ACK, or ERROR
// UNAVAILABLE after its backend timeout), and the client waits for that.

import (
	"errors"
	"fmt"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/qim-dev/qim/contract"
	qimv1 "github.com/qim-dev/qim/proto/qim/v1"
	"github.com/qim-dev/qim/wire"
)

// probeTimeout is how long a probe may go unanswered.
const probeTimeout = contract.UnavailableDetectMax - contract.SendAckProbeAfter

// deferPoll is how often a pull deferred by an unread event backlog is reconsidered.
const deferPoll = 100 * time.Millisecond

// oldestOutstanding is the send time of the oldest unanswered request (pings excluded).
func (e *engine) oldestOutstanding() (time.Time, bool) {
	for len(e.order) > 0 {
		if _, ok := e.reqs[e.order[0].id]; ok {
			return e.order[0].sentAt, true
		}
		e.order = e.order[1:]
	}
	return time.Time{}, false
}

// nextDeadline is when onTick must run next; zero when nothing is scheduled.
func (e *engine) nextDeadline(now time.Time) time.Time {
	var d time.Time
	at := func(t time.Time) {
		if !t.IsZero() && (d.IsZero() || t.Before(d)) {
			d = t
		}
	}
	if e.sink == nil {
		return d
	}
	if !e.probeAt.IsZero() {
		at(e.probeAt.Add(probeTimeout))
	} else {
		if o, ok := e.oldestOutstanding(); ok {
			at(later(o, e.lastRecv).Add(contract.SendAckProbeAfter))
		}
		if e.online {
			at(e.lastPing.Add(e.heartbeat))
		}
	}
	if e.phase == phaseReady {
		at(e.holdUntil)
		at(e.reads.retryAt)
	}
	at(e.roomsDeadline())
	at(e.pull.retryAt)
	if e.pull.deferred {
		at(now.Add(deferPoll))
	}
	return d
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// onTick runs what is due at now.
func (e *engine) onTick(now time.Time) {
	if e.sink == nil || e.end != nil {
		return
	}
	if !e.probeAt.IsZero() {
		if !now.Before(e.probeAt.Add(probeTimeout)) {
			e.fail(errDead)
			return
		}
	} else if o, ok := e.oldestOutstanding(); ok && !now.Before(later(o, e.lastRecv).Add(contract.SendAckProbeAfter)) {
		e.ping(now)
	} else if e.online && !now.Before(e.lastPing.Add(e.heartbeat)) {
		e.ping(now)
	}
	if e.phase == phaseReady && !e.holdUntil.IsZero() && !now.Before(e.holdUntil) {
		e.flushPending(now)
	}
	if e.phase == phaseReady && !e.reads.retryAt.IsZero() && !now.Before(e.reads.retryAt) {
		e.flushReads(now)
	}
	if !e.pull.retryAt.IsZero() && !now.Before(e.pull.retryAt) {
		e.pull.retryAt = time.Time{}
		e.requestPull(now)
	}
	if e.pull.deferred && e.backlog() <= e.cfg.EventBacklogPause/2 {
		e.requestPull(now)
	}
	e.roomsTick(now)
}

// ping sends a PING that doubles as heartbeat and probe; it reports the app state, which the
// server fits the heartbeat interval to.
func (e *engine) ping(now time.Time) {
	fg := e.background == nil || !e.background.Load()
	if e.request(reqPing, contract.OpPing, &qimv1.Ping{ClientTimeMs: now.UnixMilli(), Foreground: fg}, now, nil) != 0 {
		e.probeAt, e.lastPing = now, now
	}
}

// appStateChanged tells the server the new app state at once, with a PING, unless one is
// already in flight (its PONG will be followed by the regular schedule).
func (e *engine) appStateChanged(now time.Time) {
	if e.phase == phaseReady && e.probeAt.IsZero() {
		e.ping(now)
	}
}

// onPong takes the server's heartbeat schedule (the probe itself was already cleared by the
// frame's arrival, see onFrame) and asks for a pull through the same single-flight entry as a
// push: pushes are best effort, and a dropped one must not leave messages waiting until the next
// push. At one pull per heartbeat interval the fallback costs nearly nothing.
func (e *engine) onPong(m wire.Message, now time.Time) {
	if e.take(m.RequestID, reqPing) == nil {
		return
	}
	var p qimv1.Pong
	if proto.Unmarshal(m.Payload, &p) == nil && p.GetHeartbeatIntervalMs() > 0 {
		e.heartbeat = time.Duration(p.GetHeartbeatIntervalMs()) * time.Millisecond
	}
	if e.phase == phaseReady && !e.hooks.noAutoPull {
		e.requestPull(now)
	}
}

// onServerPing answers the server's liveness probe.
func (e *engine) onServerPing(m wire.Message) {
	var p qimv1.Ping
	_ = proto.Unmarshal(m.Payload, &p)
	payload, err := proto.Marshal(&qimv1.Pong{ClientTimeMs: p.GetClientTimeMs()})
	if err == nil {
		err = e.sink.send(contract.OpPong, m.RequestID, payload)
	}
	if err != nil {
		e.fail(err)
	}
}

// sendTyping writes a TYPING frame (no answer is expected) when the session is up; otherwise it
// is dropped, as typing is worth nothing later.
func (e *engine) sendTyping(t *qimv1.Typing) {
	if e.phase != phaseReady {
		return
	}
	payload, err := proto.Marshal(t)
	if err != nil {
		return
	}
	if err := e.sink.send(contract.OpTyping, 0, payload); err != nil {
		e.fail(fmt.Errorf("sdk: write TYPING: %w", err))
	}
}

// onTypingEvent announces a peer's typing indicator.
func (e *engine) onTypingEvent(m wire.Message, now time.Time) {
	var ev qimv1.TypingEvent
	if err := proto.Unmarshal(m.Payload, &ev); err != nil {
		e.fail(fmt.Errorf("%w: TYPING_EVENT: %v", ErrProtocol, err))
		return
	}
	conv, err := contract.ParseConversationID(ev.GetConversationId())
	if err != nil {
		e.fail(fmt.Errorf("%w: TYPING_EVENT: %v", ErrProtocol, err))
		return
	}
	e.emit(Typing{Conversation: conv, User: contract.UserID(ev.GetUserId()), Typing: ev.GetTyping(),
		Until: now.Add(time.Duration(ev.GetExpiresInMs()) * time.Millisecond)})
}

// onReadReceipt hands a peer's read receipt to the app.
func (e *engine) onReadReceipt(m wire.Message) {
	var r qimv1.ReadReceipt
	if err := proto.Unmarshal(m.Payload, &r); err != nil {
		e.fail(fmt.Errorf("%w: READ_RECEIPT: %v", ErrProtocol, err))
		return
	}
	conv, err := contract.ParseConversationID(r.GetConversationId())
	seq, serr := contract.NewConversationSeq(r.GetReadConversationSeq())
	if err != nil || serr != nil {
		e.fail(fmt.Errorf("%w: READ_RECEIPT: %v", ErrProtocol, errors.Join(err, serr)))
		return
	}
	e.emit(ReadReceipt{Conversation: conv, Reader: contract.UserID(r.GetReaderUserId()), Seq: seq})
}
