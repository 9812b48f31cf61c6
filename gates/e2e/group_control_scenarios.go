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
	ca, err := d.login(ctx, alice, "a1")
	if err != nil {
		return err
	}
	cc, err := d.login(ctx, carol, "c1")
	if err != nil {
		return err
	}
	g, err := newGroup(ctx, e, ca, alice, "order", bob, carol)
	if err != nil {
		return err
	}
	add, err := e.AdminChange(ctx, contract.MembershipAdd, g.GetGroupId(), dave)
	if err != nil {
		return err
	}
	left, err := cc.LeaveGroup(ctx, g.GetGroupId())
	if err != nil {
		return err
	}
	rm, err := e.AdminChange(ctx, contract.MembershipRemove, g.GetGroupId(), dave)
	if err != nil {
		return err
	}
	v := g.GetMembershipVersion()
	want := []wantChange{
		{op: contract.MembershipCreate, actor: alice, sender: alice, users: []contract.UserID{alice, bob, carol}, version: v, count: 3},
		{op: contract.MembershipAdd, seq: add.GetConversationSeq(), sender: alice, users: []contract.UserID{dave}, version: v + 1, count: 4},
		{op: contract.MembershipLeave, seq: left.GetLeftAtSeq(), actor: carol, sender: carol, users: []contract.UserID{carol},
			version: v + 2, count: 3},
		{op: contract.MembershipRemove, seq: rm.GetConversationSeq(), sender: alice, users: []contract.UserID{dave}, version: v + 3, count: 2},
	}
	if add.GetMembershipVersion() != v+1 || left.GetMembershipVersion() != v+2 || rm.GetMembershipVersion() != v+3 {
		return fmt.Errorf("versions after add, leave, remove = %d, %d, %d; want %d, %d, %d", add.GetMembershipVersion(),
			left.GetMembershipVersion(), rm.GetMembershipVersion(), v+1, v+2, v+3)
	}
	conv := g.GetConversationId()
	cb, err := d.login(ctx, bob, "b1")
	if err != nil {
		return err
	}
	evs, _, err := PullUntil(ctx, cb, 0, hasSeq(conv, rm.GetConversationSeq()))
	if err != nil {
		return fmt.Errorf("bob's mailbox: %w", err)
	}
	if err := mailboxInSeqOrder(evs, conv); err != nil {
		return fmt.Errorf("bob's mailbox: %w", err)
	}
	if err := changesAre("bob's mailbox", inConversation(evs, conv), want); err != nil {
		return err
	}
	hist, err := cb.History(ctx, conv)
	if err != nil {
		return err
	}
	if err := changesAre("bob's history", inConversation(hist, conv), want); err != nil {
		return err
	}
	cd, err := d.login(ctx, dave, "d1")
	if err != nil {
		return err
	}
	hist, err = cd.History(ctx, conv)
	if err != nil {
		return fmt.Errorf("dave (removed) reading his interval: %w", err)
	}
	if err := changesAre("dave's history", inConversation(hist, conv), want[1:]); err != nil {
		return err
	}
	return checkMembers(ctx, cb, g.GetGroupId(), v+3, map[contract.UserID]uint64{alice: 0, bob: 0})
}

// changesAre checks got is exactly the changes of want, in order.
func changesAre(what string, got []carried, want []wantChange) error {
	if len(got) != len(want) {
		return fmt.Errorf("%s holds group seqs %v, want %d membership changes", what, seqs(got), len(want))
	}
	for i, w := range want {
		if err := w.check(got[i]); err != nil {
			return fmt.Errorf("%s, change %d: %w", what, i, err)
		}
	}
	return nil
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
