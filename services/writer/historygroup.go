package writer

import (
	"context"
	"fmt"

	"github.com/qim-dev/qim/contract"
	qimv1 "github.com/qim-dev/qim/proto/qim/v1"
	"github.com/qim-dev/qim/services/internal/msgstore"
	"github.com/qim-dev/qim/services/internal/rpc"
)

// intervalFilter clips a group history page to the reader's membership intervals.
type intervalFilter struct {
	m       contract.Membership
	lo, hi  uint64 // nothing at or below lo is visible, nor above hi when bounded
	bounded bool
	dir     msgstore.Direction
}

// groupReader authorises a group history read and narrows the query to the reader's span. The
// intervals are read before any history key, so a never-member learns nothing (NOT_MEMBER,
// whether or not the group exists); a former member still reads its own intervals — a leaver
// keeps the history up to its leave.
func (s *Service) groupReader(ctx context.Context, tenant contract.TenantID, actor contract.UserID, conv contract.ConversationID,
	q *msgstore.HistoryQuery) (*intervalFilter, error) {
	ms, err := s.store.MemberIntervals(ctx, tenant, actor, []contract.ConversationID{conv})
	if err != nil {
		return nil, fmt.Errorf("writer: history membership: %w", err)
	}
	if !ms[0].Ever() {
		return nil, rpc.Refuse(contract.ErrCodeNotMember, "not a member of this group")
	}
	f := &intervalFilter{m: ms[0], dir: q.Direction}
	f.lo, f.hi, f.bounded = ms[0].Bounds()
	switch q.Direction {
	case msgstore.Older:
		if f.bounded && (q.Anchor == 0 || q.Anchor > f.hi+1) {
			q.Anchor = f.hi + 1 // the anchor is exclusive: start at hi itself
		}
	case msgstore.Newer:
		q.Anchor = max(q.Anchor, f.lo)
	}
	return f, nil
}

// keep reports whether the record at seq goes into out, and ends the listing (HasMore false)
// once the page reached past the reader's span: there is nothing further the reader may see.
func (f *intervalFilter) keep(seq uint64, out *qimv1.HistoryBatch) bool {
	if (f.dir == msgstore.Older && seq <= f.lo) || (f.dir == msgstore.Newer && f.bounded && seq > f.hi) {
		out.HasMore = false
		return false
	}
	return f.m.Contains(seq)
}
