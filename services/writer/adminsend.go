package writer

// AdminSend: a SYSTEM message from the product's system account (the admin API's POST
// /v1/messages). It is a client SEND in all but who may make it: the same validation, identity
// and commit, so it is idempotent by client_message_id and a group target needs the sender to
// be a current member. Only the type differs: SYSTEM, which parseSend refuses from clients.
//
// Rejected: a sender-less system message (user 0) in its own conversation kind. It would need a
// fourth conversation kind through the mailbox, session and SDK, where a system account is a
// user every one of them already handles.

import (
	"context"
	"errors"
	"time"

	"github.com/qim-dev/qim/contract"
	qimv1 "github.com/qim-dev/qim/proto/qim/v1"
	internalv1 "github.com/qim-dev/qim/proto/qiminternal/v1"
	"github.com/qim-dev/qim/services/internal/rpc"
)

// adminSendDevice is the sender device of a system message.
const adminSendDevice = "admin-api"

func (a adminServer) AdminSend(ctx context.Context, in *internalv1.AdminSendRequest) (*internalv1.SendOutcome, error) {
	ack, err := a.s.adminSend(ctx, in)
	if err != nil {
		var refusal *rpc.RequestError
		if !errors.As(err, &refusal) {
			a.s.log.Warn("writer: admin send failed", "code", rpc.CodeOf(err).String(), "err", err)
		}
		return &internalv1.SendOutcome{ErrorCode: uint32(rpc.CodeOf(err)), ErrorMessage: rpc.ClientMessage(err)}, nil
	}
	return &internalv1.SendOutcome{Ack: ack}, nil
}

// adminSend validates a system message like a client's send and commits it, waiting for the
// answer.
func (s *Service) adminSend(ctx context.Context, in *internalv1.AdminSendRequest) (*qimv1.SendAck, error) {
	if s.stopped() {
		return nil, rpc.Refuse(contract.ErrCodeUnavailable, "writer is not committing (lease lost or shutting down)")
	}
	cmd, err := parseSendOf(&internalv1.AuthenticatedSend{TenantId: in.GetTenantId(), SenderUserId: in.GetSenderUserId(),
		SenderDeviceId: adminSendDevice, SendRequest: in.GetSendRequest()}, s.cfg.MaxBodyBytes, true)
	if err != nil {
		return nil, err
	}
	type result struct {
		ack *qimv1.SendAck
		err error
	}
	res := make(chan result, 1)
	cl := &call{cmd: cmd, ident: cmd.identity(), start: time.Now(), done: func(ack *qimv1.SendAck, err error) { res <- result{ack, err} }}
	if err := s.committer.submit(ctx, cl); err != nil {
		return nil, rpc.Refuse(contract.ErrCodeUnavailable, "send abandoned: %v", err)
	}
	select {
	case r := <-res:
		return r.ack, r.err
	case <-ctx.Done():
		return nil, rpc.Refuse(contract.ErrCodeUnavailable, "no answer before the deadline: %v", ctx.Err())
	}
}
