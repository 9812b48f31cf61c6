package gateway

import (
	"time"

	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/wire"
)

// requestMaxBytes bounds every uplink request except SEND, whose body may use the whole frame.
// AUTH, PING and pull requests are a few dozen bytes; a larger one is either a bug or an attempt
// to make the gateway buffer and forward megabytes, and is answered PAYLOAD_TOO_LARGE.
const requestMaxBytes = contract.StreamWriteChunkBytes

// readLoop reads and dispatches frames of an authenticated connection until the client leaves,
// falls silent for longer than the heartbeat timeout, breaks the framing, or we close it.
func (c *conn) readLoop() {
	for {
		// Any frame counts as liveness, so the deadline is renewed before every read, with the
		// timeout of the heartbeat schedule last told to the client (beat.go). The cancellation
		// check after it closes the race with interrupt (see there).
		_ = c.nc.SetReadDeadline(time.Now().Add(c.hb.timeout()))
		if c.ctx.Err() != nil {
			return
		}
		m, err := c.r.ReadMessage()
		if err != nil {
			c.readFailed(err, false)
			return
		}
		if c.ctx.Err() != nil || !c.handle(m, time.Now()) {
			return
		}
	}
}

// handle dispatches one request. It returns false when the connection must close.
func (c *conn) handle(m wire.Message, received time.Time) bool {
	if m.Opcode != contract.OpSend && len(m.Payload) > requestMaxBytes {
		return c.sendError(m.RequestID, m.Opcode, contract.ErrCodePayloadTooLarge, "request above 64 KiB")
	}
	switch m.Opcode {
	case contract.OpPing:
		return c.onPing(m, received)
	case contract.OpPong:
		return true // the answer to a server probe: liveness only, already counted by the read
	case contract.OpSend:
		return c.onSend(m, received)
	case contract.OpPullMailbox, contract.OpPullHistory, contract.OpPullSessionList, contract.OpMarkRead,
		contract.OpPullReadReceipts, contract.OpSetReadReceipts, contract.OpReact, contract.OpCreateGroup, contract.OpPullMembers, contract.OpLeaveGroup, contract.OpRegisterPushToken:
		return c.enqueuePull(m)
	case contract.OpJoinRoom, contract.OpLeaveRoom:
		if c.s.rooms == nil {
			break
		}
		if m.Opcode == contract.OpJoinRoom {
			return c.onJoinRoom(m)
		}
		return c.onLeaveRoom(m)
	case contract.OpTyping:
		return c.onTyping(m)
	case contract.OpLogout:
		c.forgetPushToken()
		return false // the close is the acknowledgement
	case contract.OpAuth:
		return c.sendError(m.RequestID, m.Opcode, contract.ErrCodeInvalidArgument, "connection is already authenticated")
	}
	// READ_SYNC, room opcodes without QIM_ROOM_ADDRS, downlink opcodes and unknown values: the
	// connection stays usable, the client learns this server does not serve the request.
	return c.sendError(m.RequestID, m.Opcode, contract.ErrCodeUnimplemented, "opcode not served by this gateway")
}
