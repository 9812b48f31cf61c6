package gateway

// This file is the gateway's push path, and it must NEVER advance, store or even look at a
// mailbox cursor. A push is a latency shortcut taken after the MailboxNode has durably
// materialized the events: it may be dropped (offline, full queue, dead socket), duplicated or
// overtaken by a pull, so it can only be safe if nothing depends on it. If a push moved a cursor,
// a push lost after that move would skip the device past an event it never stored — a silent
// loss that no retry could repair, because the device would no longer ask for it. Cursors
// therefore move only through PULL_MAILBOX / MAILBOX_BATCH (cursor.go), and PUSH_EVENTS carries
// events only; the client dedups by message_id and pulls to advance.

import (
	"context"
	"errors"

	"google.golang.org/protobuf/proto"

	"github.com/qim-dev/qim/contract"
	qimv1 "github.com/qim-dev/qim/proto/qim/v1"
	internalv1 "github.com/qim-dev/qim/proto/qiminternal/v1"
	"github.com/qim-dev/qim/wire"
)

// pushServer serves internalv1.Push to the MailboxNode.
type pushServer struct {
	internalv1.UnimplementedPushServer
	s *Service
}

// PushBatch queues one PUSH_EVENTS frame per target to each live connection of the target user.
// It never blocks on a client: a full connection queue drops the push (counted) and the device
// catches up by pulling. delivered counts targets queued to at least one connection.
func (p pushServer) PushBatch(_ context.Context, req *internalv1.PushBatchRequest) (*internalv1.PushBatchResult, error) {
	var res internalv1.PushBatchResult
	var buf [8]*conn
	for _, t := range req.GetTargets() {
		outcome := p.s.pushTarget(t, buf[:0])
		p.s.m.pushes.WithLabelValues(outcome).Inc()
		if outcome == "queued" {
			res.Delivered++
		} else {
			res.Dropped++
		}
	}
	return &res, nil
}

// pushTarget routes one target and reports its outcome label.
func (s *Service) pushTarget(t *internalv1.PushTarget, conns []*conn) string {
	tenant, err := contract.U128FromBytes(t.GetTenantId())
	if err != nil || t.GetUserId() == 0 || payloadKinds(t) != 1 {
		return "invalid"
	}
	conns = s.registry.appendConns(conns, userKey{tenant, contract.UserID(t.GetUserId())})
	if len(conns) == 0 {
		return "offline"
	}
	switch {
	case t.GetSessionDelta() != nil:
		return s.pushControl(conns, t.GetExceptDevice(), contract.OpSessionDelta, t.GetSessionDelta(), s.m.readSyncs.WithLabelValues("delivered"))
	case t.GetTyping() != nil:
		return s.pushControl(conns, "", contract.OpTypingEvent, t.GetTyping(), s.m.typing.WithLabelValues("delivered"))
	case t.GetReceipt() != nil:
		return s.pushControl(conns, "", contract.OpReadReceipt, t.GetReceipt(), s.m.receipts.WithLabelValues("delivered"))
	case t.GetReaction() != nil:
		return s.pushControl(conns, t.GetExceptDevice(), contract.OpReactionEvent, t.GetReaction(), s.m.reactions.WithLabelValues("delivered"))
	}
	// Encoded once per target, shared read-only by every connection of the user.
	payload, err := proto.Marshal(&qimv1.PushEvents{Events: t.GetEvents()})
	if err != nil || len(payload) > wire.MaxPayload {
		return "invalid"
	}
	queued := false
	for _, c := range conns {
		if c.offerPush(payload) {
			queued = true
		} else {
			s.m.pushDropped.Inc()
		}
	}
	if !queued {
		return "queue_full"
	}
	return "queued"
}

// payloadKinds counts what a target carries: mailbox events, a session delta, a typing event, a
// read receipt, a reaction event.
// A valid target carries exactly one.
func payloadKinds(t *internalv1.PushTarget) int {
	n := 0
	for _, has := range []bool{len(t.GetEvents()) > 0, t.GetSessionDelta() != nil, t.GetTyping() != nil, t.GetReceipt() != nil,
		t.GetReaction() != nil} {
		if has {
			n++
		}
	}
	return n
}

// offerPush queues a PUSH_EVENTS payload without blocking.
func (c *conn) offerPush(payload []byte) bool {
	select {
	case c.pushQ <- payload:
		return true
	default:
		return false
	}
}

// ctrlQueueDepth bounds the answers and notices queued by goroutines that must not block (room
// links). Each is one small frame per request or room; a connection that lets it fill is not
// reading at all and is closed.
const ctrlQueueDepth = 32

// pumpPushes writes queued pushes, room frames and control frames to the socket. It starts
// after AUTH_OK is written, so nothing reaches a client before its AUTH_OK. Control frames go
// first; pushes and room frames are independent queues, each in its own order.
func (c *conn) pumpPushes() {
	defer c.wg.Done()
	for {
		var m wire.Message
		select {
		case f := <-c.ctrlQ:
			m = wire.Message{Opcode: f.op, RequestID: f.requestID, Payload: f.payload}
		default:
			select {
			case f := <-c.ctrlQ:
				m = wire.Message{Opcode: f.op, RequestID: f.requestID, Payload: f.payload}
			case payload := <-c.pushQ:
				m = wire.Message{Opcode: contract.OpPushEvents, Payload: payload}
			case f := <-c.roomQ:
				c.roomBytes.Add(-int64(len(f.payload)))
				m = wire.Message{Opcode: f.op, RequestID: f.requestID, Payload: f.payload}
			case <-c.ctx.Done():
				return
			}
		}
		if err := c.w.Send(c.ctx, m); err != nil && !errors.Is(err, wire.ErrOversize) {
			c.interrupt()
			return
		}
	}
}
