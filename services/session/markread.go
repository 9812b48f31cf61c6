package session

import (
	"context"

	"google.golang.org/protobuf/proto"

	"github.com/qim-dev/qim/contract"
	qimv1 "github.com/qim-dev/qim/proto/qim/v1"
	internalv1 "github.com/qim-dev/qim/proto/qiminternal/v1"
	"github.com/qim-dev/qim/services/internal/rpc"
)

// markRead serves MARK_READ: the user-level watermark becomes max(stored, min(requested,
// latest)) — for a group, latest is clipped to a former member's leave point, so a leaver cannot
// mark traffic after it — the user's snapshot gets a dirty marker (so the next first page re-reads
// the row), and the answer carries the absolute stored watermark and the unread count after it.
//
// The answer also carries the conversation's complete session entry, which the gateway pushes to
// the user's other devices as SESSION_DELTA (absolute values: a lost or late one only delays
// what their next PULL_SESSION_LIST shows, the watermark being per user).
func (s *Service) markRead(ctx context.Context, in *internalv1.AuthenticatedMarkRead) (*internalv1.MarkReadOutcome, error) {
	k, err := s.ownedIdentity(in.GetTenantId(), in.GetUserId())
	if err != nil {
		return nil, err
	}
	var req qimv1.MarkRead
	if err := proto.Unmarshal(in.GetMarkRead(), &req); err != nil {
		return nil, rpc.Refuse(contract.ErrCodeInvalidArgument, "malformed MarkRead: %v", err)
	}
	conv, err := contract.ParseConversationID(req.GetConversationId())
	if err != nil {
		return nil, rpc.Refuse(contract.ErrCodeInvalidArgument, "%v", err)
	}
	want, err := contract.NewConversationSeq(req.GetReadConversationSeq())
	if err != nil {
		return nil, rpc.Refuse(contract.ErrCodeInvalidArgument, "%v", err)
	}
	latest, member, err := s.authorize(ctx, k, conv)
	if err != nil {
		return nil, err
	}
	clamp := window{conv: conv, latest: latest, member: member}.top()
	stored, err := s.st.markRead(ctx, k, conv, min(uint64(want), clamp))
	if err != nil {
		return nil, err
	}
	s.cache.mark(k, conv)
	ws, err := s.src.windows(ctx, k, []contract.ConversationID{conv}, []uint64{stored})
	if err != nil {
		return nil, err
	}
	sum := summarize(ws[0], s.src.headBodyMax)
	ack := &qimv1.MarkReadAck{ConversationId: req.GetConversationId(), ReadConversationSeq: stored,
		UnreadCount: sum.unread, UnreadExact: sum.exact}
	entry, err := s.entryAfterRead(ctx, k, ws[0], sum)
	if err != nil {
		return nil, err
	}
	shared, err := s.withPeerReads(ctx, k, []*qimv1.SessionEntry{entry})
	if err != nil {
		return nil, err
	}
	return &internalv1.MarkReadOutcome{Ack: ack, Entry: entry, ShareReceipt: shared[0]}, nil
}

// entryAfterRead is the conversation's complete session entry after a MARK_READ, for the user's
// other devices (SESSION_DELTA): the row's activity from the list and the content just computed.
// A conversation the projection has not listed yet (it follows the dispatch log and may lag the
// mailbox the devices read, seconds after a shard moved) gets the activity the projection will
// give it, the time of its newest visible record. nil when the user is not served the row or
// nothing of it is visible.
func (s *Service) entryAfterRead(ctx context.Context, k userKey, w window, sum *summary) (*qimv1.SessionEntry, error) {
	if sum.hidden {
		return nil, nil
	}
	rows, ok, err := s.src.scores(ctx, k, []contract.ConversationID{w.conv})
	if err != nil {
		return nil, err
	}
	if ok[0] {
		return entryOf(rows[0], sum), nil
	}
	for _, r := range w.recs {
		if !w.visible(r.GetConversationSeq()) {
			continue
		}
		mid, err := contract.ParseMessageID(r.GetMessageId())
		if err != nil || mid.TimeMs() == 0 {
			return nil, nil //nolint:nilerr // a record the list could not order either: no delta
		}
		return entryOf(row{score: mid.TimeMs(), conv: w.conv}, sum), nil
	}
	return nil, nil
}

// authorize admits a group the user has intervals in (current or former member, whether or not
// the projection listed it yet: the intervals alone decide), a conversation in the user's list,
// or a direct conversation whose newest record names the user (the projection may lag the
// message the client read). It returns the conversation's seq counter and, for a group, the
// user's intervals (read after the counter, see visibility.go): together, the watermark's clamp.
func (s *Service) authorize(ctx context.Context, k userKey, conv contract.ConversationID) (uint64, contract.Membership, error) {
	one := []contract.ConversationID{conv}
	latest, err := s.src.hist.LatestSeqs(ctx, k.tenant, one)
	if err != nil {
		return 0, nil, err
	}
	if conv.Kind() == contract.KindGroup {
		ms, err := s.src.memberships(ctx, k, one)
		if err != nil {
			return 0, nil, err
		}
		if !ms[0].Ever() {
			return 0, nil, rpc.Refuse(contract.ErrCodeNotMember, "not a member of this group")
		}
		return latest[0], ms[0], nil
	}
	in, err := s.st.inList(ctx, k, conv)
	if err != nil {
		return 0, nil, err
	}
	if in {
		return latest[0], nil, nil
	}
	if conv.Kind() == contract.KindDirect {
		ws, err := s.src.windows(ctx, k, one, latest)
		if err != nil {
			return 0, nil, err
		}
		for _, r := range ws[0].recs[:min(1, len(ws[0].recs))] {
			if contract.UserID(r.GetSenderUserId()) == k.user || contract.UserID(r.GetDirectPeerUserId()) == k.user {
				return latest[0], nil, nil
			}
		}
	}
	return 0, nil, rpc.Refuse(contract.ErrCodeNotMember, "not a participant of this conversation")
}
