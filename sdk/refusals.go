package sdk

// Server-initiated ends and refusals: KICKED ends the connection (and, for REPLACED, LOGGED_OUT,
// BANNED and KICKED_BY_ADMIN, the loop), and an ERROR frame is routed to the request it answers, whose owner
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
	case contract.KickReplaced, contract.KickLoggedOut, contract.KickBanned, contract.KickByAdmin:
		e.emit(Kicked{Reason: reason, Detail: k.GetDetail()})
		e.terminate(fmt.Errorf("%w (reason %d)", ErrKicked, reason))
		if reason == contract.KickLoggedOut || reason == contract.KickBanned {
			e.failQueued()
		}
	default:
		e.emit(Kicked{Reason: reason, Detail: k.GetDetail(), Reconnect: true})
		e.fail(fmt.Errorf("sdk: kicked (reason %d)", reason))
		e.end.retryAfter = time.Duration(k.GetRetryAfterMs()) * time.Millisecond
	}
}

// failQueued fails, for good and visibly (Failed{ErrRevoked}), every queued send that is not in
// flight: the credential is revoked, the loop stops, and a send left queued would never end. A
// send in flight keeps its row: the server may have committed it, and a Failed would then
// contradict what the user's other devices show; the next sign-in on this store resolves it
// (its own mailbox copy, or an idempotent resend). REPLACED and KICKED_BY_ADMIN keep everything: the credential is still
// good, and this installation may connect again (a new Connect sends them).
func (e *engine) failQueued() {
	for after := int64(-1); ; {
		rows, err := e.st.QueuedAfter(storeCtx, after, revokePage)
		if err != nil {
			e.log.Warn("sdk: list pending sends after a revocation", "err", err)
			return
		}
		for _, p := range rows {
			after = int64(p.Ordinal)
			if _, busy := e.inflight[p.ClientMessageID]; busy {
				continue
			}
			ok, err := e.st.FailPending(storeCtx, p.ClientMessageID, contract.ErrCodeUnauthorized, ErrRevoked.Error())
			if err != nil {
				e.log.Warn("sdk: fail a pending send after a revocation", "err", err)
				return
			}
			if ok {
				e.emit(Failed{ClientMessageID: p.ClientMessageID, Code: contract.ErrCodeUnauthorized, Err: ErrRevoked})
			}
		}
		if len(rows) < revokePage {
			return
		}
	}
}

// revokePage is how many queued sends failQueued reads at a time.
const revokePage = 256

// onError routes an ERROR frame to the request it answers.
func (e *engine) onError(m wire.Message, now time.Time) {
	var ef qimv1.ErrorFrame
	if err := proto.Unmarshal(m.Payload, &ef); err != nil {
		e.fail(fmt.Errorf("%w: ERROR frame: %v", ErrProtocol, err))
		return
	}
	r := e.reqs[m.RequestID]
	se := &ServerError{Code: contract.ErrorCode(ef.GetCode()), Message: ef.GetMessage(),
		RetryAfter: time.Duration(ef.GetRetryAfterMs()) * time.Millisecond, Reason: ef.GetReason()}
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
	case reqRoomJoin:
		e.onRoomJoinError(m.RequestID, r, se, now)
	case reqRoomLeave:
		e.onRoomLeaveError(r, se)
	case reqRoomSend:
		e.onRoomSendError(r, se, now)
	}
}
