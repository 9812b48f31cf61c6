package sdk

// Sending: local_pending → SEND → SEND_ACK.
//
// Send (client.go) only writes the pending row and wakes the connection goroutine, which sends
// what is pending once the connection is reconciled (phaseReady), oldest first, at most
// Config.MaxInflightSends at a time. Every retry reuses the pending row's client_message_id and
// its exact content, so the server's idempotency (contract.IdempotencyWindow) turns a retry of a
// committed send into the original ACK. A pending send leaves the table only together with its
// committed message (ACK, or its own mailbox/history copy) or as a definite failure.

import (
	"fmt"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/qim-dev/qim/contract"
	qimv1 "github.com/qim-dev/qim/proto/qim/v1"
	"github.com/qim-dev/qim/sdk/store"
	"github.com/qim-dev/qim/wire"
)

// sendRetryMax caps the pause between attempts after repeated retryable SEND failures. It is
// short on purpose: after an outage the user's pending messages wait up to this long after the
// server recovered. The chaos matrix's writer-pause cell (a 65 s writer outage) saw SDK
// conversations frozen 10 s past the heal with a 30 s cap (STALLED); a retry every 5 s costs
// one SEND frame per client during an outage, which is nothing.
const sendRetryMax = 5 * time.Second

// flushPending sends due room sends (roomsend.go), queued group creates (groupcreate.go), then
// queued sends that are not in flight, oldest first, up to the in-flight cap. A send to a group
// whose CREATE_GROUP is still queued waits for GROUP_CREATED: sent alongside, it could reach the
// writer first and be refused NOT_MEMBER for good.
func (e *engine) flushPending(now time.Time) {
	e.flushRoomSends(now) // live, and not held by the reconciliation: first pick of the slots
	if e.phase != phaseReady || e.end != nil || e.sink == nil {
		return
	}
	if !e.holdUntil.IsZero() {
		if now.Before(e.holdUntil) {
			return
		}
		e.holdUntil = time.Time{}
	}
	creating, ok := e.flushCreates(now)
	if !ok {
		return
	}
	for room := e.sendSlots(); room > 0; room = e.sendSlots() {
		rows, err := e.st.QueuedAfter(storeCtx, e.dispatched, min(room, 64))
		if err != nil {
			e.fail(fmt.Errorf("sdk: list pending sends: %w", err))
			return
		}
		if len(rows) == 0 {
			return
		}
		for _, p := range rows {
			e.dispatched = int64(p.Ordinal)
			if _, busy := e.inflight[p.ClientMessageID]; busy {
				continue
			}
			if creating[p.Conversation] {
				e.creates.held = true // released by the create's answer (releaseHeld)
				continue
			}
			if now.Sub(time.UnixMilli(p.CreatedAtMs)) > contract.ClientPendingMaxAge {
				e.expire(p)
				continue
			}
			if !e.sendPending(p, now) {
				return
			}
		}
	}
}

func (e *engine) sendPending(p store.Pending, now time.Time) bool {
	cmid := contract.U128(p.ClientMessageID).Bytes()
	mentions := make([]uint64, len(p.Mentions))
	for i, u := range p.Mentions {
		mentions[i] = uint64(u)
	}
	req := &qimv1.SendRequest{ClientMessageId: cmid[:], Target: &qimv1.SendRequest_PeerUserId{PeerUserId: uint64(p.Peer)},
		MessageType: uint32(p.Type), CustomType: p.CustomType, Body: p.Body, ClientTimeMs: p.CreatedAtMs, Mentions: mentions}
	if p.Conversation.Kind() == contract.KindGroup {
		g := p.Conversation.Bytes() // a group's conversation id is its group id
		req.Target = &qimv1.SendRequest_GroupId{GroupId: g[:]}
	}
	amend, err := amendRequest(req, p)
	if err != nil {
		e.fail(err)
		return false
	}
	id := e.request(reqSend, contract.OpSend, req, now, &request{cmid: p.ClientMessageID, ordinal: p.Ordinal, amend: amend})
	if id == 0 {
		return false
	}
	e.inflight[p.ClientMessageID] = id
	e.stats.sends.Add(1)
	return true
}

func (e *engine) expire(p store.Pending) {
	ok, err := e.st.FailPending(storeCtx, p.ClientMessageID, contract.ErrCodeUnspecified, ErrPendingExpired.Error())
	if err != nil {
		e.fail(fmt.Errorf("sdk: expire pending send: %w", err))
		return
	}
	if ok {
		e.emit(Failed{ClientMessageID: p.ClientMessageID, Err: ErrPendingExpired})
	}
}

// onAck resolves the pending send a SEND_ACK answers, in one transaction with its message.
func (e *engine) onAck(m wire.Message, now time.Time) {
	r := e.take(m.RequestID, reqSend)
	if r == nil {
		e.log.Debug("sdk: SEND_ACK for no send in flight")
		return
	}
	delete(e.inflight, r.cmid)
	var ack qimv1.SendAck
	if err := proto.Unmarshal(m.Payload, &ack); err != nil {
		e.fail(fmt.Errorf("%w: SEND_ACK: %v", ErrProtocol, err))
		return
	}
	a, err := ackOf(&ack, r.cmid)
	if err != nil {
		e.fail(err)
		return
	}
	a.Amend = r.amend
	applied, found, err := e.st.ResolveAck(storeCtx, a)
	if err != nil {
		// Still pending: the next connection resends it and gets the same ACK back.
		e.fail(fmt.Errorf("sdk: store SEND_ACK: %w", err))
		return
	}
	e.sendFails = 0
	if found {
		e.committed(applied, nil, store.SourceAck, false)
	}
	e.flushPending(now)
}

func ackOf(ack *qimv1.SendAck, want contract.ClientMessageID) (store.Ack, error) {
	cmid, err := contract.ParseClientMessageID(ack.GetClientMessageId())
	if err != nil || cmid != want {
		return store.Ack{}, fmt.Errorf("%w: SEND_ACK echoes another client_message_id", ErrProtocol)
	}
	mid, err := contract.ParseMessageID(ack.GetMessageId())
	if err != nil {
		return store.Ack{}, fmt.Errorf("%w: SEND_ACK: %v", ErrProtocol, err)
	}
	conv, err := contract.ParseConversationID(ack.GetConversationId())
	if err != nil {
		return store.Ack{}, fmt.Errorf("%w: SEND_ACK: %v", ErrProtocol, err)
	}
	seq, err := contract.NewConversationSeq(ack.GetConversationSeq())
	if err != nil {
		return store.Ack{}, fmt.Errorf("%w: SEND_ACK: %v", ErrProtocol, err)
	}
	return store.Ack{ClientMessageID: cmid, MessageID: mid, Conversation: conv, Seq: seq,
		CommittedAtMs: ack.GetCommittedAtMs()}, nil
}

// onSendError: a retryable code (outcome unknown or transient) keeps the send pending and pauses
// sending for the hinted or a growing delay; a definite rejection fails it for good.
func (e *engine) onSendError(r *request, se *ServerError, now time.Time) {
	delete(e.inflight, r.cmid)
	switch {
	case se.Code == contract.ErrCodeUnauthorized:
		// The credential expired mid-session: re-authenticate; the send stays pending.
		e.fail(se)
		return
	case se.Retryable():
		e.holdSends(se, r.sentAt, now)
		e.dispatched = min(e.dispatched, int64(r.ordinal)-1)
		return
	}
	ok, err := e.st.FailPending(storeCtx, r.cmid, se.Code, se.Message)
	if err != nil {
		e.fail(fmt.Errorf("sdk: store send failure: %w", err))
		return
	}
	if ok {
		e.emit(Failed{ClientMessageID: r.cmid, Code: se.Code, Err: se})
	}
}

// holdSends pauses sends and group creates after a retryable refusal: for the server's hint from
// now, or else for a delay that grows with the failures in a row (reset by the next ACK),
// counted from when the refused attempt was sent. The pause is between attempts, not after
// failures: a refusal that itself took the delay to come back (the writer's Outbox timing out
// on a broker fenced right after it came back) is retried at once instead of waiting again.
// Counted from the failure, that case held an SDK conversation 10.5 s past the chaos matrix's
// heal (rolling-restart-broker-down: 5 s Outbox timeout, then the 5 s pause).
func (e *engine) holdSends(se *ServerError, sentAt, now time.Time) {
	e.sendFails++
	if se.RetryAfter > 0 {
		e.holdUntil = now.Add(se.RetryAfter)
		return
	}
	e.holdUntil = sentAt.Add(min(e.cfg.ReconnectMin<<min(e.sendFails, 10), sendRetryMax))
}
