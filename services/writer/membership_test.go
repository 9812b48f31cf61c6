package writer

import (
	"errors"
	"slices"
	"testing"

	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/services/internal/msgstore"
	"github.com/qim-dev/qim/services/internal/rpc"
)

// TestPlanChange is the planning table: what a change does against one membership (no I/O).
func TestPlanChange(t *testing.T) {
	g := &msgstore.GroupState{Version: 4, Count: 2, Owner: 1, CreateIdent: "id", Members: map[contract.UserID]contract.Membership{
		1: {{Joined: 0}}, 2: {{Joined: 0, Left: 5}}, 3: {{Joined: 6}},
	}}
	full := &msgstore.GroupState{Version: 1, Count: contract.GroupMaxMembers, Owner: 1, Members: map[contract.UserID]contract.Membership{}}
	for u := 1; u <= contract.GroupMaxMembers; u++ {
		full.Members[contract.UserID(u)] = contract.Membership{{Joined: 0}}
	}
	type want struct {
		code   contract.ErrorCode // refusal
		noop   bool
		users  []contract.UserID
		sender contract.UserID
		count  int
	}
	cases := []struct {
		name   string
		ch     change
		g      *msgstore.GroupState
		exists bool
		want   want
	}{
		{"add keeps only non-members", change{op: contract.MembershipAdd, users: []contract.UserID{2, 3, 9}}, g, true,
			want{users: []contract.UserID{2, 9}, sender: 1, count: 4}},
		{"admin add of members only is a no-op", change{op: contract.MembershipAdd, users: []contract.UserID{1, 3}}, g, true, want{noop: true}},
		{"remove keeps only members", change{op: contract.MembershipRemove, users: []contract.UserID{2, 3}}, g, true,
			want{users: []contract.UserID{3}, sender: 1, count: 1}},
		{"leave by a member", change{op: contract.MembershipLeave, actor: 3, users: []contract.UserID{3}}, g, true,
			want{users: []contract.UserID{3}, sender: 3, count: 1}},
		{"leave by a former member", change{op: contract.MembershipLeave, actor: 2, users: []contract.UserID{2}}, g, true,
			want{code: contract.ErrCodeNotMember}},
		{"leave of no group", change{op: contract.MembershipLeave, actor: 2, users: []contract.UserID{2}}, nil, false,
			want{code: contract.ErrCodeNotMember}},
		{"add past the cap", change{op: contract.MembershipAdd, users: []contract.UserID{5000}}, full, true,
			want{code: contract.ErrCodeGroupFull}},
		{"create of an existing group, same request", change{op: contract.MembershipCreate, actor: 1, ident: "id"}, g, true, want{noop: true}},
		{"create of an existing group, other request", change{op: contract.MembershipCreate, actor: 1, ident: "x"}, g, true,
			want{code: contract.ErrCodeConflict}},
		{"create past the cap", change{op: contract.MembershipCreate, actor: 1, users: make([]contract.UserID, contract.GroupMaxMembers+1)}, nil, false,
			want{code: contract.ErrCodeGroupFull}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, done, err := planChange(c.ch, c.g, c.exists)
			var re *rpc.RequestError
			switch {
			case c.want.code != 0:
				if !errors.As(err, &re) || rpc.CodeOf(err) != c.want.code {
					t.Fatalf("err %v, want %s", err, c.want.code)
				}
			case c.want.noop:
				if err != nil || done == nil {
					t.Fatalf("want a no-op answer, got plan %+v err %v", p, err)
				}
			default:
				if err != nil || done != nil || !slices.Equal(p.users, c.want.users) || p.sender != c.want.sender ||
					p.count != c.want.count || p.version != c.g.Version {
					t.Fatalf("plan %+v done %v err %v, want %+v at version %d", p, done, err, c.want, c.g.Version)
				}
			}
		})
	}
}
