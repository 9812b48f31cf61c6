package main

import (
	"context"
	"encoding/json"
	"strconv"
	"time"

	"github.com/qim-dev/qim/contract"
)

// Groups (qim_create_group, qim_group_members, qim_leave_group). Creating is durable locally and
// returns at once, online or not (the outcome arrives as "group_created" or
// "group_create_failed"); listing members and leaving ask the server and wait up to timeout
// (default 10 s).

// createGroup records a group of the caller and membersJSON (a JSON array of decimal user ids).
func createGroup(h uint64, name, membersJSON string) (string, error) {
	cl, err := lookup(h)
	if err != nil {
		return "", err
	}
	var ids []string
	if err := json.Unmarshal([]byte(membersJSON), &ids); err != nil {
		return "", errorf(codeInvalid, "members: want a JSON array of decimal user ids as strings: %v", err)
	}
	members := make([]contract.UserID, len(ids))
	for i, s := range ids {
		u, err := strconv.ParseUint(s, 10, 64)
		if err != nil || u == 0 {
			return "", errorf(codeInvalid, "member %q is not a non-zero decimal user id", s)
		}
		members[i] = contract.UserID(u)
	}
	g, err := cl.c.CreateGroup(cl.ctx, name, members)
	if err != nil {
		return "", classify(err)
	}
	return marshal(map[string]any{"group": g.Group.String(), "client_request_id": g.ClientRequestID.String(), "name": g.Name})
}

func groupMembers(h uint64, group string, timeout time.Duration) (string, error) {
	cl, id, err := groupTarget(h, group)
	if err != nil {
		return "", err
	}
	ctx, cancel := callCtx(cl, timeout)
	defer cancel()
	l, err := cl.c.Members(ctx, id)
	if err != nil {
		return "", classify(err)
	}
	ms := make([]map[string]string, len(l.Members))
	for i, m := range l.Members {
		ms[i] = map[string]string{"user": dec(uint64(m.User)), "joined_at_seq": dec(uint64(m.JoinedAtSeq))}
	}
	return marshal(map[string]any{"group": l.Group.String(), "version": dec(l.Version), "members": ms})
}

func leaveGroup(h uint64, group string, timeout time.Duration) (string, error) {
	cl, id, err := groupTarget(h, group)
	if err != nil {
		return "", err
	}
	ctx, cancel := callCtx(cl, timeout)
	defer cancel()
	r, err := cl.c.LeaveGroup(ctx, id)
	if err != nil {
		return "", classify(err)
	}
	return marshal(map[string]any{"group": r.Group.String(), "left_at_seq": dec(uint64(r.LeftAtSeq)),
		"membership_version": dec(r.MembershipVersion)})
}

func groupTarget(h uint64, group string) (*client, contract.ConversationID, error) {
	cl, id, err := convTarget(h, group)
	if err != nil {
		return nil, contract.ConversationID{}, err
	}
	if id.Kind() != contract.KindGroup {
		return nil, contract.ConversationID{}, errorf(codeInvalid, "conversation %s is not a group's", group)
	}
	return cl, id, nil
}

// callCtx bounds a call that waits for the server (timeout 0: defaultCallTimeout).
func callCtx(cl *client, timeout time.Duration) (context.Context, context.CancelFunc) {
	if timeout <= 0 {
		timeout = defaultCallTimeout
	}
	return context.WithTimeout(cl.ctx, timeout)
}

// defaultCallTimeout bounds a call that waits for the server when the caller gives no timeout.
const defaultCallTimeout = 10 * time.Second
