package writer

import (
	"context"
	"errors"

	"github.com/qim-dev/qim/contract"
	qimv1 "github.com/qim-dev/qim/proto/qim/v1"
	internalv1 "github.com/qim-dev/qim/proto/qiminternal/v1"
	"github.com/qim-dev/qim/services/internal/rpc"
)

// adminServer serves GroupAdmin: the administrator's changes are the same CONTROL commits as a
// client's, with actor 0 and the owner as the message's sender. It is registered on the writer's
// listener and admits only a caller with the admin role (ADR-0025, contract.RPCMethodRoles).
type adminServer struct {
	internalv1.UnimplementedGroupAdminServer
	s *Service
}

func (a adminServer) AdminGroup(ctx context.Context, in *internalv1.AdminGroupRequest) (*internalv1.AdminGroupOutcome, error) {
	out, err := a.s.admin(ctx, in)
	if err != nil {
		var refusal *rpc.RequestError
		if !errors.As(err, &refusal) {
			a.s.log.Warn("writer: admin group request failed", "code", rpc.CodeOf(err).String(), "err", err)
		}
		return &internalv1.AdminGroupOutcome{ErrorCode: uint32(rpc.CodeOf(err)), ErrorMessage: rpc.ClientMessage(err)}, nil
	}
	return out, nil
}

func (s *Service) admin(ctx context.Context, in *internalv1.AdminGroupRequest) (*internalv1.AdminGroupOutcome, error) {
	if s.stopped() {
		return nil, rpc.Refuse(contract.ErrCodeUnavailable, "writer is not committing (lease lost or shutting down)")
	}
	tenant, err := contract.U128FromBytes(in.GetTenantId())
	if err != nil {
		return nil, rpc.Refuse(contract.ErrCodeInvalidArgument, "tenant_id: %v", err)
	}
	op := contract.AdminGroupOp(in.GetOp())
	if op == contract.AdminGroupCreate {
		if in.GetOwnerUserId() == 0 {
			return nil, rpc.Refuse(contract.ErrCodeInvalidArgument, "CREATE needs owner_user_id")
		}
		g, err := s.createGroup(ctx, tenant, contract.UserID(in.GetOwnerUserId()), adminDevice, &qimv1.CreateGroup{
			ClientRequestId: in.GetClientRequestId(), Name: in.GetName(), MemberUserIds: in.GetUserIds()})
		if err != nil {
			return nil, err
		}
		// The CREATE control message is the group conversation's first seq.
		return &internalv1.AdminGroupOutcome{GroupId: g.GetGroupId(), MembershipVersion: g.GetMembershipVersion(), ConversationSeq: 1}, nil
	}
	conv, err := groupConv(in.GetGroupId())
	if err != nil {
		return nil, err
	}
	if mop, ok := op.Membership(); ok {
		users := canonicalUsers(in.GetUserIds(), 0)
		if len(users) == 0 {
			return nil, rpc.Refuse(contract.ErrCodeInvalidArgument, "no user_ids")
		}
		out, err := s.changeMembership(ctx, change{tenant: tenant, conv: conv, op: mop, device: adminDevice, users: users})
		if err != nil {
			return nil, err
		}
		return &internalv1.AdminGroupOutcome{GroupId: in.GetGroupId(), MembershipVersion: out.version, ConversationSeq: out.seq}, nil
	}
	if op == contract.AdminGroupList {
		return s.adminList(ctx, tenant, conv, in.GetGroupId())
	}
	return nil, rpc.Refuse(contract.ErrCodeInvalidArgument, "op %d is not CREATE (1), ADD (2), REMOVE (3) or LIST (4)", in.GetOp())
}

func (s *Service) adminList(ctx context.Context, tenant contract.TenantID, conv contract.ConversationID, gid []byte) (*internalv1.AdminGroupOutcome, error) {
	g, ok, err := s.store.LoadGroup(ctx, tenant, conv)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, rpc.Refuse(contract.ErrCodeInvalidArgument, "no such group")
	}
	out := &internalv1.AdminGroupOutcome{GroupId: gid, MembershipVersion: g.Version}
	for _, u := range g.Current() {
		m := g.Members[u]
		out.Members = append(out.Members, &qimv1.Member{UserId: uint64(u), JoinedAtSeq: m[len(m)-1].Joined})
	}
	return out, nil
}
