package writer

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"

	"google.golang.org/protobuf/proto"
	"lukechampine.com/blake3"

	"github.com/qim-dev/qim/contract"
	qimv1 "github.com/qim-dev/qim/proto/qim/v1"
	"github.com/qim-dev/qim/services/internal/msgstore"
	"github.com/qim-dev/qim/services/internal/rpc"
)

// replanMax bounds how often a change is re-planned when another change moved the version
// between the read and the script (the seed's bound of 3); then the caller is told to retry.
const replanMax = 3

// adminDevice is the sender device of an administrator's change (its sender is the owner).
const adminDevice = "qimctl"

// change is one membership request before planning.
type change struct {
	tenant contract.TenantID
	conv   contract.ConversationID
	op     contract.MembershipOp
	actor  contract.UserID // 0: an administrator
	device string
	users  []contract.UserID // requested; planning keeps the real changes
	// CREATE only.
	name  string
	ident string
}

// changed is what a committed (or no-op) change left behind.
type changed struct {
	version uint64
	seq     uint64 // 0: nothing to change (every user already in, or already out)
	count   int
}

// changeMembership plans a change against the current membership and commits it as a CONTROL
// message (RESERVED … COMMITTED like a send), re-planning when another change got in first.
func (s *Service) changeMembership(ctx context.Context, ch change) (changed, error) {
	for attempt := 0; ; attempt++ {
		out, err := s.changeOnce(ctx, ch)
		if !errors.Is(err, msgstore.ErrMembershipChanged) {
			return out, err
		}
		if attempt == replanMax {
			return changed{}, rpc.Refuse(contract.ErrCodeRateLimited, "membership is changing concurrently; retry")
		}
	}
}

func (s *Service) changeOnce(ctx context.Context, ch change) (changed, error) {
	g, ok, err := s.store.LoadGroup(ctx, ch.tenant, ch.conv)
	if err != nil {
		return changed{}, fmt.Errorf("writer: load group: %w", err)
	}
	plan, done, err := planChange(ch, g, ok)
	if err != nil || done != nil {
		if done != nil {
			return *done, nil
		}
		return changed{}, err
	}
	cmd, err := plan.command(ch)
	if err != nil {
		return changed{}, err
	}
	mid, err := s.ids.Next()
	if err != nil {
		return changed{}, fmt.Errorf("writer: issue message_id: %w", err)
	}
	rec, err := cmd.record(mid)
	if err != nil {
		return changed{}, err
	}
	gc := msgstore.GroupChange{
		Intent: msgstore.Intent{Key: cmd.key(), Identity: cmd.identity(), MessageID: mid, Record: rec, NowMs: s.committer.now().UnixMilli()},
		Op:     ch.op, Expect: plan.version, Users: plan.users, Owner: plan.sender, Name: ch.name, CreateIdent: ch.ident,
	}
	cm, err := s.store.ChangeMembership(ctx, gc)
	if errors.Is(err, msgstore.ErrGroupExists) {
		return s.existingCreate(ctx, ch) // created by this request beyond the idempotency window
	}
	if err != nil {
		return changed{}, membershipError(err)
	}
	ack, err := s.committer.commitRecorded(ctx, cmd, cm)
	if err != nil {
		return changed{}, err
	}
	return changed{version: plan.version + 1, seq: ack.GetConversationSeq(), count: plan.count}, nil
}

// existingCreate answers a CREATE whose group exists: the same request again, or a conflict.
func (s *Service) existingCreate(ctx context.Context, ch change) (changed, error) {
	g, ok, err := s.store.LoadGroup(ctx, ch.tenant, ch.conv)
	if err != nil || !ok {
		return changed{}, fmt.Errorf("writer: reload created group: %v %w", ok, err)
	}
	if g.CreateIdent != ch.ident {
		return changed{}, rpc.Refuse(contract.ErrCodeConflict, "client_request_id reused with different content")
	}
	return changed{version: 1, seq: 1, count: g.Count}, nil
}

func membershipError(err error) error {
	switch {
	case errors.Is(err, msgstore.ErrGroupFull):
		return rpc.Refuse(contract.ErrCodeGroupFull, "a group has at most %d members", contract.GroupMaxMembers)
	case errors.Is(err, msgstore.ErrNoGroup):
		return rpc.Refuse(contract.ErrCodeNotMember, "not a current member of this group")
	case errors.Is(err, msgstore.ErrIdentityConflict):
		return rpc.Refuse(contract.ErrCodeConflict, "the change collides with another request's id")
	}
	return fmt.Errorf("writer: change membership: %w", err)
}

// createIdent is the identity of a CREATE request: a retry with other content is a conflict.
func createIdent(name string, members []contract.UserID) string {
	h := blake3.New(16, nil)
	_, _ = h.Write([]byte(name))
	for _, u := range members {
		_, _ = fmt.Fprintf(h, "\x00%d", u)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// plan is a change decided against one membership version.
type plan struct {
	version uint64            // planned at (0 for CREATE)
	users   []contract.UserID // the real changes, ascending
	sender  contract.UserID   // of the CONTROL message: the actor, or the owner for an administrator
	count   int               // members after the change
}

// command is the CONTROL message of the change; its client_message_id is derived, so a retry at
// the same version is the same commit.
func (p plan) command(ch change) (*sendCmd, error) {
	body, err := proto.Marshal(&qimv1.MembershipChange{Op: uint32(ch.op), ActorUserId: uint64(ch.actor),
		UserIds: ids(p.users), MembershipVersion: p.version + 1, MemberCount: uint32(p.count), Name: ch.name})
	if err != nil {
		return nil, fmt.Errorf("writer: encode membership change: %w", err)
	}
	return &sendCmd{
		tenant: ch.tenant, sender: p.sender, device: ch.device, conversation: ch.conv,
		cmid:        contract.MembershipClientMessageID(ch.tenant, ch.conv, ch.op, ch.actor, p.version, p.users),
		messageType: uint32(contract.MessageControl), customType: contract.MembershipCustomType, body: body,
	}, nil
}

// planChange decides what a change does at g's version: a plan to commit, an answer with
// nothing to commit (done), or a refusal. It does no I/O.
func planChange(ch change, g *msgstore.GroupState, exists bool) (plan, *changed, error) {
	if ch.op == contract.MembershipCreate {
		if exists {
			if g.CreateIdent == ch.ident {
				return plan{}, &changed{version: 1, seq: 1, count: g.Count}, nil
			}
			return plan{}, nil, rpc.Refuse(contract.ErrCodeConflict, "client_request_id reused with different content")
		}
		if len(ch.users) > contract.GroupMaxMembers {
			return plan{}, nil, rpc.Refuse(contract.ErrCodeGroupFull, "%d members; a group has at most %d", len(ch.users), contract.GroupMaxMembers)
		}
		return plan{users: ch.users, sender: ch.actor, count: len(ch.users)}, nil, nil
	}
	if !exists || (ch.actor != 0 && !g.Members[ch.actor].Current()) {
		return plan{}, nil, rpc.Refuse(contract.ErrCodeNotMember, "not a current member of this group")
	}
	adds := ch.op == contract.MembershipAdd
	var real []contract.UserID
	for _, u := range ch.users {
		if g.Members[u].Current() != adds {
			real = append(real, u)
		}
	}
	count := g.Count - len(real)
	if adds {
		count = g.Count + len(real)
	}
	if len(real) == 0 {
		return plan{}, &changed{version: g.Version, count: g.Count}, nil
	}
	if count > contract.GroupMaxMembers {
		return plan{}, nil, rpc.Refuse(contract.ErrCodeGroupFull, "%d members; a group has at most %d", count, contract.GroupMaxMembers)
	}
	sender := ch.actor
	if sender == 0 {
		sender = g.Owner
	}
	return plan{version: g.Version, users: real, sender: sender, count: count}, nil, nil
}

// canonicalUsers sorts, de-duplicates and drops zero ids; with include it adds that user.
func canonicalUsers(in []uint64, include contract.UserID) []contract.UserID {
	out := make([]contract.UserID, 0, len(in)+1)
	for _, u := range in {
		if u != 0 {
			out = append(out, contract.UserID(u))
		}
	}
	if include != 0 {
		out = append(out, include)
	}
	slices.Sort(out)
	return slices.Compact(out)
}
