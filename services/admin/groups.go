package admin

// Group routes: the administrator's membership changes, over the writer's GroupAdmin RPC
// (the same CONTROL commits as a client's, with actor 0; services/writer/admin.go). The admin
// API holds the admin certificate of the internal RPC boundary (ADR-0025); an API key with scope
// "groups" is what a product backend holds instead.

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net/http"

	"github.com/qim-dev/qim/contract"
	internalv1 "github.com/qim-dev/qim/proto/qiminternal/v1"
)

// GroupCreateRequest creates a group with an owner and initial members.
type GroupCreateRequest struct {
	Tenant    string   `json:"tenant,omitempty" doc:"tenant as 32 hex digits (default: tenant 0)"`
	Owner     uint64   `json:"owner" doc:"the owner, creator of record (a member)"`
	Members   []uint64 `json:"members,omitempty" doc:"initial members besides the owner"`
	Name      string   `json:"name" doc:"display name"`
	RequestID string   `json:"request_id,omitempty" doc:"idempotency key, 32 hex digits: a repeated create returns the group the first made (default: random)"`
}

// GroupMembersRequest adds or removes members.
type GroupMembersRequest struct {
	Tenant string   `json:"tenant,omitempty" doc:"tenant as 32 hex digits (default: tenant 0)"`
	Group  string   `json:"group" doc:"group id, 32 hex digits"`
	Users  []uint64 `json:"users" doc:"users to add or remove (already in, or already out: left alone)"`
}

// GroupQuery names a group in a GET's query.
type GroupQuery struct {
	Tenant string `json:"tenant,omitempty" doc:"tenant as 32 hex digits (default: tenant 0)"`
	Group  string `json:"group" doc:"group id, 32 hex digits"`
}

// GroupChange is the answer to a create or a membership change.
type GroupChange struct {
	Group             string `json:"group" doc:"group id, 32 hex digits"`
	MembershipVersion uint64 `json:"membership_version" doc:"the group's membership version after the change"`
	ConversationSeq   uint64 `json:"conversation_seq" doc:"seq of the change's CONTROL message in the group conversation; 0 when nothing changed"`
}

// GroupMember is one current member and the interval of seqs it sees.
type GroupMember struct {
	User        uint64 `json:"user" doc:"user id"`
	JoinedAtSeq uint64 `json:"joined_at_seq" doc:"the member sees messages with seq above it"`
}

// GroupMembers lists a group's current members.
type GroupMembers struct {
	Group   string        `json:"group" doc:"group id, 32 hex digits"`
	Members []GroupMember `json:"members" doc:"current members, by user id"`
}

// groupAdmin is the writer's GroupAdmin client (nil: QIM_WRITER_ADDRS unset, routes 404).
type groupAdmin interface {
	AdminGroup(ctx context.Context, in *internalv1.AdminGroupRequest) (*internalv1.AdminGroupOutcome, error)
	AdminSend(ctx context.Context, in *internalv1.AdminSendRequest) (*internalv1.SendOutcome, error)
}

func groupCreate(ctx context.Context, a *api, in input) (int, any, []any, error) {
	var req GroupCreateRequest
	if err := decode(in.body, &req); err != nil {
		return 0, nil, nil, err
	}
	audit := []any{"owner", req.Owner, "members", len(req.Members)}
	r := &internalv1.AdminGroupRequest{Op: uint32(contract.AdminGroupCreate), OwnerUserId: req.Owner, UserIds: req.Members, Name: req.Name}
	switch {
	case req.Owner == 0:
		return 0, nil, audit, fmt.Errorf("%w: owner must be a user id", errBadRequest)
	case req.Name == "":
		return 0, nil, audit, fmt.Errorf("%w: name must not be empty", errBadRequest)
	}
	key, err := idempotencyKey("request_id", req.RequestID)
	if err != nil {
		return 0, nil, audit, err
	}
	r.ClientRequestId = key.AppendBytes(nil)
	out, err := a.callGroup(ctx, req.Tenant, r)
	if err != nil {
		return 0, nil, audit, err
	}
	g, _ := contract.U128FromBytes(out.GetGroupId())
	return http.StatusOK, GroupChange{Group: g.String(), MembershipVersion: out.GetMembershipVersion(), ConversationSeq: out.GetConversationSeq()},
		append(audit, "group", g.String()), nil
}

// groupMembers is the handler of adding (op ADD) or removing (REMOVE) members.
func groupMembers(op contract.AdminGroupOp) handleFunc {
	return func(ctx context.Context, a *api, in input) (int, any, []any, error) {
		var req GroupMembersRequest
		if err := decode(in.body, &req); err != nil {
			return 0, nil, nil, err
		}
		audit := []any{"group", req.Group, "users", req.Users}
		if len(req.Users) == 0 {
			return 0, nil, audit, fmt.Errorf("%w: users: name at least one", errBadRequest)
		}
		r := &internalv1.AdminGroupRequest{Op: uint32(op), UserIds: req.Users}
		if err := groupID(req.Group, r); err != nil {
			return 0, nil, audit, err
		}
		out, err := a.callGroup(ctx, req.Tenant, r)
		if err != nil {
			return 0, nil, audit, err
		}
		return http.StatusOK, GroupChange{Group: req.Group, MembershipVersion: out.GetMembershipVersion(), ConversationSeq: out.GetConversationSeq()}, audit, nil
	}
}

func groupList(ctx context.Context, a *api, in input) (int, any, []any, error) {
	var q GroupQuery
	if err := decodeQuery(in.query, &q); err != nil {
		return 0, nil, nil, err
	}
	audit := []any{"group", q.Group}
	r := &internalv1.AdminGroupRequest{Op: uint32(contract.AdminGroupList)}
	if err := groupID(q.Group, r); err != nil {
		return 0, nil, audit, err
	}
	out, err := a.callGroup(ctx, q.Tenant, r)
	if err != nil {
		return 0, nil, audit, err
	}
	resp := GroupMembers{Group: q.Group, Members: []GroupMember{}}
	for _, m := range out.GetMembers() {
		resp.Members = append(resp.Members, GroupMember{User: m.GetUserId(), JoinedAtSeq: m.GetJoinedAtSeq()})
	}
	return http.StatusOK, resp, audit, nil
}

func groupID(s string, r *internalv1.AdminGroupRequest) error {
	g, err := contract.ParseU128(s)
	if err != nil || g.IsZero() {
		return fmt.Errorf("%w: group: want 32 hex digits, not zero", errBadRequest)
	}
	r.GroupId = g.AppendBytes(nil)
	return nil
}

// idempotencyKey is a request's key (field names it in errors): 32 hex digits, not zero, or a
// random key when s is empty.
func idempotencyKey(field, s string) (contract.U128, error) {
	if s != "" {
		k, err := contract.ParseU128(s)
		if err != nil || k.IsZero() {
			return k, fmt.Errorf("%w: %s: want 32 hex digits, not zero", errBadRequest, field)
		}
		return k, nil
	}
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return contract.U128{}, fmt.Errorf("admin: %s: %w", field, err)
	}
	k, _ := contract.U128FromBytes(b[:])
	k.Lo |= 1 // never zero
	return k, nil
}

// errConflict is wrapped by a 409: the group is full, or the change contradicts its state.
var errConflict = errors.New("conflict")

// callGroup sends r to the writer and maps its refusal onto the API's errors.
func (a *api) callGroup(ctx context.Context, tenant string, r *internalv1.AdminGroupRequest) (*internalv1.AdminGroupOutcome, error) {
	if a.groups == nil {
		return nil, fmt.Errorf("%w: group routes are off (no QIM_WRITER_ADDRS)", errNotFound)
	}
	t, err := parseTenant(tenant)
	if err != nil {
		return nil, err
	}
	r.TenantId = t.AppendBytes(nil)
	out, err := a.groups.AdminGroup(ctx, r)
	if err != nil {
		return nil, fmt.Errorf("admin: GroupAdmin: %w", err)
	}
	if err := refusal(contract.ErrorCode(out.GetErrorCode()), out.GetErrorMessage()); err != nil {
		return nil, err
	}
	return out, nil
}

// refusal maps a writer's refusal onto the API's errors (nil: none).
func refusal(code contract.ErrorCode, msg string) error {
	switch code {
	case contract.ErrCodeUnspecified:
		return nil
	case contract.ErrCodeInvalidArgument, contract.ErrCodePayloadTooLarge:
		return fmt.Errorf("%w: %s: %s", errBadRequest, code, msg)
	case contract.ErrCodeNotMember:
		return fmt.Errorf("%w: %s", errNotFound, msg)
	case contract.ErrCodeGroupFull, contract.ErrCodeConflict:
		return fmt.Errorf("%w: %s: %s", errConflict, code, msg)
	}
	return fmt.Errorf("admin: writer refused: %s: %s", code, msg)
}
