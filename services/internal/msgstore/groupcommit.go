package msgstore

import (
	"context"
	"fmt"
	"strconv"

	"github.com/qim-dev/qim/contract"
)

// groupSendCall builds the group_send.lua call of a group intent: the fused reserve with the
// membership check of the sender (Key.Sender) in the same script.
func (s *Store) groupSendCall(in Intent) call {
	gk := newGroupKeys(in.Key.Tenant, in.Key.Conversation)
	return s.scripts.groupSend.Call(&groupSendArgs{reserveArgs: reserveArgsOf(in), Grp: gk.meta, Grpmem: gk.members,
		Sender: uint64(in.Key.Sender)})
}

// GroupChange is one membership change, committed as a CONTROL message that takes the group
// conversation's next seq in the same script that changes the intervals. Intent is the CONTROL
// message (Key.Sender the actor, or the owner for an administrator's change; Key.ClientMessageID
// from contract.MembershipClientMessageID, so a retry planned at the same version finds its
// commit); its Record has neither field 4 nor 17, the script appends both.
type GroupChange struct {
	Intent
	Op     contract.MembershipOp
	Expect uint64            // the version the change was planned at; 0 for CREATE
	Users  []contract.UserID // the real changes only (ADD: not members, REMOVE/LEAVE: members)
	// CREATE only.
	Owner       contract.UserID
	Name        string
	CreateIdent string
}

// ChangeMembership commits a membership change: the CONTROL commit (state RECORDED, Fresh on the
// first call), the intervals and the new version, atomically; the caller then produces it to
// the Outbox and marks it like any send. A retry of the same change returns the same commit
// (Fresh false) and finishes whatever a failed run left undone. Refusals, with nothing written:
// ErrMembershipChanged (re-plan), ErrGroupExists, ErrNoGroup, ErrGroupFull, ErrInvalidArgument,
// ErrIdentityConflict.
func (s *Store) ChangeMembership(ctx context.Context, ch GroupChange) (Commit, error) {
	if err := validateIntent(ch.Intent); err != nil {
		return Commit{}, fmt.Errorf("msgstore: change membership: %w", err)
	}
	if ch.Key.Conversation.Kind() != contract.KindGroup || len(ch.Users) == 0 {
		return Commit{}, fmt.Errorf("msgstore: change membership: %w: not a group conversation, or no users", ErrInvalidArgument)
	}
	gk := newGroupKeys(ch.Key.Tenant, ch.Key.Conversation)
	users := make([]string, len(ch.Users))
	for i, u := range ch.Users {
		users[i] = strconv.FormatUint(uint64(u), 10)
	}
	c := s.scripts.groupChange.Call(&groupChangeArgs{reserveArgs: reserveArgsOf(ch.Intent), Grp: gk.meta, Grpmem: gk.members,
		Op: int64(ch.Op), Expect: ch.Expect, MaxMembers: contract.GroupMaxMembers, GroupOwner: uint64(ch.Owner),
		Name: ch.Name, Crq: ch.CreateIdent, Users: users,
	})
	cmds, err := runCalls(ctx, s.rdb, []call{c})
	if err != nil {
		return Commit{}, fmt.Errorf("msgstore: change membership: %w", err)
	}
	return commitResult("change_membership", ch.Key, cmds[0])
}
