package e2e

import (
	"bytes"
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/qim-dev/qim/contract"
	qimv1 "github.com/qim-dev/qim/proto/qim/v1"
)

// scenarioGroupLeaver: a member who leaves keeps what it could read up to and including its own
// LEAVE, gets nothing after it by mailbox or history, and every group request is refused.
func scenarioGroupLeaver(ctx context.Context, e *Env) error {
	d := &devices{e: e}
	defer d.close()
	alice, bob, carol := e.User(), e.User(), e.User()
	cs, err := d.logins(ctx, alice, bob, carol)
	if err != nil {
		return err
	}
	ca, cb, cc := cs[0], cs[1], cs[2]
	g, err := newGroup(ctx, e, ca, alice, "leave", bob, carol)
	if err != nil {
		return err
	}
	conv := g.GetConversationId()
	body1, body2 := []byte("before bob left"), []byte("after bob left")
	m1, err := ca.SendGroup(ctx, g.GetGroupId(), NewCmid(), body1)
	if err != nil {
		return err
	}
	left, err := cb.LeaveGroup(ctx, g.GetGroupId())
	if err != nil {
		return fmt.Errorf("LEAVE_GROUP: %w", err)
	}
	at := left.GetLeftAtSeq()
	if !bytes.Equal(left.GetGroupId(), g.GetGroupId()) || at <= m1.GetConversationSeq() ||
		left.GetMembershipVersion() != g.GetMembershipVersion()+1 {
		return fmt.Errorf("LEAVE_GROUP_ACK = %v, want the group, left_at above %d, version %d", left, m1.GetConversationSeq(),
			g.GetMembershipVersion()+1)
	}
	m2, err := ca.SendGroup(ctx, g.GetGroupId(), NewCmid(), body2)
	if err != nil {
		return err
	}
	if m2.GetConversationSeq() <= at {
		return fmt.Errorf("a message sent after the leave at %d got seq %d", at, m2.GetConversationSeq())
	}
	// Carol, who stayed, gets the later message: it was fanned out while bob's mailbox was
	// still being filled, so its absence there is meaningful.
	if _, _, err := PullUntil(ctx, cc, 0, HasMessage(m2.GetMessageId())); err != nil {
		return fmt.Errorf("carol (stayed): %w", err)
	}
	evs, cursor, err := PullUntil(ctx, cb, 0, hasSeq(conv, at))
	if err != nil {
		return fmt.Errorf("bob's mailbox never got his LEAVE at %d: %w", at, err)
	}
	evs = append(evs, settle(ctx, cb, cursor, time.Second)...)
	leave := wantChange{op: contract.MembershipLeave, seq: at, actor: bob, sender: bob, users: []contract.UserID{bob},
		version: left.GetMembershipVersion(), count: 2}
	if err := readsExactly(ctx, "bob", cb, conv, evs, isCreate, isText(m1, body1), leave.check); err != nil {
		return err
	}
	if _, err := cb.SendGroup(ctx, g.GetGroupId(), NewCmid(), []byte("still here?")); !isCode(err, contract.ErrCodeNotMember) {
		return fmt.Errorf("SEND after leaving: %v, want NOT_MEMBER", err)
	}
	if _, err := cb.LeaveGroup(ctx, g.GetGroupId()); !isCode(err, contract.ErrCodeNotMember) {
		return fmt.Errorf("a second LEAVE_GROUP: %v, want NOT_MEMBER", err)
	}
	if _, err := cb.PullMembers(ctx, g.GetGroupId(), nil, 0); !isCode(err, contract.ErrCodeNotMember) {
		return fmt.Errorf("PULL_MEMBERS after leaving: %v, want NOT_MEMBER", err)
	}
	return checkMembers(ctx, cc, g.GetGroupId(), left.GetMembershipVersion(), map[contract.UserID]uint64{alice: 0, carol: 0})
}

// scenarioGroupOutsider: a user who never was a member is refused SEND, PULL_HISTORY and
// PULL_MEMBERS with NOT_MEMBER, and no reply (nor its mailbox or session list) carries any of
// the group's content; its refused SEND commits nothing.
func scenarioGroupOutsider(ctx context.Context, e *Env) error {
	d := &devices{e: e}
	defer d.close()
	alice, bob, mallory := e.User(), e.User(), e.User()
	ca, err := d.login(ctx, alice, "a1")
	if err != nil {
		return err
	}
	name := fmt.Sprintf("private-%d", alice)
	g, err := newGroup(ctx, e, ca, alice, name, bob)
	if err != nil {
		return err
	}
	secret := fmt.Appendf(nil, "secret for members only %x", NewCmid())
	ack, err := ca.SendGroup(ctx, g.GetGroupId(), NewCmid(), secret)
	if err != nil {
		return err
	}
	cm, err := d.login(ctx, mallory, "m1")
	if err != nil {
		return err
	}
	leaks := [][]byte{secret, ack.GetMessageId(), []byte(name), []byte(strconv.FormatUint(uint64(alice), 10)),
		[]byte(strconv.FormatUint(uint64(bob), 10))}
	m, err := cm.CallRaw(ctx, contract.OpSend, &qimv1.SendRequest{ClientMessageId: NewCmid(),
		Target: &qimv1.SendRequest_GroupId{GroupId: g.GetGroupId()}, MessageType: uint32(contract.MessageText), Body: []byte("let me in")})
	if err := refusedWithoutContent("SEND", m, err, leaks...); err != nil {
		return err
	}
	for _, dir := range []historyDirection{historyNewer, historyOlder} {
		m, err = cm.CallRaw(ctx, contract.OpPullHistory, &qimv1.PullHistory{ConversationId: g.GetConversationId(), Direction: uint32(dir)})
		if err := refusedWithoutContent(fmt.Sprintf("PULL_HISTORY (direction %d)", dir), m, err, leaks...); err != nil {
			return err
		}
	}
	m, err = cm.CallRaw(ctx, contract.OpPullMembers, &qimv1.PullMembers{GroupId: g.GetGroupId()})
	if err := refusedWithoutContent("PULL_MEMBERS", m, err, leaks...); err != nil {
		return err
	}
	return outsiderSawNothing(ctx, d, cm, g, bob, ack, secret)
}

// outsiderSawNothing checks the members' view holds exactly CREATE and the secret (the refused
// SEND committed nothing) and that the outsider's mailbox and session list stay empty.
func outsiderSawNothing(ctx context.Context, d *devices, cm *Client, g *qimv1.GroupCreated, bob contract.UserID,
	ack *qimv1.SendAck, secret []byte) error {
	cb, err := d.login(ctx, bob, "b1")
	if err != nil {
		return err
	}
	evs, _, err := PullUntil(ctx, cb, 0, HasMessage(ack.GetMessageId()))
	if err != nil {
		return fmt.Errorf("bob's mailbox: %w", err)
	}
	if err := readsExactly(ctx, "bob", cb, g.GetConversationId(), evs, isCreate, isText(ack, secret)); err != nil {
		return err
	}
	if evs := settle(ctx, cm, 0, time.Second); len(evs) != 0 {
		return fmt.Errorf("the outsider's mailbox got %d events, first {%s}", len(evs), fmtMsg(evs[0]))
	}
	list, err := cm.SessionList(ctx, 100)
	if err != nil {
		return err
	}
	if len(list) != 0 {
		return fmt.Errorf("the outsider's session list has %d rows, first {%s}", len(list), fmtRow(list[0]))
	}
	return nil
}

// scenarioGroupRejoin: a member who left and was added again has two intervals; it reads both,
// in either paging direction and through its mailbox, and never what was sent in between.
func scenarioGroupRejoin(ctx context.Context, e *Env) error {
	d := &devices{e: e}
	defer d.close()
	alice, bob, carol := e.User(), e.User(), e.User()
	cs, err := d.logins(ctx, alice, bob)
	if err != nil {
		return err
	}
	ca, cb := cs[0], cs[1]
	g, err := newGroup(ctx, e, ca, alice, "rejoin", bob, carol)
	if err != nil {
		return err
	}
	conv, bodies := g.GetConversationId(), [][]byte{[]byte("first interval"), []byte("while bob was out"), []byte("second interval")}
	acks := make([]*qimv1.SendAck, 3)
	var left *qimv1.LeaveGroupAck
	for i, body := range bodies {
		if acks[i], err = ca.SendGroup(ctx, g.GetGroupId(), NewCmid(), body); err != nil {
			return err
		}
		if i == 0 {
			if left, err = cb.LeaveGroup(ctx, g.GetGroupId()); err != nil {
				return err
			}
		}
		if i == 1 {
			if _, err = e.AdminChange(ctx, contract.AdminGroupAdd, g.GetGroupId(), bob); err != nil {
				return err
			}
		}
	}
	members, version, err := cb.Members(ctx, g.GetGroupId())
	if err != nil {
		return fmt.Errorf("PULL_MEMBERS after the re-add: %w", err)
	}
	var rejoined uint64 // bob's second interval opens here (the seq of his ADD - 1)
	for _, m := range members {
		if m.GetUserId() == uint64(bob) {
			rejoined = m.GetJoinedAtSeq()
		}
	}
	leave := wantChange{op: contract.MembershipLeave, seq: left.GetLeftAtSeq(), actor: bob, sender: bob, users: []contract.UserID{bob},
		version: left.GetMembershipVersion(), count: 2}
	add := wantChange{op: contract.MembershipAdd, seq: rejoined + 1, sender: alice, users: []contract.UserID{bob}, version: version, count: 3}
	// (rejoined, ...] must not hold the message sent while bob was out.
	if rejoined < acks[1].GetConversationSeq() || version != left.GetMembershipVersion()+1 {
		return fmt.Errorf("bob re-added: joined_at %d version %d, want at least the gap message's %d and version %d", rejoined, version,
			acks[1].GetConversationSeq(), left.GetMembershipVersion()+1)
	}
	evs, _, err := PullUntil(ctx, cb, 0, HasMessage(acks[2].GetMessageId()))
	if err != nil {
		return fmt.Errorf("bob's mailbox: %w", err)
	}
	return readsExactly(ctx, "bob", cb, conv, evs, isCreate, isText(acks[0], bodies[0]), leave.check, add.check,
		isText(acks[2], bodies[2]))
}
