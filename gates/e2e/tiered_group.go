package e2e

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/qim-dev/qim/contract"
)

// scenarioGroupIntervalsAcrossTiers: the unread group of the session scenarios (a late ADD and a
// LEAVE among others' messages) is trimmed whole into the archive and one more message stays
// hot. Every member's history, paged both ways in pages of 2, holds exactly the seqs of its
// interval across the floor (the senders' own where they sent texts), and the rows of the late
// member and of the leaver count exactly their intervals' unread with the right head, though all
// the leaver's history and the late member's head candidates but one are in the archive.
func scenarioGroupIntervalsAcrossTiers(ctx context.Context, e *Env) error {
	d := &devices{e: e}
	defer d.close()
	u, err := newUnreadGroup(ctx, e, d)
	if err != nil {
		return err
	}
	conv := u.g.GetConversationId()
	if err := e.waitFloor(ctx, conv, u.last.GetConversationSeq()); err != nil {
		return err
	}
	ca, err := d.login(ctx, u.alice, "hot")
	if err != nil {
		return err
	}
	hot, err := ca.SendGroup(ctx, u.g.GetGroupId(), NewCmid(), []byte("alice hot"))
	if err != nil {
		return err
	}
	u.sent[hot.GetConversationSeq()] = u.alice
	cd, err := d.login(ctx, u.dave, "d1")
	if err != nil {
		return err
	}
	daveIv := contract.MemberInterval{Joined: u.addedAt - 1}
	for _, r := range []struct {
		who string
		c   *Client
		iv  contract.MemberInterval
	}{{"bob", u.bobDevice, contract.MemberInterval{}}, {"dave (added)", cd, daveIv}, {"erin (left)", u.erinDevice, contract.MemberInterval{Left: u.leftAt}}} {
		if err := u.historyIs(ctx, r.who, r.c, r.iv, hot.GetConversationSeq()); err != nil {
			return err
		}
	}
	daveErr := groupRow(ctx, cd, "dave (added)", u.g, hot, u.alice, "alice hot", u.unreadFor(u.dave, daveIv))
	return errors.Join(daveErr, leaverRow(ctx, u))
}

// historyIs checks c's history of the group, both directions in pages of 2, is exactly the seqs
// 1..last inside iv, each text from the user who sent it.
func (u *unreadGroup) historyIs(ctx context.Context, who string, c *Client, iv contract.MemberInterval, last uint64) error {
	var want []uint64
	for seq := uint64(1); seq <= last; seq++ {
		if iv.Contains(seq) {
			want = append(want, seq)
		}
	}
	conv := u.g.GetConversationId()
	for _, dir := range []historyDirection{historyNewer, historyOlder} {
		hist, err := c.HistoryPaged(ctx, conv, dir, 2)
		if err != nil {
			return fmt.Errorf("%s's history (%s) across the floor: %w", who, dir, err)
		}
		got := inConversation(hist, conv)
		if !slices.Equal(seqs(got), want) {
			return fmt.Errorf("%s's history (%s, pages of 2) across the floor holds seqs %v, want %v", who, dir, seqs(got), want)
		}
		for _, m := range got {
			if sender, text := u.sent[m.GetConversationSeq()]; text && m.GetSenderUserId() != uint64(sender) {
				return fmt.Errorf("%s's history (%s): seq %d from %d, want %d", who, dir, m.GetConversationSeq(), m.GetSenderUserId(), sender)
			}
		}
	}
	return nil
}
