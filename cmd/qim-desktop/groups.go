package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/sdk"
)

// Group commands. A GROUP argument is the full 32-hex-digit id or the start of a group this
// device knows (the 8 digits the client prints are enough while they are unique), so nobody has
// to type 32 digits to talk in a group.

func cmdGCreate(ctx context.Context, c *sdk.Client, con *console, rest string) {
	name, list, _ := strings.Cut(rest, " ")
	members, err := parseUserList(list)
	if name == "" || err != nil {
		con.printf("usage: /gcreate NAME USER,USER...")
		return
	}
	g, err := c.CreateGroup(ctx, name, members)
	if err != nil {
		con.printf("error: %v", err)
		return
	}
	con.printf("[pending] group %s %q with %d members; /gmsg %s TEXT to write in it", g.Group, name, len(g.Members)+1,
		shortID(contract.U128(g.Group)))
}

func cmdGMsg(ctx context.Context, c *sdk.Client, con *console, rest string) {
	arg, text, ok := strings.Cut(rest, " ")
	if !ok || strings.TrimSpace(text) == "" {
		con.printf("usage: /gmsg GROUP TEXT")
		return
	}
	group, err := findGroup(ctx, c, arg)
	if err != nil {
		con.printf("error: %v", err)
		return
	}
	cmid, err := c.SendGroup(ctx, group, []byte(text), sdk.SendOptions{})
	if err != nil {
		con.printf("error: %v", err)
		return
	}
	con.printf("[pending] %s to group %s", shortID(contract.U128(cmid)), shortID(contract.U128(group)))
}

func cmdMembers(ctx context.Context, c *sdk.Client, con *console, rest string) {
	group, err := findGroup(ctx, c, strings.TrimSpace(rest))
	if err != nil {
		con.printf("usage: /members GROUP (%v)", err)
		return
	}
	list, err := c.Members(ctx, group)
	if err != nil {
		con.printf("error: %s", groupError(err))
		return
	}
	con.printf("group %s: %d members (membership version %d)", shortID(contract.U128(group)), len(list.Members), list.Version)
	for _, m := range list.Members {
		con.printf("  %s (sees messages after #%d)", userName(c, m.User), m.JoinedAtSeq)
	}
}

func cmdLeaveGroup(ctx context.Context, c *sdk.Client, con *console, rest string) {
	group, err := findGroup(ctx, c, strings.TrimSpace(rest))
	if err != nil {
		con.printf("usage: /leave GROUP|ROOM (%v)", err)
		return
	}
	res, err := c.LeaveGroup(ctx, group)
	if err != nil {
		con.printf("error: %s", groupError(err))
		return
	}
	con.printf("left group %s at #%d (membership version %d)", shortID(contract.U128(group)), res.LeftAtSeq,
		res.MembershipVersion)
}

// groupError says what the user can do about the refusals a group command meets.
func groupError(err error) string {
	switch {
	case errors.Is(err, sdk.ErrOffline):
		return "not connected (/login first)"
	case errors.Is(err, sdk.ErrNotMember):
		return "you are not a member of that group"
	}
	return err.Error()
}

// parseUserList reads "2,3,4" (spaces allowed, empty entries skipped; none is a group of one).
func parseUserList(s string) ([]contract.UserID, error) {
	var out []contract.UserID
	for _, f := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' }) {
		u, err := parseUser(f)
		if err != nil {
			return nil, err
		}
		out = append(out, u)
	}
	return out, nil
}

func findGroup(ctx context.Context, c *sdk.Client, arg string) (contract.ConversationID, error) {
	convs, err := c.Conversations(ctx)
	if err != nil {
		return contract.ConversationID{}, err
	}
	return matchGroup(arg, convs)
}

// matchGroup resolves a GROUP argument: a full id as given, otherwise the one known group whose
// id starts with it.
func matchGroup(arg string, convs []sdk.Conversation) (contract.ConversationID, error) {
	arg = strings.ToLower(strings.TrimPrefix(strings.TrimSpace(arg), "0x"))
	if len(arg) == 32 {
		return sdk.ParseGroupID(arg)
	}
	if arg == "" {
		return contract.ConversationID{}, errors.New("no group given")
	}
	var found []contract.ConversationID
	for _, cv := range convs {
		if cv.Kind == contract.KindGroup && strings.HasPrefix(cv.ID.String(), arg) {
			found = append(found, cv.ID)
		}
	}
	switch len(found) {
	case 0:
		return contract.ConversationID{}, fmt.Errorf("no known group starts with %q (give its full 32-digit id)", arg)
	case 1:
		return found[0], nil
	}
	return contract.ConversationID{}, fmt.Errorf("%d known groups start with %q; give more digits", len(found), arg)
}

// userName names a user from this account's point of view.
func userName(c *sdk.Client, u contract.UserID) string {
	if u == c.User() {
		return "you"
	}
	return strconv.FormatUint(uint64(u), 10)
}

// describeMembership renders a membership change: "* 1001 added 1002, 1003".
func describeMembership(name func(contract.UserID) string, e sdk.MembershipChanged) string {
	if e.Err != nil {
		return "* membership changed (" + e.Err.Error() + ")"
	}
	actor := "an administrator"
	if e.Actor != 0 {
		actor = name(e.Actor)
	}
	users := make([]string, len(e.Users))
	for i, u := range e.Users {
		users[i] = name(u)
	}
	list := strings.Join(users, ", ")
	switch e.Op {
	case contract.MembershipCreate:
		return fmt.Sprintf("* %s created %q with %s", actor, printable([]byte(e.Name)), list)
	case contract.MembershipAdd:
		return fmt.Sprintf("* %s added %s", actor, list)
	case contract.MembershipRemove:
		return fmt.Sprintf("* %s removed %s", actor, list)
	case contract.MembershipLeave:
		return fmt.Sprintf("* %s left", list)
	}
	return fmt.Sprintf("* %s: %s %s", actor, e.Op, list)
}
