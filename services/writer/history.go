package writer

import (
	"context"
	"fmt"

	"github.com/qim-dev/qim/services/internal/rpc"

	"google.golang.org/protobuf/proto"

	"github.com/qim-dev/qim/contract"
	qimv1 "github.com/qim-dev/qim/proto/qim/v1"
	internalv1 "github.com/qim-dev/qim/proto/qiminternal/v1"
	"github.com/qim-dev/qim/services/internal/msgstore"
)

// PULL_HISTORY directions on the wire.
const (
	wireOlder = 1
	wireNewer = 2
)

// pullHistory serves one PULL_HISTORY page. A direct conversation's reader is authorised against
// the participants named in the records themselves: a direct conversation id is a public hash of
// the pair, so anyone can compute it and only the records say who may read it, and an empty page
// reveals nothing. A group's reader is authorised by its membership intervals before any
// history key is read (historygroup.go). Any missing or corrupt record fails the whole
// page: a partial page would look to the client like messages that never existed.
func (s *Service) pullHistory(ctx context.Context, in *internalv1.AuthenticatedPullHistory) (*qimv1.HistoryBatch, error) {
	tenant, err := contract.U128FromBytes(in.GetTenantId())
	if err != nil {
		return nil, rpc.Refuse(contract.ErrCodeInvalidArgument, "tenant_id: %v", err)
	}
	var req qimv1.PullHistory
	if err := proto.Unmarshal(in.GetPullHistory(), &req); err != nil {
		return nil, rpc.Refuse(contract.ErrCodeInvalidArgument, "malformed PullHistory: %v", err)
	}
	conv, err := contract.ParseConversationID(req.GetConversationId())
	if err != nil {
		return nil, rpc.Refuse(contract.ErrCodeInvalidArgument, "%v", err)
	}
	if conv.Kind() != contract.KindDirect && conv.Kind() != contract.KindGroup {
		return nil, rpc.Refuse(contract.ErrCodeUnimplemented, "history of %s conversations is not served by this build", conv.Kind())
	}
	q := msgstore.HistoryQuery{Tenant: tenant, Conversation: conv, Anchor: req.GetAnchorSeq(),
		Limit: int(req.GetLimit()), MaxBytes: int(req.GetMaxBytes())}
	switch req.GetDirection() {
	case wireOlder, 0:
		q.Direction = msgstore.Older
	case wireNewer:
		q.Direction = msgstore.Newer
	default:
		return nil, rpc.Refuse(contract.ErrCodeInvalidArgument, "direction %d is neither OLDER (1) nor NEWER (2)", req.GetDirection())
	}
	actor := contract.UserID(in.GetActorUserId())
	var iv *intervalFilter
	if conv.Kind() == contract.KindGroup {
		if iv, err = s.groupReader(ctx, tenant, actor, conv, &q); err != nil {
			return nil, err
		}
	}
	page, err := s.store.HistoryPage(ctx, q)
	if err != nil {
		return nil, fmt.Errorf("writer: history page: %w", err) // corrupt → INTERNAL, else UNAVAILABLE
	}
	out, err := historyBatch(req.GetConversationId(), page, actor, iv)
	if err != nil {
		return nil, err
	}
	if err := s.withReactions(ctx, tenant, conv, actor, out); err != nil {
		return nil, err
	}
	return out, nil
}

// historyBatch turns a page into the wire batch. A direct page is authorised record by record
// against the participants the records name (any stranger's record refuses the whole page); a
// group page (iv set) keeps only the records the reader's intervals cover.
func historyBatch(cid []byte, page msgstore.HistoryPage, actor contract.UserID, iv *intervalFilter) (*qimv1.HistoryBatch, error) {
	out := &qimv1.HistoryBatch{ConversationId: cid, HasMore: page.HasMore, NextAnchorSeq: page.NextAnchor}
	for _, raw := range page.Records {
		var r internalv1.MessageRecord
		if err := proto.Unmarshal(raw, &r); err != nil {
			return nil, fmt.Errorf("writer: history record of %d bytes does not decode: %v: %w", len(raw), err, rpc.ErrCorrupt)
		}
		if iv != nil {
			if !iv.keep(r.GetConversationSeq(), out) {
				continue
			}
		} else if uint64(actor) != r.GetSenderUserId() && uint64(actor) != r.GetDirectPeerUserId() {
			return nil, rpc.Refuse(contract.ErrCodeNotMember, "not a participant of this conversation")
		}
		m := &qimv1.HistoryMessage{
			MessageId: r.GetMessageId(), ConversationId: r.GetConversationId(), ConversationSeq: r.GetConversationSeq(),
			SenderUserId: r.GetSenderUserId(), MessageType: r.GetMessageType(), CustomType: r.GetCustomType(),
			SentAtMs: r.GetCreatedAtMs(), Mentions: r.GetMentions(), Flags: r.GetFlags(),
		}
		if r.GetFlags()&3 == 0 { // recalled or deleted bodies are not served
			m.Body = r.GetBody()
			if m.Body == nil {
				m.Body = []byte{}
			}
		}
		if r.GetSenderUserId() == uint64(actor) {
			m.ClientMessageId = r.GetClientMessageId()
		}
		out.Records = append(out.Records, m)
	}
	return out, nil
}
