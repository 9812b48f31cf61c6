package gateway

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/qim-dev/qim/contract"
	internalv1 "github.com/qim-dev/qim/proto/qiminternal/v1"
	"github.com/qim-dev/qim/wire"
)

// errSendRequest is wrapped by every SEND the gateway refuses before it reaches the writer.
var errSendRequest = errors.New("gateway: invalid SendRequest")

// SendRequest field numbers the gateway peeks at (qim/v1/send.proto).
const (
	sendFieldClientMessageID protowire.Number = 1
	sendFieldPeerUserID      protowire.Number = 2
	sendFieldGroupID         protowire.Number = 3
	sendFieldRoomID          protowire.Number = 9
)

// sendTarget is the conversation a SEND names, as far as routing needs it.
type sendTarget struct {
	peer  uint64
	group contract.U128 // zero: a direct message to peer (or a room)
	room  contract.U128 // non-zero: a room (ADR-0034), published at its RoomWriter
}

// conversation is the routing key of the SEND's conversation (a malformed target still routes
// somewhere; the writer refuses it).
func (t sendTarget) conversation(tenant contract.TenantID, sender contract.UserID) contract.ConversationID {
	if !t.group.IsZero() {
		if conv, err := contract.GroupConversationID(t.group); err == nil {
			return conv
		}
	}
	return contract.DirectConversationID(tenant, sender, contract.UserID(t.peer))
}

// checkSendRequest validates what must be rejected before the writer sees it — a zero or
// malformed client_message_id would enter the idempotency domain, and a malformed group id the
// conversation key space — by scanning the encoded fields without decoding the message: the
// body (up to 4 MiB) is neither copied nor re-encoded, and the original bytes are forwarded.
// The writer validates everything else.
func checkSendRequest(b []byte) (sendTarget, error) {
	var cmid, group []byte
	var t sendTarget
	kind := contract.KindDirect
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return t, fmt.Errorf("%w: %v", errSendRequest, protowire.ParseError(n))
		}
		b = b[n:]
		if (num == sendFieldClientMessageID || num == sendFieldGroupID || num == sendFieldRoomID) && typ != protowire.BytesType {
			return t, fmt.Errorf("%w: field %d has wire type %d, want bytes", errSendRequest, num, typ)
		}
		n = protowire.ConsumeFieldValue(num, typ, b)
		if n < 0 {
			return t, fmt.Errorf("%w: %v", errSendRequest, protowire.ParseError(n))
		}
		switch num { // for repeated scalar fields protobuf keeps the last value; so do we
		case sendFieldClientMessageID:
			cmid, _ = protowire.ConsumeBytes(b)
		case sendFieldGroupID, sendFieldRoomID:
			group, _ = protowire.ConsumeBytes(b)
			kind = contract.KindGroup
			if num == sendFieldRoomID {
				kind = contract.KindRoom
			}
		case sendFieldPeerUserID:
			kind = contract.KindDirect // oneof: the last member set wins
			if typ == protowire.VarintType {
				t.peer, _ = protowire.ConsumeVarint(b)
			}
		}
		b = b[n:]
	}
	if _, err := contract.ParseClientMessageID(cmid); err != nil {
		return t, fmt.Errorf("%w: %v", errSendRequest, err)
	}
	if kind != contract.KindDirect {
		g, err := contract.U128FromBytes(group)
		if err != nil || g.IsZero() {
			return t, fmt.Errorf("%w: %s_id must be 16 non-zero bytes", errSendRequest, kind)
		}
		if kind == contract.KindRoom {
			t.room = g
		} else {
			t.group = g
		}
	}
	return t, nil
}

// onSend forwards one SEND on the connection's writer stream. At the in-flight limit it blocks
// in acquirePermit — the read loop stops reading the socket, which is the back-pressure: the
// client's kernel buffer fills and its writes stall, nothing queues unseen in the gateway.
func (c *conn) onSend(m wire.Message, received time.Time) bool {
	target, err := checkSendRequest(m.Payload)
	if err != nil {
		return c.sendError(m.RequestID, contract.OpSend, contract.ErrCodeInvalidArgument, err.Error())
	}
	if v := c.s.sendLimit.Allow(c.sendBucket, c.sess.key.tenant, c.sess.key.user, received); !v.Allowed() {
		return c.sendErrorRetry(m.RequestID, contract.OpSend, contract.ErrCodeRateLimited,
			"send rate limit of the "+string(v.Scope)+" reached; retry after retry_after_ms", retryAfterMs(v.RetryAfter))
	}
	if !target.room.IsZero() {
		if c.s.rooms == nil {
			return c.sendError(m.RequestID, contract.OpSend, contract.ErrCodeUnimplemented, "rooms are not served by this deployment")
		}
		conv, err := contract.RoomConversationID(target.room) // non-zero: checkSendRequest saw to it
		if err != nil {
			return c.sendError(m.RequestID, contract.OpSend, contract.ErrCodeInvalidArgument, "room_id must be 16 non-zero bytes")
		}
		return c.onRoomSend(m, roomKey{tenant: c.sess.key.tenant, room: conv})
	}
	if !c.acquirePermit() {
		return false
	}
	p, err := c.openPipe(c.s.writers.pick(c.sess.key.tenant, target.conversation(c.sess.key.tenant, c.sess.key.user)))
	if err != nil {
		c.releasePermit()
		return c.backendFailed(m.RequestID, contract.OpSend, "writer", err)
	}
	c.nextCall++
	id := c.nextCall
	if !p.add(id, pendingSend{requestID: m.RequestID, start: received}) {
		c.releasePermit() // the stream died after openPipe looked at it; nothing was sent
		return c.sendError(m.RequestID, contract.OpSend, contract.ErrCodeUnavailable, "writer stream lost; retry with the same client_message_id")
	}
	c.s.m.writerDepth.Inc()
	err = p.stream.Send(&internalv1.AuthenticatedSend{CallId: id, TenantId: c.tenantBytes, SenderUserId: uint64(c.sess.key.user),
		SenderDeviceId: c.sess.device, SendRequest: m.Payload})
	if err != nil {
		p.cancel() // the receiver sees the stream end and fails whatever is still pending
		if _, ok := p.take(id); ok {
			c.settled()
			return c.sendError(m.RequestID, contract.OpSend, contract.ErrCodeUnavailable, "writer stream lost; retry with the same client_message_id")
		}
	}
	return true
}

// retryAfterMs rounds a rate limit's wait up to whole milliseconds: retrying at the hint passes.
func retryAfterMs(d time.Duration) uint32 {
	return uint32(min((d+time.Millisecond-1)/time.Millisecond, 1<<31))
}

func (c *conn) acquirePermit() bool {
	select {
	case c.permits <- struct{}{}:
		return true
	default:
	}
	c.s.m.sendBlocked.Inc()
	select {
	case c.permits <- struct{}{}:
		return true
	case <-c.ctx.Done():
		return false
	}
}

func (c *conn) releasePermit() { <-c.permits }

// settled ends one in-flight SEND: its permit is free and it left the backend queue.
func (c *conn) settled() {
	c.releasePermit()
	c.s.m.writerDepth.Dec()
}

// pendingSend is a SEND forwarded to the writer and not yet answered.
type pendingSend struct {
	requestID uint32
	start     time.Time
}

// sendPipe is one client connection's long-lived Writer.SendStream.
//
// Invariants: every SEND added to pending gets exactly one answer frame (SEND_ACK or ERROR)
// unless the connection itself is gone; an answer is taken out of pending before it is written,
// so the receiver and a failing Send never both answer one call; once dead, the pipe accepts no
// new call and the next SEND opens a fresh stream.
//
// How: the read loop adds the call, then Sends it; one receiver goroutine Recvs outcomes and
// writes the frames. When the stream ends, everything still pending is answered UNAVAILABLE —
// the outcome is unknown, and the client's retry with the same client_message_id is safe.
//
// Rejected: a unary SendMessage per SEND. It needs a goroutine per call and hides a queue in the
// gateway (ACK P99 of 400–700 ms hidden there, docs/adr/0004-writer-permit-on-the-send-stream.md);
// the stream carries the writer's permit window back to the socket instead.
type sendPipe struct {
	stream internalv1.Writer_SendStreamClient
	cancel context.CancelFunc
	writer int // index in the writerPool

	mu      sync.Mutex
	pending map[uint64]pendingSend
	dead    bool
}

func (p *sendPipe) add(id uint64, ps pendingSend) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.dead {
		return false
	}
	p.pending[id] = ps
	return true
}

func (p *sendPipe) take(id uint64) (pendingSend, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	ps, ok := p.pending[id]
	delete(p.pending, id)
	return ps, ok
}

// kill marks the pipe dead and returns what was pending.
func (p *sendPipe) kill() map[uint64]pendingSend {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.dead = true
	pend := p.pending
	p.pending = nil
	return pend
}

func (p *sendPipe) isDead() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.dead
}
