package sdk

// The group API. Creating a group and sending to one are durable and work offline, like Send:
// the request is in the store before the call returns and goes out once the client is
// reconciled, with the same idempotency key after any reconnect or restart. Listing members and
// leaving need the server now and return ErrOffline without a connection. A group's id is its
// conversation id (qim.v1 GroupCreated): the app uses the one id for SendGroup, History, MarkRead
// and the session list (Conversation.Group).

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/qim-dev/qim/contract"
	qimv1 "github.com/qim-dev/qim/proto/qim/v1"
	"github.com/qim-dev/qim/sdk/store"
)

// CreateGroup records the creation of a group named name with the given initial members (the
// creator is always one; duplicates and the creator's own id are ignored) and returns it at once,
// online or offline, with its group id: the id is derived from the request's durable
// client_request_id, so it is final before the server has seen the request. The group is listed
// in Conversations at once; GroupCreated or GroupCreateFailed reports the outcome, and
// GroupCreates lists the request until then (also across restarts). Messages sent to the group
// meanwhile wait for GroupCreated. More than contract.GroupMaxMembers members in all is refused
// here with ErrGroupFull.
func (c *Client) CreateGroup(ctx context.Context, name string, members []contract.UserID) (GroupCreate, error) {
	if c.isClosed() {
		return GroupCreate{}, ErrClosed
	}
	ms := store.NormalizeMembers(members, c.cfg.User)
	switch {
	case len(ms) > 0 && ms[0] == 0:
		return GroupCreate{}, fmt.Errorf("%w: member user must not be zero", ErrInvalid)
	case len(ms)+1 > contract.GroupMaxMembers:
		return GroupCreate{}, fmt.Errorf("%w: %d members, at most %d", ErrGroupFull, len(ms)+1, contract.GroupMaxMembers)
	case strings.TrimSpace(name) == "":
		return GroupCreate{}, fmt.Errorf("%w: a group needs a name", ErrInvalid)
	}
	g, err := c.st.AddGroupCreate(ctx, store.NewGroupCreate{Name: name, Members: ms, NowMs: time.Now().UnixMilli()})
	if err != nil {
		return GroupCreate{}, fmt.Errorf("sdk: record group create: %w", err)
	}
	c.wakeSender()
	return g, nil
}

// GroupCreates lists the CreateGroup requests the server has not confirmed: queued ones and
// definite failures.
func (c *Client) GroupCreates(ctx context.Context) ([]GroupCreate, error) {
	return c.st.GroupCreates(ctx)
}

// SendGroup records a message to a group as pending and returns its client_message_id at once,
// exactly like Send (Committed or Failed reports the outcome; it survives restarts). A sender
// that is not a current member gets Failed with a *ServerError matching ErrNotMember.
func (c *Client) SendGroup(ctx context.Context, group contract.ConversationID, body []byte, opts SendOptions) (contract.ClientMessageID, error) {
	conv, err := groupConversation(group)
	if err != nil {
		return contract.ClientMessageID{}, err
	}
	return c.addPending(ctx, store.NewPending{Group: conv}, body, opts)
}

// Members lists a group's current members (PULL_MEMBERS, every page). The pages are read at one
// membership version: when the group changes between two pages the listing starts over. Errors:
// ErrOffline without a connection, ErrNotMember when the user is not a current member.
func (c *Client) Members(ctx context.Context, group contract.ConversationID) (MemberList, error) {
	conv, err := groupConversation(group)
	if err != nil {
		return MemberList{}, err
	}
	gid := conv.Bytes()
	p := newMemberPager(conv)
	var token []byte
	for {
		payload, err := c.call(ctx, contract.OpPullMembers, contract.OpMembersBatch,
			&qimv1.PullMembers{GroupId: gid[:], PageToken: token, Limit: membersPage})
		if err != nil {
			return MemberList{}, err
		}
		var b qimv1.MembersBatch
		if err := proto.Unmarshal(payload, &b); err != nil {
			return MemberList{}, fmt.Errorf("%w: MEMBERS_BATCH: %v", ErrProtocol, err)
		}
		next, done, err := p.add(&b)
		if err != nil {
			return MemberList{}, err
		}
		if done {
			return p.list, nil
		}
		token = next
	}
}

// LeaveResult is a confirmed LeaveGroup.
type LeaveResult struct {
	Group contract.ConversationID
	// LeftAtSeq is the seq of the leave's own CONTROL message: the user keeps the history up to
	// it and receives nothing after it.
	LeftAtSeq         contract.ConversationSeq
	MembershipVersion uint64
}

// LeaveGroup removes the user from a group (LEAVE_GROUP) and returns once the leave is durable.
// Errors: ErrOffline without a connection, ErrNotMember when the user is not a current member
// (also for a second leave). Messages to the group still pending locally will fail NOT_MEMBER.
func (c *Client) LeaveGroup(ctx context.Context, group contract.ConversationID) (LeaveResult, error) {
	conv, err := groupConversation(group)
	if err != nil {
		return LeaveResult{}, err
	}
	gid := conv.Bytes()
	payload, err := c.call(ctx, contract.OpLeaveGroup, contract.OpLeaveGroupAck, &qimv1.LeaveGroup{GroupId: gid[:]})
	if err != nil {
		return LeaveResult{}, err
	}
	var ack qimv1.LeaveGroupAck
	if err := proto.Unmarshal(payload, &ack); err != nil {
		return LeaveResult{}, fmt.Errorf("%w: LEAVE_GROUP_ACK: %v", ErrProtocol, err)
	}
	if g := ack.GetGroupId(); len(g) > 0 {
		if raw, err := contract.U128FromBytes(g); err != nil || ConversationOfGroup(raw) != conv {
			return LeaveResult{}, fmt.Errorf("%w: LEAVE_GROUP_ACK for another group", ErrProtocol)
		}
	}
	left, err := contract.NewConversationSeq(ack.GetLeftAtSeq())
	if err != nil {
		return LeaveResult{}, fmt.Errorf("%w: LEAVE_GROUP_ACK: %v", ErrProtocol, err)
	}
	return LeaveResult{Group: conv, LeftAtSeq: left, MembershipVersion: ack.GetMembershipVersion()}, nil
}

// ParseGroupID reads a group id written as hex (an optional 0x, at most 32 digits, as printed by
// qimctl and ConversationID.String) and returns it as its GROUP conversation id.
func ParseGroupID(s string) (contract.ConversationID, error) {
	u, err := parseHexID(s)
	if err != nil {
		return contract.ConversationID{}, fmt.Errorf("%w: group id %q: %v", ErrInvalid, s, err)
	}
	return groupConversation(contract.ConversationID(u))
}

// parseHexID reads a u128 written as 1 to 32 hex digits with an optional 0x.
func parseHexID(s string) (contract.U128, error) {
	h := strings.TrimPrefix(strings.TrimPrefix(strings.TrimSpace(s), "0x"), "0X")
	if h == "" || len(h) > 32 {
		return contract.U128{}, errors.New("want 1 to 32 hex digits")
	}
	return contract.ParseU128(strings.Repeat("0", 32-len(h)) + h)
}

// ConversationOfGroup is the conversation of a wire group id: the same 16 bytes with the GROUP
// kind bits (zero for a zero id).
func ConversationOfGroup(group contract.U128) contract.ConversationID {
	c, _ := contract.GroupConversationID(group)
	return c
}

// groupConversation validates a group id given by the app and normalises its kind bits.
func groupConversation(group contract.ConversationID) (contract.ConversationID, error) {
	// Kind bits 0 are a raw group id (the wire's group_id may come without them); another kind
	// is an app passing a direct conversation where a group belongs.
	if k := group.Kind(); k != contract.KindGroup && k != contract.KindInvalid {
		return contract.ConversationID{}, fmt.Errorf("%w: %s is a %s conversation, not a group", ErrInvalid, group, k)
	}
	c, err := contract.GroupConversationID(contract.U128(group))
	if err != nil {
		return contract.ConversationID{}, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	return c, nil
}
