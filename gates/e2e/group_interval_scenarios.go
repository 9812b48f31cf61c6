package e2e

import (
	"bytes"
	"context"
	"fmt"
	"time"

	"github.com/qim-dev/qim/contract"
	qimv1 "github.com/qim-dev/qim/proto/qim/v1"
)

// Membership intervals as a reader sees them: a member added at seq J reads (J-1, ...], a member
// who left at L reads (..., L], a user who never was one reads nothing.

// scenarioGroupLateMember: messages before an admin ADD never reach the added member, neither by
// PULL_HISTORY (either direction) nor by its mailbox; its own ADD and what follows do.
func scenarioGroupLateMember(ctx context.Context, e *Env) error {
	d := &devices{e: e}
	defer d.close()
	alice, bob, carol := e.User(), e.User(), e.User()
	ca, err := d.login(ctx, alice, "main")
	if err != nil {
		return err
	}
	g, err := newGroup(ctx, e, ca, alice, "late", bob)
	if err != nil {
		return err
	}
	var before []*qimv1.SendAck
	for i := 0; i < 2; i++ {
		ack, err := ca.SendGroup(ctx, g.GetGroupId(), NewCmid(), fmt.Appendf(nil, "before carol %d", i))
		if err != nil {
			return err
		}
		before = append(before, ack)
	}
	add, err := e.AdminChange(ctx, contract.AdminGroupAdd, g.GetGroupId(), carol)
	if err != nil {
		return err
	}
	if add.GetConversationSeq() <= before[1].GetConversationSeq() || add.GetMembershipVersion() != g.GetMembershipVersion()+1 {
		return fmt.Errorf("admin ADD = %v, want a seq above %d and version %d", add, before[1].GetConversationSeq(), g.GetMembershipVersion()+1)
	}
	body := []byte("after carol joined")
	after, err := ca.SendGroup(ctx, g.GetGroupId(), NewCmid(), body)
	if err != nil {
		return err
	}
	cc, err := d.login(ctx, carol, "c1")
	if err != nil {
		return err
	}
	evs, _, err := PullUntil(ctx, cc, 0, HasMessage(after.GetMessageId()))
	if err != nil {
		return fmt.Errorf("carol's mailbox: %w", err)
	}
	w := wantChange{op: contract.MembershipAdd, seq: add.GetConversationSeq(), sender: alice, users: []contract.UserID{carol},
		version: add.GetMembershipVersion(), count: 3}
	if err := readsExactly(ctx, "carol", cc, g.GetConversationId(), evs, w.check, isText(after, body)); err != nil {
		return err
	}
	return checkMembers(ctx, cc, g.GetGroupId(), add.GetMembershipVersion(), map[contract.UserID]uint64{
		alice: 0, bob: 0, carol: add.GetConversationSeq() - 1})
}

// checkMembers checks PULL_MEMBERS lists exactly want (user → joined_at_seq), ascending, all
// current, at version.
func checkMembers(ctx context.Context, c *Client, group []byte, version uint64, want map[contract.UserID]uint64) error {
	ms, v, err := c.Members(ctx, group)
	if err != nil {
		return fmt.Errorf("PULL_MEMBERS: %w", err)
	}
	ok := v == version && len(ms) == len(want)
	for i, m := range ms {
		joined, in := want[contract.UserID(m.GetUserId())]
		ok = ok && in && joined == m.GetJoinedAtSeq() && m.GetLeftAtSeq() == 0 &&
			(i == 0 || ms[i-1].GetUserId() < m.GetUserId())
	}
	if !ok {
		return fmt.Errorf("PULL_MEMBERS = %v at version %d, want (user: joined_at) %v ascending at version %d", ms, v, want, version)
	}
	return nil
}

// hasSeq holds once an event of conv at seq was seen.
func hasSeq(conv []byte, seq uint64) func([]*qimv1.MailboxEvent) bool {
	return func(evs []*qimv1.MailboxEvent) bool {
		for _, ev := range evs {
			if bytes.Equal(ev.GetConversationId(), conv) && ev.GetConversationSeq() == seq {
				return true
			}
		}
		return false
	}
}

// settle pulls from cursor for a short while and returns whatever else arrived, so a late
// delivery that must not happen has a chance to show.
func settle(ctx context.Context, c *Client, cursor uint64, within time.Duration) []*qimv1.MailboxEvent {
	sctx, cancel := context.WithTimeout(ctx, within)
	defer cancel()
	more, _, _ := PullUntil(sctx, c, cursor, func([]*qimv1.MailboxEvent) bool { return false })
	return more
}
