package e2e

import (
	"bytes"
	"context"
	"fmt"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/qim-dev/qim/contract"
	qimv1 "github.com/qim-dev/qim/proto/qim/v1"
)

// scenarioClientControlRefused: CONTROL is server-only; a client SEND of it is INVALID_ARGUMENT
// in a direct and in a group conversation, and nothing is committed: the refused
// client_message_ids then commit ordinary texts afresh (a committed CONTROL would answer
// CONFLICT or its own ACK), and the peer's mailbox and history hold only those texts.
func scenarioClientControlRefused(ctx context.Context, e *Env) error {
	d := &devices{e: e}
	defer d.close()
	alice, bob := e.User(), e.User()
	ca, err := d.login(ctx, alice, "a1")
	if err != nil {
		return err
	}
	g, err := newGroup(ctx, e, ca, alice, "control", bob)
	if err != nil {
		return err
	}
	forged, err := proto.Marshal(&qimv1.MembershipChange{Op: uint32(contract.MembershipRemove), ActorUserId: uint64(alice),
		UserIds: []uint64{uint64(bob)}, MembershipVersion: g.GetMembershipVersion() + 1, MemberCount: 1})
	if err != nil {
		return err
	}
	cmids := [2][]byte{NewCmid(), NewCmid()} // direct, group
	for i, name := range []string{"direct", "group"} {
		for _, custom := range []string{contract.MembershipCustomType, ""} {
			req := &qimv1.SendRequest{ClientMessageId: cmids[i], MessageType: uint32(contract.MessageControl),
				CustomType: custom, Body: forged, Target: &qimv1.SendRequest_PeerUserId{PeerUserId: uint64(bob)}}
			if i == 1 {
				req.Target = &qimv1.SendRequest_GroupId{GroupId: g.GetGroupId()}
			}
			if _, err := ca.SendRequest(ctx, req); !isCode(err, contract.ErrCodeInvalidArgument) {
				return fmt.Errorf("client CONTROL SEND (%s, custom_type %q): %v, want INVALID_ARGUMENT", name, custom, err)
			}
		}
	}
	dAck, err := ca.Send(ctx, bob, cmids[0], []byte("direct sentinel"))
	if err != nil {
		return fmt.Errorf("a text with the refused CONTROL's client_message_id (direct): %w", err)
	}
	gAck, err := ca.SendGroup(ctx, g.GetGroupId(), cmids[1], []byte("group sentinel"))
	if err != nil {
		return fmt.Errorf("a text with the refused CONTROL's client_message_id (group): %w", err)
	}
	return onlySentinels(ctx, d, bob, g, dAck, gAck)
}

// onlySentinels checks bob's mailbox and history hold, besides the group's CREATE, only the two
// sentinel texts: no CONTROL a client sent.
func onlySentinels(ctx context.Context, d *devices, bob contract.UserID, g *qimv1.GroupCreated, dAck, gAck *qimv1.SendAck) error {
	cb, err := d.login(ctx, bob, "b1")
	if err != nil {
		return err
	}
	evs, cursor, err := PullUntil(ctx, cb, 0, hasAll(dAck.GetMessageId(), gAck.GetMessageId()))
	if err != nil {
		return fmt.Errorf("bob's mailbox: %w", err)
	}
	evs = append(evs, settle(ctx, cb, cursor, time.Second)...)
	if err := readsExactly(ctx, "bob", cb, dAck.GetConversationId(), evs, isText(dAck, []byte("direct sentinel"))); err != nil {
		return fmt.Errorf("direct: %w", err)
	}
	if err := readsExactly(ctx, "bob", cb, g.GetConversationId(), evs, isCreate, isText(gAck, []byte("group sentinel"))); err != nil {
		return fmt.Errorf("group: %w", err)
	}
	return nil
}

// scenarioGroupFull: 1,001 members in all is GROUP_FULL and creates nothing; exactly 1,000 is
// GROUP_CREATED, its retry answers the same group and version (and a different reuse of the
// key CONFLICT), the creator's id and duplicates do not count, and an ADD past 1,000 is refused.
func scenarioGroupFull(ctx context.Context, e *Env) error {
	d := &devices{e: e}
	defer d.close()
	creator := e.User()
	others := make([]contract.UserID, contract.GroupMaxMembers)
	for i := range others {
		others[i] = e.User()
	}
	c, err := d.login(ctx, creator, "c1")
	if err != nil {
		return err
	}
	full := NewRequestID()
	if _, err := c.CreateGroup(ctx, full, "one too many", others...); !isCode(err, contract.ErrCodeGroupFull) {
		return fmt.Errorf("CREATE_GROUP with %d members in all: %v, want GROUP_FULL", len(others)+1, err)
	}
	refused, err := groupIDOf(e, creator, full)
	if err != nil {
		return err
	}
	if _, err := c.PullMembers(ctx, refused, nil, 0); !isCode(err, contract.ErrCodeNotMember) {
		return fmt.Errorf("the refused group answers PULL_MEMBERS with %v, want NOT_MEMBER (it must not exist)", err)
	}
	crid := NewRequestID()
	fit := others[:contract.GroupMaxMembers-1]
	g, err := c.CreateGroup(ctx, crid, "exactly full", fit...)
	if err != nil {
		return fmt.Errorf("CREATE_GROUP with exactly %d members in all: %w", contract.GroupMaxMembers, err)
	}
	if want, _ := groupIDOf(e, creator, crid); !bytes.Equal(g.GetGroupId(), want) || !bytes.Equal(g.GetConversationId(), want) {
		return fmt.Errorf("GROUP_CREATED = %v, want group = conversation = %x", g, want)
	}
	again, err := c.CreateGroup(ctx, crid, "exactly full", fit...)
	if err != nil {
		return fmt.Errorf("CREATE_GROUP retry: %w", err)
	}
	if !proto.Equal(g, again) {
		return fmt.Errorf("CREATE_GROUP retry answered %v, the first attempt %v", again, g)
	}
	if _, err := c.CreateGroup(ctx, crid, "another name", fit...); !isCode(err, contract.ErrCodeConflict) {
		return fmt.Errorf("client_request_id reused with a different name: %v, want CONFLICT", err)
	}
	want := map[contract.UserID]uint64{creator: 0}
	for _, u := range fit {
		want[u] = 0
	}
	if err := checkMembers(ctx, c, g.GetGroupId(), g.GetMembershipVersion(), want); err != nil {
		return err
	}
	if _, err := e.AdminChange(ctx, contract.AdminGroupAdd, g.GetGroupId(), others[len(others)-1]); !isCode(err, contract.ErrCodeGroupFull) {
		return fmt.Errorf("admin ADD of a 1,001st member: %v, want GROUP_FULL", err)
	}
	withDup := append(append([]contract.UserID{creator}, fit...), fit[0], fit[1])
	if _, err := c.CreateGroup(ctx, NewRequestID(), "duplicates ignored", withDup...); err != nil {
		return fmt.Errorf("CREATE_GROUP of 1,000 distinct users listing the creator and duplicates: %w", err)
	}
	return nil
}
