package mailbox

import (
	"context"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/qim-dev/qim/contract"
	internalv1 "github.com/qim-dev/qim/proto/qiminternal/v1"
	"github.com/qim-dev/qim/services/internal/rpc"
)

// PushSession queues a SESSION_DELTA or TYPING_EVENT target on the push path, which routes it like a mailbox
// push: to the gateways qim.presence says hold the user's devices (or to the one gateway of
// QIM_GATEWAY_PUSH_ADDR). It is here because this node, owning the user's shard, follows that
// part of the directory; the gateway that served the MARK_READ does not. Best effort: the answer
// says the target was queued, not delivered, and the devices' next session list repairs a loss.
func (g grpcServer) PushSession(_ context.Context, t *internalv1.PushTarget) (*internalv1.PushSessionAck, error) {
	if err := g.s.checkSessionPush(t); err != nil {
		return nil, refusal(err)
	}
	g.s.push([]*internalv1.PushTarget{t})
	return &internalv1.PushSessionAck{}, nil
}

// PushSessions is PushSession for several targets (a group's typing indicator): all are checked
// before any is queued, so a refused call queued nothing and the gateway's count stays true.
func (g grpcServer) PushSessions(_ context.Context, in *internalv1.PushBatchRequest) (*internalv1.PushSessionAck, error) {
	for _, t := range in.GetTargets() {
		if err := g.s.checkSessionPush(t); err != nil {
			return nil, refusal(err)
		}
	}
	g.s.push(in.GetTargets())
	return &internalv1.PushSessionAck{}, nil
}

// refusal turns a refused session push into the gRPC status the gateway counts as failed.
func refusal(err error) error {
	code := codes.Unavailable
	if rpc.CodeOf(err) == contract.ErrCodeInvalidArgument {
		code = codes.InvalidArgument
	}
	return status.Error(code, err.Error())
}

// controlKinds counts the control payloads a session push carries.
func controlKinds(t *internalv1.PushTarget) int {
	n := 0
	for _, has := range []bool{len(t.GetSessionDelta().GetSessions()) > 0, t.GetTyping() != nil, t.GetReceipt() != nil,
		t.GetReaction() != nil} {
		if has {
			n++
		}
	}
	return n
}

// checkSessionPush refuses a target that is not one session delta of a user of this node.
func (s *Service) checkSessionPush(t *internalv1.PushTarget) error {
	tenant, err := contract.U128FromBytes(t.GetTenantId())
	switch {
	case err != nil:
		return rpc.Refuse(contract.ErrCodeInvalidArgument, "tenant_id: %v", err)
	case t.GetUserId() == 0 || len(t.GetEvents()) != 0:
		return rpc.Refuse(contract.ErrCodeInvalidArgument, "a session push names a user and carries no mailbox events")
	case controlKinds(t) != 1:
		return rpc.Refuse(contract.ErrCodeInvalidArgument, "a session push carries one session delta, typing event, read receipt or reaction event")
	}
	return s.owned(tenant, contract.UserID(t.GetUserId()))
}
