package e2e

import (
	"bytes"
	"context"
	"fmt"

	"github.com/qim-dev/qim/contract"
	qimv1 "github.com/qim-dev/qim/proto/qim/v1"
)

// scenarioGroupControlOrder: create, admin add, leave and admin remove each arrive as a CONTROL
// message with the right op, actor, users, version and count, in conversation_seq order, to a
// member who stayed (mailbox and history) and, for its own interval, to the removed member.
func scenarioGroupControlOrder(ctx context.Context, e *Env) error {
	d := &devices{e: e}
	defer d.close()
	alice, bob, carol, dave := e.User(), e.User(), e.User(), e.User()
	cs, err := d.logins(ctx, alice, carol)
	if err != nil {
		return err
	}
	ca, cc := cs[0], cs[1]
	g, err := newGroup(ctx, e, ca, alice, "order", bob, carol)
	if err != nil {
		return err
	}
	add, err := e.AdminChange(ctx, contract.AdminGroupAdd, g.GetGroupId(), dave)
	if err != nil {
		return err
	}
	left, err := cc.LeaveGroup(ctx, g.GetGroupId())
	if err != nil {
		return err
	}
	rm, err := e.AdminChange(ctx, contract.AdminGroupRemove, g.GetGroupId(), dave)
	if err != nil {
		return err
	}
	v := g.GetMembershipVersion()
	if add.GetMembershipVersion() != v+1 || left.GetMembershipVersion() != v+2 || rm.GetMembershipVersion() != v+3 {
		return fmt.Errorf("versions after add, leave, remove = %d, %d, %d; want %d, %d, %d", add.GetMembershipVersion(),
			left.GetMembershipVersion(), rm.GetMembershipVersion(), v+1, v+2, v+3)
	}
	want := []expect{
		wantChange{op: contract.MembershipCreate, actor: alice, sender: alice, users: []contract.UserID{alice, bob, carol}, version: v,
			count: 3}.check,
		wantChange{op: contract.MembershipAdd, seq: add.GetConversationSeq(), sender: alice, users: []contract.UserID{dave},
			version: v + 1, count: 4}.check,
		wantChange{op: contract.MembershipLeave, seq: left.GetLeftAtSeq(), actor: carol, sender: carol, users: []contract.UserID{carol},
			version: v + 2, count: 3}.check,
		wantChange{op: contract.MembershipRemove, seq: rm.GetConversationSeq(), sender: alice, users: []contract.UserID{dave},
			version: v + 3, count: 2}.check,
	}
	// Bob stayed and reads all four; dave, removed, reads his interval: his ADD to his REMOVE.
	for _, r := range []struct {
		who  string
		user contract.UserID
		want []expect
	}{{"bob", bob, want}, {"dave", dave, want[1:]}} {
		if err := readsChanges(ctx, d, r.who, r.user, g, rm.GetConversationSeq(), r.want); err != nil {
			return err
		}
	}
	return checkMembers(ctx, ca, g.GetGroupId(), v+3, map[contract.UserID]uint64{alice: 0, bob: 0})
}

// readsChanges logs user in, pulls its mailbox up to the seq last and checks the group arrives
// in seq order and reads exactly want (mailbox and history).
func readsChanges(ctx context.Context, d *devices, who string, user contract.UserID, g *qimv1.GroupCreated, last uint64,
	want []expect) error {
	c, err := d.login(ctx, user, "main")
	if err != nil {
		return err
	}
	conv := g.GetConversationId()
	evs, _, err := PullUntil(ctx, c, 0, hasSeq(conv, last))
	if err != nil {
		return fmt.Errorf("%s's mailbox: %w", who, err)
	}
	if err := mailboxInSeqOrder(evs, conv); err != nil {
		return fmt.Errorf("%s's mailbox: %w", who, err)
	}
	return readsExactly(ctx, who, c, conv, evs, want...)
}

// mailboxInSeqOrder checks the events of conv arrive (in mailbox order) with strictly increasing
// conversation_seq.
func mailboxInSeqOrder(evs []*qimv1.MailboxEvent, conv []byte) error {
	var prev uint64
	for _, ev := range evs {
		if !bytes.Equal(ev.GetConversationId(), conv) {
			continue
		}
		if ev.GetConversationSeq() <= prev {
			return fmt.Errorf("conversation seq %d arrived after %d", ev.GetConversationSeq(), prev)
		}
		prev = ev.GetConversationSeq()
	}
	return nil
}
