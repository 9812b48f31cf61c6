package sdk

// Server-initiated ends and refusals: KICKED ends the connection (and, for REPLACED, LOGGED_OUT
// and BANNED, the loop), and an ERROR frame is routed to the request it answers, whose owner
// decides between retrying, failing the request for good and dropping the connection.

import (
	"fmt"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/qim-dev/qim/contract"
	qimv1 "github.com/qim-dev/qim/proto/qim/v1"
	"github.com/qim-dev/qim/wire"
)

func (e *engine) onKicked(m wire.Message) {
	var k qimv1.Kicked
	_ = proto.Unmarshal(m.Payload, &k) // an undecodable KICKED is still a kick: UNSPECIFIED
	reason := contract.KickReason(k.GetReason())
	switch reason {
	case contract.KickReplaced, contract.KickLoggedOut, contract.KickBanned:
		e.emit(Kicked{Reason: reason, Detail: k.GetDetail()})
		e.terminate(fmt.Errorf("%w (reason %d)", ErrKicked, reason))
	default:
		e.emit(Kicked{Reason: reason, Detail: k.GetDetail(), Reconnect: true})
		e.fail(fmt.Errorf("sdk: kicked (reason %d)", reason))
		e.end.retryAfter = time.Duration(k.GetRetryAfterMs()) * time.Millisecond
	}
}

// onError routes an ERROR frame to the request it answers.
func (e *engine) onError(m wire.Message, now time.Time) {
	var ef qimv1.ErrorFrame
	if err := proto.Unmarshal(m.Payload, &ef); err != nil {
		e.fail(fmt.Errorf("%w: ERROR frame: %v", ErrProtocol, err))
		return
	}
	r := e.reqs[m.RequestID]
	se := &ServerError{Code: contract.ErrorCode(ef.GetCode()), Message: ef.GetMessage(),
		RetryAfter: time.Duration(ef.GetRetryAfterMs()) * time.Millisecond}
	if r == nil {
		se.Op = contract.Opcode(ef.GetRequestOpcode())
		e.log.Warn("sdk: server error outside a request", "op", se.Op.String(), "code", se.Code.String())
		return
	}
	delete(e.reqs, m.RequestID)
	se.Op = r.op
	switch r.kind {
	case reqAuth:
		if se.Code == contract.ErrCodeUnauthorized {
			e.terminate(fmt.Errorf("%w: %w", ErrUnauthorized, se))
			return
		}
		e.fail(se)
		e.end.retryAfter = se.RetryAfter
		e.end.loginRefused = se.Retryable()
	case reqSend:
		e.onSendError(r, se, now)
	case reqPull:
		e.onPullError(se, now)
	case reqHistory:
		r.hist.reply <- historyResult{err: se}
	case reqBackfill:
		e.onBackfillError(se, now)
	case reqSessions:
		e.onSessionsError(m.RequestID, se, now)
	case reqMarkRead:
		e.onMarkReadError(r, se, now)
	case reqCreate:
		e.onCreateError(r, se, now)
	case reqRPC:
		r.rpc.reply <- rpcResult{err: se}
	}
}
