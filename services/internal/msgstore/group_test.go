package msgstore

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/qim-dev/qim/contract"
)

// groupFixture is a fresh tenant with a group conversation; sender is its creator.
func newGroupFixture(t testing.TB) fixture {
	tenant, creator := randU128(t), contract.UserID(randU128(t).Hi>>1)
	return fixture{tenant: tenant, conv: contract.DeriveGroupID(tenant, creator, randU128(t)), sender: creator}
}

// change builds a membership change by actor at version expect.
func (f fixture) change(t testing.TB, op contract.MembershipOp, actor contract.UserID, expect uint64, users ...contract.UserID) GroupChange {
	t.Helper()
	g := fixture{tenant: f.tenant, conv: f.conv, sender: actor}
	in := g.intent(t, 16)
	in.Key.ClientMessageID = contract.MembershipClientMessageID(f.tenant, f.conv, op, actor, expect, users)
	in.Record = g.record(t, in.MessageID, in.Key.ClientMessageID, 16)
	ch := GroupChange{Intent: in, Op: op, Expect: expect, Users: users}
	if op == contract.MembershipCreate {
		ch.Owner, ch.Name, ch.CreateIdent = actor, "g", "crq"
	}
	return ch
}

func mustChange(t testing.TB, ctx context.Context, s *Store, ch GroupChange) Commit {
	t.Helper()
	c, err := s.ChangeMembership(ctx, ch)
	if err != nil {
		t.Fatalf("%s: %v", ch.Op, err)
	}
	return c
}

func TestGroupIntervalsFollowTheControlSeqs(t *testing.T) {
	ctx, s, f := testCtx(t), New(coreClient(t)), newGroupFixture(t)
	a, b, c := f.sender, f.sender+1, f.sender+2
	create := mustChange(t, ctx, s, f.change(t, contract.MembershipCreate, a, 0, a, b))
	if create.Seq != 1 || !create.Fresh {
		t.Fatalf("create: seq %d fresh %v, want seq 1 fresh", create.Seq, create.Fresh)
	}
	if v := decodeRecord(t, create.Record).GetMembershipVersion(); v != 1 {
		t.Fatalf("create record membership_version = %d, want 1", v)
	}
	send := f.intent(t, 8) // a message by the creator at seq 2
	sent := reserveOne(t, ctx, s, send)
	add := mustChange(t, ctx, s, f.change(t, contract.MembershipAdd, a, 1, c))
	leave := mustChange(t, ctx, s, f.change(t, contract.MembershipLeave, b, 2, b))
	if sent.Seq != 2 || add.Seq != 3 || leave.Seq != 4 {
		t.Fatalf("seqs send %d add %d leave %d, want 2 3 4", sent.Seq, add.Seq, leave.Seq)
	}
	if v := decodeRecord(t, sent.Record).GetMembershipVersion(); v != 1 {
		t.Fatalf("send committed under version %d, want 1", v)
	}
	g, ok, err := s.LoadGroup(ctx, f.tenant, f.conv)
	if err != nil || !ok {
		t.Fatalf("LoadGroup: %v %v", ok, err)
	}
	if g.Version != 3 || g.Count != 2 || g.Owner != a {
		t.Fatalf("group v%d n%d owner %d, want v3 n2 owner %d", g.Version, g.Count, g.Owner, a)
	}
	want := map[contract.UserID]contract.Membership{a: {{Joined: 0}}, b: {{Joined: 0, Left: 4}}, c: {{Joined: 2}}}
	for u, m := range want {
		if !slices.Equal(g.Members[u], m) {
			t.Errorf("user %d intervals %v, want %v", u, g.Members[u], m)
		}
	}
	for seq, audience := range map[uint64][]contract.UserID{2: {a, b}, 3: {a, b, c}, 4: {a, b, c}, 5: {a, c}} {
		if got := g.MembersAt(seq); !slices.Equal(got, audience) {
			t.Errorf("MembersAt(%d) = %v, want %v", seq, got, audience)
		}
	}
	ivs, err := s.MemberIntervals(ctx, f.tenant, b, []contract.ConversationID{f.conv, newGroupFixture(t).conv})
	if err != nil || !slices.Equal(ivs[0], contract.Membership{{Joined: 0, Left: 4}}) || ivs[1] != nil {
		t.Fatalf("MemberIntervals(b) = %v, %v", ivs, err)
	}
}

func TestGroupSendRefusesNonMembersWithoutASeq(t *testing.T) {
	ctx, s, f := testCtx(t), New(coreClient(t)), newGroupFixture(t)
	mustChange(t, ctx, s, f.change(t, contract.MembershipCreate, f.sender, 0, f.sender))
	stranger := fixture{tenant: f.tenant, conv: f.conv, sender: f.sender + 9}
	_, errs := s.ReserveAndRecord(ctx, []Intent{stranger.intent(t, 4)})
	if !errors.Is(errs[0], ErrNotMember) {
		t.Fatalf("non-member send: %v, want ErrNotMember", errs[0])
	}
	nogroup := newGroupFixture(t)
	if _, errs = s.ReserveAndRecord(ctx, []Intent{nogroup.intent(t, 4)}); !errors.Is(errs[0], ErrNoGroup) {
		t.Fatalf("send to no group: %v, want ErrNoGroup", errs[0])
	}
	// The member's ACK-lost retry still answers after it left: the commit stands.
	in := f.intent(t, 4)
	first := reserveOne(t, ctx, s, in)
	mustChange(t, ctx, s, f.change(t, contract.MembershipLeave, f.sender, 1, f.sender))
	if again := reserveOne(t, ctx, s, in); again.Seq != first.Seq || again.Fresh {
		t.Fatalf("retry after leaving: seq %d fresh %v, want seq %d not fresh", again.Seq, again.Fresh, first.Seq)
	}
	if _, errs = s.ReserveAndRecord(ctx, []Intent{f.intent(t, 4)}); !errors.Is(errs[0], ErrNotMember) {
		t.Fatalf("send after leaving: %v, want ErrNotMember", errs[0])
	}
	if n, _ := s.LatestSeq(ctx, f.tenant, f.conv); n != 3 {
		t.Fatalf("counter %d after create, send, leave and three refusals, want 3", n)
	}
}

func TestGroupChangeRefusals(t *testing.T) {
	ctx, s, f := testCtx(t), New(coreClient(t)), newGroupFixture(t)
	a := f.sender
	if _, err := s.ChangeMembership(ctx, f.change(t, contract.MembershipAdd, a, 0, a+1)); !errors.Is(err, ErrNoGroup) {
		t.Fatalf("add to no group: %v", err)
	}
	ch := f.change(t, contract.MembershipCreate, a, 0, a)
	first := mustChange(t, ctx, s, ch)
	if again := mustChange(t, ctx, s, ch); again.Seq != first.Seq || again.Fresh {
		t.Fatalf("create retry: seq %d fresh %v", again.Seq, again.Fresh)
	}
	other := f.change(t, contract.MembershipCreate, a, 0, a, a+5) // another request, same group
	if _, err := s.ChangeMembership(ctx, other); !errors.Is(err, ErrGroupExists) {
		t.Fatalf("second create: %v, want ErrGroupExists", err)
	}
	if _, err := s.ChangeMembership(ctx, f.change(t, contract.MembershipAdd, a, 7, a+1)); !errors.Is(err, ErrMembershipChanged) {
		t.Fatalf("stale version: %v, want ErrMembershipChanged", err)
	}
	many := make([]contract.UserID, contract.GroupMaxMembers)
	for i := range many {
		many[i] = a + 100 + contract.UserID(i)
	}
	if _, err := s.ChangeMembership(ctx, f.change(t, contract.MembershipAdd, a, 1, many...)); !errors.Is(err, ErrGroupFull) {
		t.Fatalf("add past the cap: %v, want ErrGroupFull", err)
	}
	mustChange(t, ctx, s, f.change(t, contract.MembershipAdd, a, 1, many[:contract.GroupMaxMembers-1]...))
	if g, _, err := s.LoadGroup(ctx, f.tenant, f.conv); err != nil || g.Count != contract.GroupMaxMembers {
		t.Fatalf("full group: %v, %v", g, err)
	}
	if n, _ := s.LatestSeq(ctx, f.tenant, f.conv); n != 2 {
		t.Fatalf("counter %d, want 2 (create and one add; refusals take no seq)", n)
	}
}
