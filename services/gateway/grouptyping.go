package gateway

// Typing in groups: a TYPING naming a group reaches every other current member's devices as
// TYPING_EVENT, through the members' MailboxNodes like a direct conversation's (typing.go), one
// PushSessions call per node. Nothing is stored; the membership is the writer's (PULL_MEMBERS
// on the typist's behalf, which also proves the typist is a current member).
//
// The member list is reused for contract.TypingAudienceTTL (an expirable LRU, bounded by
// typingAudiences): a typist renews every few seconds, and asking the writer each time would
// cost a group read per keystroke burst. The price, documented in the contract: a member removed
// meanwhile may see "X is typing" for that long, and a member added meanwhile is refreshed on its
// first TYPING (a typist missing from the cached list forces a re-read). Groups above
// contract.TypingGroupMaxMembers get no typing indicator: the read asks for one member more than
// the bound and drops the TYPING when there is more (counted group_too_large).
//
// Rejected: caching membership from the CONTROL stream (the gateway would follow every group's
// traffic), and answering TYPING with an error for a large group (TYPING has no answer; see
// typing.go).

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/hashicorp/golang-lru/v2/expirable"
	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/protobuf/proto"

	"github.com/qim-dev/qim/contract"
	qimv1 "github.com/qim-dev/qim/proto/qim/v1"
	internalv1 "github.com/qim-dev/qim/proto/qiminternal/v1"
)

// typingAudiences bounds the groups whose member lists one gateway keeps for typing (a few
// hundred KiB at 100 members each).
const typingAudiences = 4096

var (
	errTypingNotMember = errors.New("gateway: the typist is not a current member of the group")
	errTypingTooLarge  = errors.New("gateway: the group is above the typing bound")
)

type audienceKey struct {
	tenant contract.TenantID
	conv   contract.ConversationID
}

// audience is a group's current members as one PULL_MEMBERS read them; tooLarge when there were
// more than contract.TypingGroupMaxMembers (members then empty).
type audience struct {
	members  []contract.UserID // ascending
	tooLarge bool
}

func newAudienceCache() *expirable.LRU[audienceKey, audience] {
	return expirable.NewLRU[audienceKey, audience](typingAudiences, nil, contract.TypingAudienceTTL)
}

// typeInGroup hands a TYPING_EVENT for every other current member of conv to the members'
// MailboxNodes, off the read loop. Outcomes are counted, never answered.
func (c *conn) typeInGroup(conv contract.ConversationID, typing bool) {
	k := c.sess.key
	cid := conv.Bytes()
	ev := &qimv1.TypingEvent{ConversationId: cid[:], UserId: uint64(k.user), Typing: typing,
		ExpiresInMs: uint32(contract.TypingExpiry.Milliseconds())}
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), c.s.cfg.BackendTimeout)
		defer cancel()
		a, err := c.s.groupAudience(ctx, c, conv)
		switch {
		case errors.Is(err, errTypingTooLarge):
			c.s.m.typing.WithLabelValues("group_too_large").Inc()
			return
		case errors.Is(err, errTypingNotMember):
			c.s.m.typing.WithLabelValues("not_member").Inc()
			return
		case err != nil:
			c.s.m.typing.WithLabelValues("failed").Inc()
			return
		}
		others := slices.DeleteFunc(slices.Clone(a), func(u contract.UserID) bool { return u == k.user })
		c.s.pushEach(ctx, k.tenant, others, func(u contract.UserID) *internalv1.PushTarget {
			return &internalv1.PushTarget{TenantId: c.tenantBytes, UserId: uint64(u), Typing: ev}
		}, c.s.m.typing)
	}()
}

// pushEach hands target(u) for every user to the users' MailboxNodes, one PushSessions call per
// node, and counts the targets sent or failed on counter's stage label.
func (s *Service) pushEach(ctx context.Context, tenant contract.TenantID, users []contract.UserID,
	target func(contract.UserID) *internalv1.PushTarget, counter *prometheus.CounterVec) {
	byNode := map[*mailboxNode][]*internalv1.PushTarget{}
	for _, u := range users {
		n := s.mailboxFor(tenant, u)
		byNode[n] = append(byNode[n], target(u))
	}
	for n, ts := range byNode {
		stage := "sent"
		if _, err := n.client.PushSessions(ctx, &internalv1.PushBatchRequest{Targets: ts}); err != nil {
			stage = "failed"
		}
		counter.WithLabelValues(stage).Add(float64(len(ts)))
	}
}

// groupAudience returns conv's current members for c's typist: from the cache when it lists the
// typist, else read from the writer (and cached).
func (s *Service) groupAudience(ctx context.Context, c *conn, conv contract.ConversationID) ([]contract.UserID, error) {
	k := audienceKey{tenant: c.sess.key.tenant, conv: conv}
	if a, ok := s.audiences.Get(k); ok {
		if a.tooLarge {
			return nil, errTypingTooLarge
		}
		if _, in := slices.BinarySearch(a.members, c.sess.key.user); in {
			return a.members, nil
		}
	}
	a, err := s.readAudience(ctx, c, conv)
	if err != nil {
		return nil, err
	}
	s.audiences.Add(k, a)
	if a.tooLarge {
		return nil, errTypingTooLarge
	}
	return a.members, nil
}

// readAudience reads up to contract.TypingGroupMaxMembers + 1 members with one PULL_MEMBERS as
// c's user: the writer refuses NOT_MEMBER to anyone but a current member.
func (s *Service) readAudience(ctx context.Context, c *conn, conv contract.ConversationID) (audience, error) {
	cid := conv.Bytes()
	payload, err := proto.Marshal(&qimv1.PullMembers{GroupId: cid[:], Limit: contract.TypingGroupMaxMembers + 1})
	if err != nil {
		return audience{}, err
	}
	out, err := s.writers.client(c.sess.key.tenant, userRoute(c.sess.key.user)).Group(ctx, &internalv1.AuthenticatedGroupRequest{
		TenantId: c.tenantBytes, ActorUserId: uint64(c.sess.key.user), ActorDeviceId: c.sess.device,
		Opcode: uint32(contract.OpPullMembers), Payload: payload})
	if err != nil {
		return audience{}, fmt.Errorf("gateway: typing audience: %w", err)
	}
	switch code := contract.ErrorCode(out.GetErrorCode()); code {
	case contract.ErrCodeUnspecified:
	case contract.ErrCodeNotMember:
		return audience{}, errTypingNotMember
	default:
		return audience{}, fmt.Errorf("gateway: typing audience: %s %s", code, out.GetErrorMessage())
	}
	var b qimv1.MembersBatch
	if err := proto.Unmarshal(out.GetPayload(), &b); err != nil {
		return audience{}, fmt.Errorf("gateway: typing audience: %w", err)
	}
	if b.GetHasMore() || len(b.GetMembers()) > contract.TypingGroupMaxMembers {
		return audience{tooLarge: true}, nil
	}
	a := audience{members: make([]contract.UserID, len(b.GetMembers()))}
	for i, m := range b.GetMembers() {
		a.members[i] = contract.UserID(m.GetUserId())
	}
	slices.Sort(a.members)
	return a, nil
}
