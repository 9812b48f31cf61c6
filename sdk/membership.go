package sdk

// Group membership as the app sees it: membership CONTROL messages decoded into events, and the
// paged member list.
//
// Membership changes are not a side channel: each is a CONTROL message of the group
// conversation (custom_type contract.MembershipCustomType, body qim.v1.MembershipChange) with its
// own conversation_seq, delivered and stored like any message, so a device learns them exactly
// once and in the same place as the messages around them. The SDK decodes them after the commit
// that stored them (MembershipChanged); they never count as unread and never head a session row
// (store.upsertConversation).

import (
	"fmt"

	"google.golang.org/protobuf/proto"

	"github.com/qim-dev/qim/contract"
	qimv1 "github.com/qim-dev/qim/proto/qim/v1"
)

// MembershipChange is a decoded qim.v1.MembershipChange.
type MembershipChange struct {
	Op contract.MembershipOp
	// Actor made the change; 0 for an administrator (qimctl), whose changes the group's owner
	// sends.
	Actor contract.UserID
	// Users the change applies to, ascending (CREATE: every initial member, the creator too).
	Users       []contract.UserID
	Version     uint64 // membership version after the change
	MemberCount uint32 // current members after the change
	Name        string // CREATE only: the group's display name
}

// IsMembership reports whether m is a membership CONTROL message.
func IsMembership(m Message) bool {
	return m.Type == contract.MessageControl && m.CustomType == contract.MembershipCustomType
}

// DecodeMembership decodes a membership CONTROL message. ok is false when m is not one; err is
// set when it is but its body is absent (not inlined by the mailbox) or malformed.
func DecodeMembership(m Message) (change MembershipChange, ok bool, err error) {
	if !IsMembership(m) {
		return MembershipChange{}, false, nil
	}
	if !m.HasBody {
		return MembershipChange{}, true, fmt.Errorf("sdk: membership message %s has no body here; fetch it with History", m.ID)
	}
	var mc qimv1.MembershipChange
	if err := proto.Unmarshal(m.Body, &mc); err != nil {
		return MembershipChange{}, true, fmt.Errorf("sdk: membership message %s: %w", m.ID, err)
	}
	users := make([]contract.UserID, len(mc.GetUserIds()))
	for i, u := range mc.GetUserIds() {
		users[i] = contract.UserID(u)
	}
	return MembershipChange{Op: contract.MembershipOp(mc.GetOp()), Actor: contract.UserID(mc.GetActorUserId()),
		Users: users, Version: mc.GetMembershipVersion(), MemberCount: mc.GetMemberCount(), Name: mc.GetName()}, true, nil
}

// membershipEvents decodes the membership messages among msgs: conversations in the order they
// first appear, each conversation's changes by seq.
func membershipEvents(msgs []Message) []Event {
	var order []contract.ConversationID
	byConv := map[contract.ConversationID][]MembershipChanged{}
	for _, m := range msgs {
		mc, ok, err := DecodeMembership(m)
		if !ok {
			continue
		}
		if _, seen := byConv[m.Conversation]; !seen {
			order = append(order, m.Conversation)
		}
		ev := MembershipChanged{Group: m.Conversation, Seq: m.Seq, MessageID: m.ID, SentAtMs: m.SentAtMs,
			MembershipChange: mc, Err: err}
		evs := append(byConv[m.Conversation], ev)
		for i := len(evs) - 1; i > 0 && evs[i].Seq < evs[i-1].Seq; i-- { // batches are nearly sorted
			evs[i], evs[i-1] = evs[i-1], evs[i]
		}
		byConv[m.Conversation] = evs
	}
	var out []Event
	for _, c := range order {
		for _, ev := range byConv[c] {
			out = append(out, ev)
		}
	}
	return out
}

// Member is one current member of a group.
type Member struct {
	User contract.UserID
	// JoinedAtSeq: the member sees the group's messages above this seq (0 for the creator and
	// the initial members, J−1 for a member added by the change at seq J).
	JoinedAtSeq contract.ConversationSeq
	// LeftAtSeq is 0 for a current member (the only kind PULL_MEMBERS lists).
	LeftAtSeq contract.ConversationSeq
}

// MemberList is a group's current members, every page read at the same membership version.
type MemberList struct {
	Group   contract.ConversationID
	Version uint64
	Members []Member // ascending user id
}

// membersPage is the PULL_MEMBERS limit; the server clamps it to its own maximum.
const membersPage = 500

// membersMaxRestarts bounds the listings a group that keeps changing can force: past it, Members
// gives up instead of paging forever.
const membersMaxRestarts = 8

// memberPager assembles a consistent member list from MEMBERS_BATCH pages: when the membership
// version differs between two pages the group changed meanwhile, and the listing starts over
// from the first page, so the result never mixes two versions.
type memberPager struct {
	list     MemberList
	pages    int // pages folded in since the last (re)start
	restarts int
}

func newMemberPager(group contract.ConversationID) *memberPager {
	return &memberPager{list: MemberList{Group: group}}
}

// add folds one page in. It returns the token of the page to request next (nil: the first page,
// after a restart) or done when the list is complete.
func (p *memberPager) add(b *qimv1.MembersBatch) (next []byte, done bool, err error) {
	if g := b.GetGroupId(); len(g) > 0 {
		raw, err := contract.U128FromBytes(g)
		if c, cerr := contract.GroupConversationID(raw); err != nil || cerr != nil || c != p.list.Group {
			return nil, false, fmt.Errorf("%w: MEMBERS_BATCH for another group", ErrProtocol)
		}
	}
	if p.pages > 0 && b.GetMembershipVersion() != p.list.Version {
		p.restarts++
		if p.restarts > membersMaxRestarts {
			return nil, false, fmt.Errorf("sdk: group %s changed %d times while listing its members; try again",
				p.list.Group, p.restarts)
		}
		p.list.Members, p.pages = nil, 0
		return nil, false, nil
	}
	p.list.Version = b.GetMembershipVersion()
	p.pages++
	for _, m := range b.GetMembers() {
		u := contract.UserID(m.GetUserId())
		if n := len(p.list.Members); u == 0 || (n > 0 && u <= p.list.Members[n-1].User) {
			return nil, false, fmt.Errorf("%w: MEMBERS_BATCH members not ascending (user %d)", ErrProtocol, u)
		}
		p.list.Members = append(p.list.Members, Member{User: u, JoinedAtSeq: contract.ConversationSeq(m.GetJoinedAtSeq()),
			LeftAtSeq: contract.ConversationSeq(m.GetLeftAtSeq())})
	}
	switch {
	case len(p.list.Members) > contract.GroupMaxMembers:
		return nil, false, fmt.Errorf("%w: more than %d members listed", ErrProtocol, contract.GroupMaxMembers)
	case !b.GetHasMore():
		return nil, true, nil
	case len(b.GetMembers()) == 0 || len(b.GetNextPageToken()) == 0:
		// Either would page forever.
		return nil, false, fmt.Errorf("%w: MEMBERS_BATCH has_more without members or token", ErrProtocol)
	}
	return b.GetNextPageToken(), false, nil
}
