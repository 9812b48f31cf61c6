package writer

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"

	"google.golang.org/protobuf/proto"

	"github.com/qim-dev/qim/contract"
	qimv1 "github.com/qim-dev/qim/proto/qim/v1"
	internalv1 "github.com/qim-dev/qim/proto/qiminternal/v1"
	"github.com/qim-dev/qim/services/internal/rpc"
)

// Member page sizes of PULL_MEMBERS.
const (
	membersPageDefault = 200
	membersPageMax     = contract.GroupMaxMembers
)

// Group serves CREATE_GROUP, PULL_MEMBERS and LEAVE_GROUP for the gateway.
func (g grpcServer) Group(ctx context.Context, in *internalv1.AuthenticatedGroupRequest) (*internalv1.GroupOutcome, error) {
	op, msg, err := g.s.group(ctx, in)
	if err != nil {
		var refusal *rpc.RequestError
		if !errors.As(err, &refusal) {
			g.s.log.Warn("writer: group request failed", "code", rpc.CodeOf(err).String(), "err", err)
		}
		return &internalv1.GroupOutcome{ErrorCode: uint32(rpc.CodeOf(err)), ErrorMessage: rpc.ClientMessage(err)}, nil
	}
	b, err := proto.Marshal(msg)
	if err != nil {
		return nil, fmt.Errorf("writer: encode group answer: %w", err)
	}
	return &internalv1.GroupOutcome{Opcode: uint32(op), Payload: b}, nil
}

func (s *Service) group(ctx context.Context, in *internalv1.AuthenticatedGroupRequest) (contract.Opcode, proto.Message, error) {
	if s.stopped() {
		return 0, nil, rpc.Refuse(contract.ErrCodeUnavailable, "writer is not committing (lease lost or shutting down)")
	}
	tenant, err := contract.U128FromBytes(in.GetTenantId())
	if err != nil || in.GetActorUserId() == 0 {
		return 0, nil, rpc.Refuse(contract.ErrCodeInvalidArgument, "tenant_id or actor missing")
	}
	actor := contract.UserID(in.GetActorUserId())
	switch contract.Opcode(in.GetOpcode()) {
	case contract.OpCreateGroup:
		var req qimv1.CreateGroup
		if err := proto.Unmarshal(in.GetPayload(), &req); err != nil {
			return 0, nil, rpc.Refuse(contract.ErrCodeInvalidArgument, "malformed CreateGroup: %v", err)
		}
		out, err := s.createGroup(ctx, tenant, actor, in.GetActorDeviceId(), &req)
		return contract.OpGroupCreated, out, err
	case contract.OpPullMembers:
		var req qimv1.PullMembers
		if err := proto.Unmarshal(in.GetPayload(), &req); err != nil {
			return 0, nil, rpc.Refuse(contract.ErrCodeInvalidArgument, "malformed PullMembers: %v", err)
		}
		out, err := s.pullMembers(ctx, tenant, actor, &req)
		return contract.OpMembersBatch, out, err
	case contract.OpLeaveGroup:
		var req qimv1.LeaveGroup
		if err := proto.Unmarshal(in.GetPayload(), &req); err != nil {
			return 0, nil, rpc.Refuse(contract.ErrCodeInvalidArgument, "malformed LeaveGroup: %v", err)
		}
		out, err := s.leaveGroup(ctx, tenant, actor, in.GetActorDeviceId(), &req)
		return contract.OpLeaveGroupAck, out, err
	}
	return 0, nil, rpc.Refuse(contract.ErrCodeUnimplemented, "opcode %#04x is not a group request", in.GetOpcode())
}

func (s *Service) createGroup(ctx context.Context, tenant contract.TenantID, actor contract.UserID, device string, req *qimv1.CreateGroup) (*qimv1.GroupCreated, error) {
	crid, err := contract.ParseClientMessageID(req.GetClientRequestId())
	if err != nil {
		return nil, rpc.Refuse(contract.ErrCodeInvalidArgument, "client_request_id: %v", err)
	}
	conv := contract.DeriveGroupID(tenant, actor, contract.U128(crid))
	members := canonicalUsers(req.GetMemberUserIds(), actor)
	out, err := s.changeMembership(ctx, change{tenant: tenant, conv: conv, op: contract.MembershipCreate, actor: actor,
		device: device, users: members, name: req.GetName(), ident: createIdent(req.GetName(), members)})
	if err != nil {
		return nil, err
	}
	cid := conv.Bytes()
	return &qimv1.GroupCreated{ClientRequestId: req.GetClientRequestId(), GroupId: cid[:], ConversationId: cid[:],
		MembershipVersion: out.version}, nil
}

func (s *Service) leaveGroup(ctx context.Context, tenant contract.TenantID, actor contract.UserID, device string, req *qimv1.LeaveGroup) (*qimv1.LeaveGroupAck, error) {
	conv, err := groupConv(req.GetGroupId())
	if err != nil {
		return nil, err
	}
	out, err := s.changeMembership(ctx, change{tenant: tenant, conv: conv, op: contract.MembershipLeave, actor: actor,
		device: device, users: []contract.UserID{actor}})
	if err != nil {
		return nil, err
	}
	if out.seq == 0 { // planned as a no-op: the actor was not a member after all
		return nil, rpc.Refuse(contract.ErrCodeNotMember, "not a current member of this group")
	}
	return &qimv1.LeaveGroupAck{GroupId: req.GetGroupId(), LeftAtSeq: out.seq, MembershipVersion: out.version}, nil
}

// pullMembers pages the current members for a current member.
func (s *Service) pullMembers(ctx context.Context, tenant contract.TenantID, actor contract.UserID, req *qimv1.PullMembers) (*qimv1.MembersBatch, error) {
	conv, err := groupConv(req.GetGroupId())
	if err != nil {
		return nil, err
	}
	g, ok, err := s.store.LoadGroup(ctx, tenant, conv)
	if err != nil {
		return nil, fmt.Errorf("writer: load group: %w", err)
	}
	if !ok || !g.Members[actor].Current() {
		return nil, rpc.Refuse(contract.ErrCodeNotMember, "not a current member of this group")
	}
	var after uint64
	switch len(req.GetPageToken()) {
	case 0:
	case 8:
		after = binary.BigEndian.Uint64(req.GetPageToken())
	default:
		return nil, rpc.Refuse(contract.ErrCodeInvalidArgument, "page_token is not one this server issued")
	}
	limit := int(req.GetLimit())
	if limit == 0 {
		limit = membersPageDefault
	}
	limit = min(limit, membersPageMax)
	out := &qimv1.MembersBatch{GroupId: req.GetGroupId(), MembershipVersion: g.Version}
	for _, u := range g.Current() {
		if uint64(u) <= after && req.GetPageToken() != nil {
			continue
		}
		if len(out.Members) == limit {
			out.HasMore = true
			out.NextPageToken = binary.BigEndian.AppendUint64(nil, out.Members[limit-1].GetUserId())
			break
		}
		out.Members = append(out.Members, &qimv1.Member{UserId: uint64(u), JoinedAtSeq: g.Members[u][len(g.Members[u])-1].Joined})
	}
	return out, nil
}

func groupConv(b []byte) (contract.ConversationID, error) {
	gid, err := contract.U128FromBytes(b)
	if err != nil {
		return contract.ConversationID{}, rpc.Refuse(contract.ErrCodeInvalidArgument, "group_id: %v", err)
	}
	conv, err := contract.GroupConversationID(gid)
	if err != nil {
		return contract.ConversationID{}, rpc.Refuse(contract.ErrCodeInvalidArgument, "%v", err)
	}
	return conv, nil
}
