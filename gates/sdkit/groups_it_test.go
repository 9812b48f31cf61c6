package sdkit

// Group integration tests against the real services (integration_test.go starts them): create,
// send, receive, leave, list and the membership CONTROL stream, end to end through gateway,
// writer, fanout and mailbox. Administrator changes go through the writer's real GroupAdmin RPC.

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/qim-dev/qim/contract"
	internalv1 "github.com/qim-dev/qim/proto/qiminternal/v1"
	"github.com/qim-dev/qim/sdk"
)

// Create → send → every member receives it (the sender's own copy resolves its pending send);
// the group is a GROUP row of every member's session list whose unread counts the message but
// never the CREATE, and whose head is the message.
func TestITGroupCreateSendReceive(t *testing.T) {
	set := deployment(t)
	ms := itMembers(t, set, 3)
	alice, bob, carol := ms[0], ms[1], ms[2]
	group := createIT(t, alice, "it team", bob.user, carol.user, bob.user)
	cmid, err := alice.c.SendGroup(bg, group, []byte("hello team"), sdk.SendOptions{})
	if err != nil {
		t.Fatal(err)
	}
	alice.r.wait(t, 30*time.Second, "Committed", func(evs []sdk.Event) bool {
		return slices.ContainsFunc(evs, func(ev sdk.Event) bool { e, ok := ev.(sdk.Committed); return ok && e.ClientMessageID == cmid })
	})
	for _, m := range []itGroupMember{bob, carol} {
		m.r.wait(t, 30*time.Second, "the group message", func([]sdk.Event) bool { return len(textsFrom(t, m.c, group, alice.user)) == 1 })
		create := waitMembership(t, m, group, 1)[0]
		want := []contract.UserID{alice.user, bob.user, carol.user}
		slices.Sort(want)
		if create.Op != contract.MembershipCreate || create.Actor != alice.user || !slices.Equal(create.Users, want) ||
			create.Name != "it team" || create.MemberCount != 3 || create.Err != nil {
			t.Fatalf("user %d: CREATE event %+v, want actor %d users %v", m.user, create, alice.user, want)
		}
		cv := conversationOf(t, m.c, group)
		if cv.Kind != contract.KindGroup || cv.Group != group || cv.Unread != 1 || cv.LatestMessageID.IsZero() {
			t.Fatalf("user %d: session row %+v, want GROUP, unread 1 (the CREATE never counts), a head", m.user, cv)
		}
	}
	if cv := conversationOf(t, alice.c, group); cv.Unread != 0 {
		t.Fatalf("the sender's own row has unread %d", cv.Unread)
	}
}

// After LEAVE_GROUP the leaver sees its own LEAVE and nothing after it; its send, a second leave
// and a member listing are refused NOT_MEMBER.
func TestITGroupLeaveThenNotMember(t *testing.T) {
	set := deployment(t)
	ms := itMembers(t, set, 3)
	alice, bob, carol := ms[0], ms[1], ms[2]
	group := createIT(t, alice, "leavers", bob.user, carol.user)
	res, err := bob.c.LeaveGroup(bg, group)
	if err != nil {
		t.Fatal(err)
	}
	if res.Group != group || res.LeftAtSeq == 0 || res.MembershipVersion != 2 {
		t.Fatalf("leave = %+v, want version 2 and the LEAVE's seq", res)
	}
	evs := waitMembership(t, bob, group, 2)
	if last := evs[len(evs)-1]; last.Op != contract.MembershipLeave || last.Seq != res.LeftAtSeq || !slices.Equal(last.Users, []contract.UserID{bob.user}) {
		t.Fatalf("bob's last membership event %+v, want his LEAVE at seq %d", last, res.LeftAtSeq)
	}
	cmid, err := bob.c.SendGroup(bg, group, []byte("still here?"), sdk.SendOptions{})
	if err != nil {
		t.Fatal(err)
	}
	bob.r.wait(t, 30*time.Second, "Failed NOT_MEMBER", func(evs []sdk.Event) bool {
		return slices.ContainsFunc(evs, func(ev sdk.Event) bool {
			e, ok := ev.(sdk.Failed)
			return ok && e.ClientMessageID == cmid && e.Code == contract.ErrCodeNotMember && errors.Is(e.Err, sdk.ErrNotMember)
		})
	})
	if _, err := bob.c.LeaveGroup(bg, group); !errors.Is(err, sdk.ErrNotMember) {
		t.Fatalf("second leave: %v, want ErrNotMember", err)
	}
	if _, err := bob.c.Members(bg, group); !errors.Is(err, sdk.ErrNotMember) {
		t.Fatalf("members after leaving: %v, want ErrNotMember", err)
	}
	if _, err := alice.c.SendGroup(bg, group, []byte("after bob left"), sdk.SendOptions{}); err != nil {
		t.Fatal(err)
	}
	carol.r.wait(t, 30*time.Second, "carol's copy", func([]sdk.Event) bool { return len(textsFrom(t, carol.c, group, alice.user)) == 1 })
	time.Sleep(time.Second) // a copy that should not exist would arrive by now
	if got := textsFrom(t, bob.c, group, alice.user); len(got) != 0 {
		t.Fatalf("bob received %q after leaving", got)
	}
}

// Members lists every current member in ascending order at one version, across pages: the group
// is larger than one PULL_MEMBERS page of this SDK. Members that are not clients still count.
func TestITGroupMembersAllPages(t *testing.T) {
	set := deployment(t)
	ms := itMembers(t, set, 1)
	alice := ms[0]
	others := make([]contract.UserID, 600) // more than the SDK's 500-member PULL_MEMBERS page
	for i := range others {
		others[i] = newUser()
	}
	group := createIT(t, alice, "big", others...)
	list, err := alice.c.Members(bg, group)
	if err != nil {
		t.Fatal(err)
	}
	want := append([]contract.UserID{alice.user}, others...)
	slices.Sort(want)
	if list.Group != group || list.Version != 1 || !slices.Equal(users(list.Members), want) {
		t.Fatalf("members: group %s version %d, %d members; want version 1 and %d members", list.Group, list.Version,
			len(list.Members), len(want))
	}
	for _, m := range list.Members {
		if m.JoinedAtSeq != 0 || m.LeftAtSeq != 0 {
			t.Fatalf("initial member %+v, want joined 0 and still a member", m)
		}
	}
}

// A member sees every membership change of the group as a decoded event, in seq and version
// order — its own creation by another user, an administrator's ADD and REMOVE, a LEAVE — and none
// of them counts as unread or heads its session row.
func TestITGroupMembershipEventsInOrder(t *testing.T) {
	set := deployment(t)
	ms := itMembers(t, set, 3)
	alice, bob, carol := ms[0], ms[1], ms[2]
	group := createIT(t, alice, "ordered", bob.user)
	dave := newUser()
	admin(t, set, &internalv1.AdminGroupRequest{Op: uint32(contract.MembershipAdd), GroupId: groupBytes(group),
		UserIds: []uint64{uint64(carol.user), uint64(dave)}})
	waitMembership(t, carol, group, 1)
	if _, err := carol.c.LeaveGroup(bg, group); err != nil {
		t.Fatal(err)
	}
	admin(t, set, &internalv1.AdminGroupRequest{Op: uint32(contract.MembershipRemove), GroupId: groupBytes(group),
		UserIds: []uint64{uint64(dave)}})
	evs := waitMembership(t, bob, group, 4)
	ops := []contract.MembershipOp{contract.MembershipCreate, contract.MembershipAdd, contract.MembershipLeave, contract.MembershipRemove}
	actors := []contract.UserID{alice.user, 0, carol.user, 0}
	for i, e := range evs {
		if e.Op != ops[i] || e.Actor != actors[i] || e.Version != uint64(i+1) || (i > 0 && e.Seq <= evs[i-1].Seq) {
			t.Fatalf("event %d = %+v; want %s by %d at version %d, seqs ascending (all: %+v)", i, e, ops[i], actors[i], i+1, evs)
		}
	}
	if cv := conversationOf(t, bob.c, group); cv.Unread != 0 || !cv.LatestMessageID.IsZero() || cv.LatestSeq != evs[3].Seq {
		t.Fatalf("bob's row %+v: CONTROL messages must neither count nor head it", cv)
	}
	// carol, added at J, saw her own ADD and nothing before it.
	if got := membershipOf(carol.r, group); got[0].Op != contract.MembershipAdd || got[0].Seq != evs[1].Seq {
		t.Fatalf("carol's first event %+v, want the ADD at seq %d", got[0], evs[1].Seq)
	}
}

// A create and a send made offline survive a restart of the client and go out after it, with
// the group id CreateGroup returned.
func TestITGroupCreateOfflineSurvivesRestart(t *testing.T) {
	set := deployment(t)
	ms := itMembers(t, set, 1)
	bob := ms[0]
	alice := newUser()
	cfg := itConfig(t, set, alice, "a1", t.TempDir())
	c, err := sdk.Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	g, err := c.CreateGroup(bg, "offline", []contract.UserID{bob.user})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.SendGroup(bg, g.Group, []byte("written offline"), sdk.SendOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	ac, ar := openIT(t, cfg)
	if q, _ := ac.GroupCreates(bg); len(q) != 1 || q[0].Group != g.Group {
		t.Fatalf("after restart: %+v, want the create still queued", q)
	}
	connectIT(t, ac, ar)
	waitCreated(t, ar, g.Group)
	ar.wait(t, 30*time.Second, "Committed", func(evs []sdk.Event) bool { return countEvents[sdk.Committed](evs) == 1 })
	bob.r.wait(t, 30*time.Second, "bob's copy", func([]sdk.Event) bool { return len(textsFrom(t, bob.c, g.Group, alice)) == 1 })
	if q, _ := ac.GroupCreates(bg); len(q) != 0 {
		t.Fatalf("still queued after GROUP_CREATED: %+v", q)
	}
}

// A fresh device whose mailbox no longer holds a group finds it through the session list (a
// GROUP entry with its group_id) and backfills it from the group's history, CONTROL included.
func TestITGroupFreshDeviceDiscoversTrimmedGroup(t *testing.T) {
	set := deployment(t)
	ms := itMembers(t, set, 2)
	alice, bob := ms[0], ms[1]
	group := createIT(t, alice, "trimmed", bob.user)
	for i := 0; i < 2; i++ {
		if _, err := alice.c.SendGroup(bg, group, []byte(fmt.Sprintf("old%d", i)), sdk.SendOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	waitConversation(t, bob.c, bob.r, group, "2 unread on bob's first device", func(c sdk.Conversation) bool { return c.Unread == 2 })
	trimMailbox(t, bob.user)

	fresh, fr := openIT(t, itConfig(t, set, bob.user, "fresh", t.TempDir()))
	connectIT(t, fresh, fr)
	c := conversationOf(t, fresh, group)
	if c.ID != group || c.Incomplete {
		c = relogin(t, fresh, fr, group, "the trimmed group listed and backfilled", func(c sdk.Conversation) bool {
			return c.ID == group && !c.Incomplete
		})
	}
	if got := textsFrom(t, fresh, group, alice.user); fmt.Sprint(got) != "[old0 old1]" || c.Unread != 2 ||
		c.Kind != contract.KindGroup || c.Group != group {
		t.Fatalf("fresh device: %q, %+v; want both messages backfilled, unread 2, a GROUP row", got, c)
	}
	if evs := membershipOf(fr, group); len(evs) != 1 || evs[0].Op != contract.MembershipCreate {
		t.Fatalf("fresh device membership events %+v, want the backfilled CREATE", evs)
	}
}
