package gateway

import (
	"google.golang.org/protobuf/proto"

	"github.com/qim-dev/qim/contract"
	qimv1 "github.com/qim-dev/qim/proto/qim/v1"
	"github.com/qim-dev/qim/services/internal/rpc"
	"github.com/qim-dev/qim/wire"
)

// Every downlink frame is written through these helpers and the connection's one wire.Writer.
// They return false when the frame could not be written: the socket is dead, and the caller must
// stop (the read loop returns; a helper goroutine interrupts the connection).

// send writes one downlink message and waits until it reached the socket.
func (c *conn) send(op contract.Opcode, requestID uint32, payload []byte) bool {
	return c.w.Send(c.ctx, wire.Message{Opcode: op, RequestID: requestID, Payload: payload}) == nil
}

// reply marshals msg and writes it; responses carry the request's id.
func (c *conn) reply(op contract.Opcode, requestID uint32, msg proto.Message) bool {
	payload, err := proto.Marshal(msg)
	if err != nil || len(payload) > wire.MaxPayload {
		// The backend built an answer the wire cannot carry; the request fails, the connection
		// stays.
		return c.sendError(requestID, 0, contract.ErrCodeInternal, "response does not fit one frame")
	}
	return c.send(op, requestID, payload)
}

// sendError answers a request with ERROR{code, message, request_opcode}; the connection stays
// open. It is counted by request opcode and code.
func (c *conn) sendError(requestID uint32, reqOp contract.Opcode, code contract.ErrorCode, msg string) bool {
	return c.sendErrorRetry(requestID, reqOp, code, msg, 0)
}

// sendErrorRetry is sendError with retry_after_ms (RATE_LIMITED by a room's slow mode or rate
// limit says when a retry may be accepted; 0: not said).
func (c *conn) sendErrorRetry(requestID uint32, reqOp contract.Opcode, code contract.ErrorCode, msg string, retryAfterMs uint32) bool {
	payload, err := c.errorPayload(reqOp, code, msg, retryAfterMs)
	if err != nil {
		return false
	}
	return c.send(contract.OpError, requestID, payload)
}

// sendRejected answers a SEND the moderation hook refused: REJECTED with the hook's reason code.
func (c *conn) sendRejected(requestID uint32, msg, reason string) bool {
	payload, err := c.encodeError(&qimv1.ErrorFrame{Code: uint32(contract.ErrCodeRejected), Message: msg,
		RequestOpcode: uint32(contract.OpSend), Reason: reason})
	if err != nil {
		return false
	}
	return c.send(contract.OpError, requestID, payload)
}

// errorPayload encodes an ERROR frame's payload: every ERROR answer, written at once or queued
// (queueError), is built here or, with a reason, in sendRejected; encodeError counts them all.
func (c *conn) errorPayload(reqOp contract.Opcode, code contract.ErrorCode, msg string, retryAfterMs uint32) ([]byte, error) {
	return c.encodeError(&qimv1.ErrorFrame{Code: uint32(code), Message: msg, RequestOpcode: uint32(reqOp), RetryAfterMs: retryAfterMs})
}

// encodeError counts an ERROR frame by its request opcode and code and encodes it.
func (c *conn) encodeError(f *qimv1.ErrorFrame) ([]byte, error) {
	c.s.m.requestErrors.WithLabelValues(opcodeLabel(contract.Opcode(f.GetRequestOpcode())), contract.ErrorCode(f.GetCode()).String()).Inc()
	return proto.Marshal(f)
}

// backendFailed answers a request whose backend call returned a Go error: a transport failure or
// a deadline, since a backend's decided refusals arrive as outcome codes, not as errors. Code and
// text come from the one mapping (rpc.CodeOf: UNAVAILABLE, the outcome is unknown and a retry is
// safe; rpc.ClientMessage: never the error's text, which may hold addresses); the error itself is
// logged. It reports false without answering when the connection is already closing.
func (c *conn) backendFailed(requestID uint32, reqOp contract.Opcode, backend string, err error) bool {
	if c.ctx.Err() != nil {
		return false
	}
	c.s.log.Warn("gateway: backend call failed", "backend", backend, "opcode", opcodeLabel(reqOp), "err", err)
	return c.sendError(requestID, reqOp, rpc.CodeOf(err), rpc.ClientMessage(err))
}

// finalError sends the last frame of a connection we are about to close, and asks teardown to
// linger so the peer reads it before the close.
func (c *conn) finalError(requestID uint32, reqOp contract.Opcode, code contract.ErrorCode, msg string) {
	if c.sendError(requestID, reqOp, code, msg) {
		c.linger.Store(true)
	}
}

// opcodeLabel keeps the metric label to the contract's finite opcode table.
func opcodeLabel(op contract.Opcode) string {
	if op == 0 {
		return "none"
	}
	if _, ok := op.Lookup(); !ok {
		return "unknown"
	}
	return op.String()
}

// finalKick sends KICKED as the last frame of a connection the read loop is closing.
func (c *conn) finalKick(reason contract.KickReason, detail string) {
	payload, err := proto.Marshal(&qimv1.Kicked{Reason: uint32(reason), Detail: detail})
	if err == nil && c.send(contract.OpKicked, 0, payload) {
		c.linger.Store(true)
	}
}
