package gateway

import (
	"context"

	"google.golang.org/protobuf/proto"

	"github.com/qim-dev/qim/contract"
	qimv1 "github.com/qim-dev/qim/proto/qim/v1"
	internalv1 "github.com/qim-dev/qim/proto/qiminternal/v1"
	"github.com/qim-dev/qim/wire"
)

// rooms is the gateway's room side: the hub of memberships and one link per RoomWriter
// (QIM_ROOM_ADDRS). Nil when none is configured: room requests are then UNIMPLEMENTED.
type rooms struct {
	hub   *roomHub
	links []*roomLink
	addrs []string
}

// owner is the link of the RoomWriter owning a room.
func (r *rooms) owner(key roomKey) *roomLink {
	return r.links[contract.RoomOwner(key.tenant, key.room, r.addrs)]
}

// roomKeyOf validates a client's 16-byte room id; the tenant is the session's.
func (c *conn) roomKeyOf(roomID []byte) (roomKey, bool) {
	conv, ok := roomConvOf(roomID)
	return roomKey{tenant: c.sess.key.tenant, room: conv}, ok
}

// wireRoomKey is the room a RoomWriter's (tenant, room id) pair names.
func wireRoomKey(tenantID, roomID []byte) (roomKey, bool) {
	tenant, err := contract.U128FromBytes(tenantID)
	if err != nil {
		return roomKey{}, false
	}
	conv, ok := roomConvOf(roomID)
	return roomKey{tenant: tenant, room: conv}, ok
}

// roomConvOf is the conversation of a 16-byte room id, whatever its kind bits say (the
// conversation id sets them): clients and RoomWriters may spell one room two ways.
func roomConvOf(roomID []byte) (contract.ConversationID, bool) {
	id, err := contract.U128FromBytes(roomID)
	if err != nil {
		return contract.ConversationID{}, false
	}
	conv, err := contract.RoomConversationID(id)
	return conv, err == nil
}

// onJoinRoom registers the join and sends it on the owner's link; the answer comes back through
// the hub (ROOM_JOINED and the replay, or ERROR).
func (c *conn) onJoinRoom(m wire.Message) bool {
	var req qimv1.JoinRoom
	if err := proto.Unmarshal(m.Payload, &req); err != nil {
		return c.sendError(m.RequestID, m.Opcode, contract.ErrCodeInvalidArgument, "JoinRoom does not decode")
	}
	key, ok := c.roomKeyOf(req.GetRoomId())
	if !ok {
		return c.sendError(m.RequestID, m.Opcode, contract.ErrCodeInvalidArgument, "room_id must be 16 bytes, not zero")
	}
	r := c.s.rooms
	link := r.owner(key)
	sub := &roomSub{c: c, key: key, roomID: req.GetRoomId(), link: link, user: c.sess.key.user, requestID: m.RequestID}
	if code, msg := r.hub.add(sub); code != contract.ErrCodeUnspecified {
		return c.sendError(m.RequestID, m.Opcode, code, msg)
	}
	var from *uint64
	if req.ReplayFromRoomSeq != nil {
		v := req.GetReplayFromRoomSeq()
		from = &v
	}
	if err := link.join(sub, from); err != nil {
		r.hub.abandon(sub)
		c.s.m.roomJoins.WithLabelValues("unavailable").Inc()
		return c.sendError(m.RequestID, m.Opcode, contract.ErrCodeUnavailable, "the room's server is unreachable; retry")
	}
	return true
}

// onLeaveRoom leaves the room (or forgets a join still unanswered) and answers ROOM_LEFT
// REQUESTED through the room queue, after every event already queued for the room. Leaving a
// room the connection is not joined to is answered the same way.
func (c *conn) onLeaveRoom(m wire.Message) bool {
	var req qimv1.LeaveRoom
	if err := proto.Unmarshal(m.Payload, &req); err != nil {
		return c.sendError(m.RequestID, m.Opcode, contract.ErrCodeInvalidArgument, "LeaveRoom does not decode")
	}
	key, ok := c.roomKeyOf(req.GetRoomId())
	if !ok {
		return c.sendError(m.RequestID, m.Opcode, contract.ErrCodeInvalidArgument, "room_id must be 16 bytes, not zero")
	}
	c.s.rooms.hub.leave(c, key)
	c.s.m.roomLeft.WithLabelValues("requested").Inc()
	payload, err := proto.Marshal(&qimv1.RoomLeft{RoomId: req.GetRoomId(), Reason: uint32(contract.RoomLeftRequested)})
	if err != nil {
		return false
	}
	if !c.offerRoom(outFrame{op: contract.OpRoomLeft, requestID: m.RequestID, payload: payload}) {
		return c.send(contract.OpRoomLeft, m.RequestID, payload)
	}
	return true
}

// onRoomSend publishes a SEND with a room target at the room's RoomWriter. It holds a send
// permit until answered, like a SEND to a writer, so a client cannot have more than
// QIM_GATEWAY_SEND_INFLIGHT publishes outstanding; each runs on a goroutine counted in wg.
func (c *conn) onRoomSend(m wire.Message, key roomKey) bool {
	if !c.acquirePermit() {
		return false
	}
	link := c.s.rooms.owner(key)
	req := &internalv1.RoomPublish{TenantId: c.tenantBytes, SenderUserId: uint64(c.sess.key.user), SendRequest: m.Payload}
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		defer c.releasePermit()
		ctx, cancel := context.WithTimeout(c.ctx, c.s.cfg.BackendTimeout)
		defer cancel()
		out, err := link.client.Publish(ctx, req)
		c.s.m.roomSends.WithLabelValues(publishOutcome(out, err)).Inc()
		switch {
		case err != nil:
			c.backendFailed(m.RequestID, contract.OpSend, "room", err)
		case contract.ErrorCode(out.GetErrorCode()) == contract.ErrCodeRejected:
			c.sendRejected(m.RequestID, out.GetErrorMessage(), out.GetErrorReason())
		case out.GetErrorCode() != 0:
			c.sendErrorRetry(m.RequestID, contract.OpSend, contract.ErrorCode(out.GetErrorCode()), out.GetErrorMessage(), out.GetRetryAfterMs())
		default:
			c.reply(contract.OpSendAck, m.RequestID, out.GetAck())
		}
	}()
	return true
}

func publishOutcome(out *internalv1.RoomPublishOutcome, err error) string {
	switch {
	case err != nil:
		return "unavailable"
	case out.GetErrorCode() != 0:
		return "refused"
	}
	return "ok"
}

// roomQueueFrames is the room queue's capacity in frames; the binding bound is normally
// Config.RoomQueueBytes, this one only for floods of tiny frames.
const roomQueueFrames = 4096

// offerRoom queues a live room frame without blocking; false means the room queue is full (by
// bytes or by frames). A frame larger than the byte bound is accepted into an empty queue, so
// one large event is not mistaken for a slow consumer.
func (c *conn) offerRoom(f outFrame) bool { return c.queueRoom(f, false) }

// offerJoin queues a join's ROOM_JOINED or replay frame: past the byte bound too (a replay is
// the server's own burst of at most contract.RoomReplayMaxBytes, and a rejoin after a drop
// finds the queue still holding the old backlog), not past the frame capacity.
func (c *conn) offerJoin(f outFrame) bool { return c.queueRoom(f, true) }

func (c *conn) queueRoom(f outFrame, join bool) bool {
	n := int64(len(f.payload))
	if q := c.roomBytes.Add(n); !join && q > int64(c.s.cfg.RoomQueueBytes) && q != n {
		c.roomBytes.Add(-n)
		return false
	}
	select {
	case c.roomQ <- f:
		return true
	default:
		c.roomBytes.Add(-n)
		return false
	}
}

// offerCtrl queues a frame that must not be lost (an answer, a ROOM_LEFT) from a goroutine that
// must not block (a room link's reader). A connection whose control queue is full is not
// reading at all: it is closed.
func (c *conn) offerCtrl(f outFrame) {
	select {
	case c.ctrlQ <- f:
	default:
		c.interrupt()
	}
}

// queueError answers a request with ERROR through the control queue.
func (c *conn) queueError(requestID uint32, reqOp contract.Opcode, code contract.ErrorCode, msg string) {
	if payload, err := c.errorPayload(reqOp, code, msg, 0); err == nil {
		c.offerCtrl(outFrame{op: contract.OpError, requestID: requestID, payload: payload})
	}
}

// queueRoomLeft tells the client, on the control queue, that it left a room on the server's
// initiative.
func (c *conn) queueRoomLeft(roomID []byte, reason contract.RoomLeftReason) {
	payload, err := proto.Marshal(&qimv1.RoomLeft{RoomId: roomID, Reason: uint32(reason)})
	if err == nil {
		c.offerCtrl(outFrame{op: contract.OpRoomLeft, payload: payload})
	}
}
