package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/qim-dev/qim/contract"
	qimv1 "github.com/qim-dev/qim/proto/qim/v1"
)

// unreadGroup is the group both unread scenarios read. alice creates it with bob, carol and
// erin; then come, in seq order: bob's own message, alice 1, alice 2, an admin ADD of dave,
// alice 3, erin's LEAVE, carol's last message.
type unreadGroup struct {
	g                             *qimv1.GroupCreated
	alice3, last                  *qimv1.SendAck
	alice, bob, carol, dave, erin contract.UserID
	bobDevice, erinDevice         *Client
	addedAt, leftAt               uint64                     // seqs of dave's ADD and erin's LEAVE
	sent                          map[uint64]contract.UserID // seq → sender of every text
}

// unreadFor applies the unread definition to the texts sent: others' messages above read
// inside the reader's interval. It lets a check follow whatever watermark the row reports.
func (u *unreadGroup) unreadFor(reader contract.UserID, iv contract.MemberInterval) func(read uint64) uint32 {
	return func(read uint64) uint32 {
		n := uint32(0)
		for seq, sender := range u.sent {
			if sender != reader && seq > read && iv.Contains(seq) {
				n++
			}
		}
		return n
	}
}

func newUnreadGroup(ctx context.Context, e *Env, d *devices) (*unreadGroup, error) {
	u := &unreadGroup{alice: e.User(), bob: e.User(), carol: e.User(), dave: e.User(), erin: e.User(),
		sent: map[uint64]contract.UserID{}}
	cs, err := d.logins(ctx, u.alice, u.bob, u.carol, u.erin)
	if err != nil {
		return nil, err
	}
	ca, cc := cs[0], cs[2]
	u.bobDevice, u.erinDevice = cs[1], cs[3]
	if u.g, err = newGroup(ctx, e, ca, u.alice, "unread", u.bob, u.carol, u.erin); err != nil {
		return nil, err
	}
	sender := map[*Client]contract.UserID{ca: u.alice, u.bobDevice: u.bob, cc: u.carol}
	send := func(c *Client, body string) (*qimv1.SendAck, error) {
		ack, err := c.SendGroup(ctx, u.g.GetGroupId(), NewCmid(), []byte(body))
		if err == nil {
			u.sent[ack.GetConversationSeq()] = sender[c]
		}
		return ack, err
	}
	// Bob's own message comes first: sending moves the sender's read watermark to its own
	// message (replying means having read), which would otherwise hide what came before.
	for _, m := range []struct {
		c    *Client
		body string
	}{{u.bobDevice, "bob's own"}, {ca, "alice 1"}, {ca, "alice 2"}} {
		if _, err := send(m.c, m.body); err != nil {
			return nil, err
		}
	}
	add, err := e.AdminChange(ctx, contract.AdminGroupAdd, u.g.GetGroupId(), u.dave)
	if err != nil {
		return nil, err
	}
	u.addedAt = add.GetConversationSeq()
	if u.alice3, err = send(ca, "alice 3"); err != nil {
		return nil, err
	}
	left, err := u.erinDevice.LeaveGroup(ctx, u.g.GetGroupId())
	if err != nil {
		return nil, err
	}
	u.leftAt = left.GetLeftAtSeq()
	u.last, err = send(cc, "carol last")
	return u, err
}

// scenarioGroupUnread: a group's session row is a GROUP row naming the group whose unread counts
// exactly the messages of others — never CONTROL messages (CREATE, ADD, LEAVE), never the
// reader's own — and MARK_READ takes it to 0.
func scenarioGroupUnread(ctx context.Context, e *Env) error {
	d := &devices{e: e}
	defer d.close()
	u, err := newUnreadGroup(ctx, e, d)
	if err != nil {
		return err
	}
	cb, conv, seq := u.bobDevice, u.g.GetConversationId(), u.last.GetConversationSeq()
	// Bob: alice 1-3 and carol's = 4.
	if err := groupRow(ctx, cb, "bob", u.g, u.last, u.carol, "carol last", func(uint64) uint32 { return 4 }); err != nil {
		return err
	}
	read, err := cb.MarkRead(ctx, conv, seq)
	if err != nil {
		return err
	}
	if read.GetReadConversationSeq() != seq || read.GetUnreadCount() != 0 || !read.GetUnreadExact() {
		return fmt.Errorf("MARK_READ_ACK = %v, want read %d unread 0 exact", read, seq)
	}
	row, err := WaitSessionRow(ctx, cb, conv, 0, nil)
	if err != nil {
		return err
	}
	if row.GetUnreadCount() != 0 || row.GetReadConversationSeq() != seq {
		return fmt.Errorf("bob after MARK_READ: unread %d read %d, want 0 and %d", row.GetUnreadCount(), row.GetReadConversationSeq(), seq)
	}
	return nil
}

// scenarioGroupUnreadClipped: unread is clipped to the reader's intervals: a member added later
// does not count what came before its join, a member who left neither counts nor sees (as the
// row's head) what came after its leave.
func scenarioGroupUnreadClipped(ctx context.Context, e *Env) error {
	d := &devices{e: e}
	defer d.close()
	u, err := newUnreadGroup(ctx, e, d)
	if err != nil {
		return err
	}
	cd, err := d.login(ctx, u.dave, "d1")
	if err != nil {
		return err
	}
	// Dave reads (ADD - 1, ...]: alice 3 and carol's, whatever came before his join.
	daveErr := groupRow(ctx, cd, "dave", u.g, u.last, u.carol, "carol last", u.unreadFor(u.dave, contract.MemberInterval{Joined: u.addedAt - 1}))
	// Erin is checked even when dave's row is wrong: the two clip different ends of an interval.
	return errors.Join(daveErr, leaverRow(ctx, u))
}

// leaverRow checks the row of erin, who left after alice 3: it ends at her LEAVE, is headed by
// alice 3 (never carol's later message) and counts only what she could read.
func leaverRow(ctx context.Context, u *unreadGroup) error {
	// Her row may trail dave's (another user, maybe another shard), so it is read again after
	// a pause.
	conv := u.g.GetConversationId()
	if _, err := WaitSessionRow(ctx, u.erinDevice, conv, projectionWait, func(s *qimv1.SessionEntry) bool {
		return s.GetHead().GetConversationSeq() >= u.alice3.GetConversationSeq()
	}); err != nil {
		return fmt.Errorf("erin (left): %w", err)
	}
	time.Sleep(500 * time.Millisecond)
	row, err := WaitSessionRow(ctx, u.erinDevice, conv, 0, nil)
	if err != nil {
		return err
	}
	if row.GetLatestConversationSeq() > u.leftAt {
		return fmt.Errorf("erin (left at %d): her row reaches seq %d: %s", u.leftAt, row.GetLatestConversationSeq(), fmtRow(row))
	}
	return checkRow(row, "erin (left)", u.g, u.alice3, u.alice, "alice 3", u.unreadFor(u.erin, contract.MemberInterval{Left: u.leftAt}))
}

// groupRow waits until c's row of the group reaches last and checks it (checkRow).
func groupRow(ctx context.Context, c *Client, who string, g *qimv1.GroupCreated, last *qimv1.SendAck, sender contract.UserID,
	body string, unread func(read uint64) uint32) error {
	row, err := WaitSessionRow(ctx, c, g.GetConversationId(), projectionWait, func(s *qimv1.SessionEntry) bool {
		return s.GetLatestConversationSeq() == last.GetConversationSeq()
	})
	if err != nil {
		return fmt.Errorf("%s: %w", who, err)
	}
	return checkRow(row, who, g, last, sender, body, unread)
}

// checkRow checks a session row is a GROUP row naming the group, headed by the message of head,
// with exactly the unread count unreadAt gives for the row's own read watermark.
func checkRow(row *qimv1.SessionEntry, who string, g *qimv1.GroupCreated, head *qimv1.SendAck, sender contract.UserID,
	body string, unreadAt func(read uint64) uint32) error {
	h, unread := row.GetHead(), unreadAt(row.GetReadConversationSeq())
	if contract.ConversationKind(row.GetConversationKind()) != contract.KindGroup || !bytes.Equal(row.GetGroupId(), g.GetGroupId()) ||
		row.GetPeerUserId() != 0 || row.GetUnreadCount() != unread || !row.GetUnreadExact() ||
		!bytes.Equal(h.GetMessageId(), head.GetMessageId()) || h.GetSenderUserId() != uint64(sender) || string(h.GetBody()) != body {
		return fmt.Errorf("%s: session row {%s}, want kind 2, group %x, unread %d exact, head %x from %d %q", who, fmtRow(row),
			g.GetGroupId(), unread, head.GetMessageId(), sender, body)
	}
	return nil
}

// fmtRow prints the fields of a session row a group scenario checks, ids in hex.
func fmtRow(s *qimv1.SessionEntry) string {
	h := s.GetHead()
	return fmt.Sprintf("kind %d group %x peer %d latest %d read %d unread %d exact %v head {seq %d id %x from %d %q}",
		s.GetConversationKind(), s.GetGroupId(), s.GetPeerUserId(), s.GetLatestConversationSeq(), s.GetReadConversationSeq(),
		s.GetUnreadCount(), s.GetUnreadExact(), h.GetConversationSeq(), h.GetMessageId(), h.GetSenderUserId(), h.GetBody())
}
