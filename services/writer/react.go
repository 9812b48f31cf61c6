package writer

// REACT (ADR-0038): the writer checks that the reactor may see the message and that the message
// takes reactions, then applies the change to the conversation's reaction aggregate (msgstore,
// one script call). Nothing is committed: no seq, no Outbox record, no mailbox entry, no unread —
// the seed's ephemeral_aggregate class. The answer also names who should be told at once (the
// gateway sends them REACTION_EVENT): the two participants of a direct conversation, the current
// members of a group of at most contract.TypingGroupMaxMembers, nobody for a larger group (its
// members see the counts in PULL_HISTORY: n frames per tap is the N² the seed rules out).

import (
	"context"
	"errors"
	"fmt"
	"unicode/utf8"

	"google.golang.org/protobuf/proto"

	"github.com/qim-dev/qim/contract"
	qimv1 "github.com/qim-dev/qim/proto/qim/v1"
	internalv1 "github.com/qim-dev/qim/proto/qiminternal/v1"
	"github.com/qim-dev/qim/services/internal/msgstore"
	"github.com/qim-dev/qim/services/internal/rpc"
)

// React serves the client's REACT for the gateway.
func (g grpcServer) React(ctx context.Context, in *internalv1.AuthenticatedReact) (*internalv1.ReactOutcome, error) {
	out, err := g.s.react(ctx, in)
	if err != nil {
		var refusal *rpc.RequestError
		if !errors.As(err, &refusal) {
			g.s.log.Warn("writer: react failed", "code", rpc.CodeOf(err).String(), "err", err)
		}
		return &internalv1.ReactOutcome{ErrorCode: uint32(rpc.CodeOf(err)), ErrorMessage: rpc.ClientMessage(err)}, nil
	}
	return out, nil
}

// reactTarget is a parsed REACT.
type reactTarget struct {
	tenant contract.TenantID
	actor  contract.UserID
	conv   contract.ConversationID
	peer   contract.UserID // direct conversations
	req    *qimv1.React
}

func (s *Service) react(ctx context.Context, in *internalv1.AuthenticatedReact) (*internalv1.ReactOutcome, error) {
	if s.stopped() {
		return nil, rpc.Refuse(contract.ErrCodeUnavailable, "writer is not serving (lease lost or shutting down)")
	}
	t, err := parseReact(in)
	if err != nil {
		return nil, err
	}
	audience, err := s.reactAudience(ctx, t)
	if err != nil {
		return nil, err
	}
	rec, err := s.reactTargetRecord(ctx, t)
	if err != nil {
		return nil, err
	}
	res, err := s.store.React(ctx, msgstore.ReactRequest{Tenant: t.tenant, Conversation: t.conv, Target: t.req.GetTargetSeq(),
		User: t.actor, Key: t.req.GetKey(), Remove: t.req.GetRemove(),
		ExpireAtMs: msgstore.RetentionEnd(contract.RetentionClass(rec.GetRetentionClass()), rec.GetCreatedAtMs())})
	switch {
	case errors.Is(err, msgstore.ErrReactionLimit):
		return nil, rpc.Refuse(contract.ErrCodeInvalidArgument, "at most %d distinct reactions per message and %d per user on one message",
			contract.ReactionMaxKeys, contract.ReactionMaxPerUser)
	case err != nil:
		return nil, fmt.Errorf("writer: react: %w", err)
	}
	cid := t.conv.Bytes()
	out := &internalv1.ReactOutcome{Ack: &qimv1.ReactAck{ConversationId: cid[:], TargetSeq: t.req.GetTargetSeq(),
		Reactions: wireCounts(res.Counts, true), Changed: res.Changed}}
	if res.Changed && len(audience) > 0 {
		out.Event = &qimv1.ReactionEvent{ConversationId: cid[:], TargetSeq: t.req.GetTargetSeq(), UserId: uint64(t.actor),
			Key: t.req.GetKey(), Removed: t.req.GetRemove(), Reactions: wireCounts(res.Counts, false)}
		for _, u := range audience {
			out.Audience = append(out.Audience, uint64(u))
		}
	}
	return out, nil
}

// parseReact validates a REACT: one target, a seq, a key of 1 to contract.ReactionKeyMaxBytes
// bytes of UTF-8 without control characters (the aggregate's separators are below 0x20).
func parseReact(in *internalv1.AuthenticatedReact) (reactTarget, error) {
	tenant, err := contract.U128FromBytes(in.GetTenantId())
	if err != nil || in.GetActorUserId() == 0 {
		return reactTarget{}, rpc.Refuse(contract.ErrCodeInvalidArgument, "tenant_id or actor missing")
	}
	var req qimv1.React
	if err := proto.Unmarshal(in.GetReact(), &req); err != nil {
		return reactTarget{}, rpc.Refuse(contract.ErrCodeInvalidArgument, "malformed React: %v", err)
	}
	t := reactTarget{tenant: tenant, actor: contract.UserID(in.GetActorUserId()), req: &req}
	if err := checkReactionKey(req.GetKey()); err != nil {
		return reactTarget{}, err
	}
	if req.GetTargetSeq() == 0 {
		return reactTarget{}, rpc.Refuse(contract.ErrCodeInvalidArgument, "target_seq is zero")
	}
	switch tg := req.GetTarget().(type) {
	case *qimv1.React_PeerUserId:
		t.peer = contract.UserID(tg.PeerUserId)
		if t.peer == 0 || t.peer == t.actor {
			return reactTarget{}, rpc.Refuse(contract.ErrCodeInvalidArgument, "peer_user_id is zero or the reactor")
		}
		t.conv = contract.DirectConversationID(tenant, t.actor, t.peer)
	case *qimv1.React_GroupId:
		if t.conv, err = groupConv(tg.GroupId); err != nil {
			return reactTarget{}, err
		}
	default:
		return reactTarget{}, rpc.Refuse(contract.ErrCodeInvalidArgument, "React needs a peer_user_id or a group_id")
	}
	return t, nil
}

func checkReactionKey(k string) error {
	if k == "" || len(k) > contract.ReactionKeyMaxBytes || !utf8.ValidString(k) {
		return rpc.Refuse(contract.ErrCodeInvalidArgument, "a reaction key is 1 to %d bytes of UTF-8", contract.ReactionKeyMaxBytes)
	}
	for _, r := range k {
		if r < 0x20 || r == 0x7f {
			return rpc.Refuse(contract.ErrCodeInvalidArgument, "a reaction key holds no control characters")
		}
	}
	return nil
}

// reactAudience checks a group reactor is a current member and returns who is told at once.
func (s *Service) reactAudience(ctx context.Context, t reactTarget) ([]contract.UserID, error) {
	if t.conv.Kind() != contract.KindGroup {
		return []contract.UserID{t.actor, t.peer}, nil
	}
	g, found, err := s.store.LoadGroup(ctx, t.tenant, t.conv)
	if err != nil {
		return nil, errors.Join(rpc.Refuse(contract.ErrCodeUnavailable, "group read failed; retry"), err)
	}
	if !found || !g.Members[t.actor].Current() || !g.Members[t.actor].Contains(t.req.GetTargetSeq()) {
		return nil, rpc.Refuse(contract.ErrCodeNotMember, "not a current member who can see this message")
	}
	if g.Count > contract.TypingGroupMaxMembers {
		return nil, nil
	}
	return g.Current(), nil
}

// reactTargetRecord reads the message reacted to as readers see it (amendments applied): it
// must exist, name the reactor in a direct conversation, and not be CONTROL, recalled or
// deleted.
func (s *Service) reactTargetRecord(ctx context.Context, t reactTarget) (*internalv1.MessageRecord, error) {
	seq := t.req.GetTargetSeq()
	page, err := s.store.HistoryPage(ctx, msgstore.HistoryQuery{Tenant: t.tenant, Conversation: t.conv,
		Anchor: seq + 1, Direction: msgstore.Older, Limit: 1})
	if err != nil {
		return nil, errors.Join(rpc.Refuse(rpc.CodeOf(err), "the message could not be read; retry"), err)
	}
	var r internalv1.MessageRecord
	if len(page.Records) == 0 || proto.Unmarshal(page.Records[0], &r) != nil || r.GetConversationSeq() != seq {
		return nil, rpc.Refuse(contract.ErrCodeInvalidArgument, "no message at conversation_seq %d", seq)
	}
	if t.conv.Kind() == contract.KindDirect && uint64(t.actor) != r.GetSenderUserId() && uint64(t.actor) != r.GetDirectPeerUserId() {
		return nil, rpc.Refuse(contract.ErrCodeNotMember, "not a participant of this conversation")
	}
	if contract.MessageType(r.GetMessageType()) == contract.MessageControl || contract.Gone(r.GetFlags()) {
		return nil, rpc.Refuse(contract.ErrCodeForbidden, "a CONTROL, recalled or deleted message takes no reactions")
	}
	return &r, nil
}

// wireCounts converts counts; withMine false clears Mine (an event all recipients share).
func wireCounts(cs []msgstore.ReactionCount, withMine bool) []*qimv1.ReactionCount {
	out := make([]*qimv1.ReactionCount, len(cs))
	for i, c := range cs {
		out[i] = &qimv1.ReactionCount{Key: c.Key, Count: c.Count, Mine: withMine && c.Mine}
	}
	return out
}

// withReactions sets the reactions of a history page's records for its reader: one round trip,
// whatever the page's size.
func (s *Service) withReactions(ctx context.Context, tenant contract.TenantID, conv contract.ConversationID, reader contract.UserID,
	b *qimv1.HistoryBatch) error {
	if len(b.GetRecords()) == 0 {
		return nil
	}
	seqs := make([]uint64, len(b.GetRecords()))
	for i, m := range b.GetRecords() {
		seqs[i] = m.GetConversationSeq()
	}
	rs, err := s.store.Reactions(ctx, tenant, conv, reader, seqs)
	if err != nil {
		return fmt.Errorf("writer: history reactions: %w", err)
	}
	for _, m := range b.GetRecords() {
		if cs, ok := rs[m.GetConversationSeq()]; ok && !contract.Gone(m.GetFlags()) {
			m.Reactions = wireCounts(cs, true)
		}
	}
	return nil
}
