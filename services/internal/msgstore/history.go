package msgstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/redis/go-redis/v9"

	"github.com/qim-dev/qim/contract"
)

// Direction of a history page relative to its anchor. The zero value is invalid, so a query that
// forgot to set it is refused instead of silently reading one way.
type Direction int

const (
	Older Direction = iota + 1 // seq < anchor; anchor 0 = from the latest
	Newer                      // seq > anchor
)

// HistoryQuery asks for one page of a conversation's hot history. The anchor is exclusive.
// Limit 0 means DefaultHistoryLimit; values above MaxHistoryLimit are clamped to it. MaxBytes 0
// means contract.HistoryPageMaxBytes, which is also the hard cap (larger values are clamped).
// Authorization (membership intervals) is the caller's job and must run before this read.
type HistoryQuery struct {
	Tenant       contract.TenantID
	Conversation contract.ConversationID
	Anchor       uint64
	Direction    Direction
	Limit        int
	MaxBytes     int
}

// HistoryPage is one page: complete MessageRecord bytes in ascending seq order. When HasMore,
// the next page is read with Anchor = NextAnchor and the same Direction. NextAnchor may sit on a
// bucket boundary with no records in between when the empty-bucket scan bound stopped the read.
type HistoryPage struct {
	Records    [][]byte
	HasMore    bool
	NextAnchor uint64
}

// LatestSeq is the conversation's counter: the highest conversation_seq ever allocated (0 if
// none). It may be a hole (reserved and not recorded yet, or never used).
func (s *Store) LatestSeq(ctx context.Context, tenant contract.TenantID, conv contract.ConversationID) (uint64, error) {
	return s.latest(ctx, newConvKeys(tenant, conv).seq, tenant, conv)
}

func (s *Store) latest(ctx context.Context, key string, tenant contract.TenantID, conv contract.ConversationID) (uint64, error) {
	v, err := s.rdb.Get(ctx, key).Result()
	if errors.Is(err, redis.Nil) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("msgstore: latest seq: %w", err)
	}
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		return 0, &CorruptError{Tenant: tenant, Conversation: conv, Reason: "sequence counter is not a decimal integer"}
	}
	return n, nil
}

func (q HistoryQuery) normalize() (HistoryQuery, error) {
	if q.Direction != Older && q.Direction != Newer {
		return q, fmt.Errorf("msgstore: history: %w: direction %d", ErrInvalidArgument, q.Direction)
	}
	if q.Limit < 0 || q.MaxBytes < 0 {
		return q, fmt.Errorf("msgstore: history: %w: negative limit or max_bytes", ErrInvalidArgument)
	}
	if contract.U128(q.Conversation).IsZero() {
		return q, fmt.Errorf("msgstore: history: %w: zero conversation_id", ErrInvalidArgument)
	}
	if q.Limit == 0 {
		q.Limit = DefaultHistoryLimit
	}
	q.Limit = min(q.Limit, MaxHistoryLimit)
	if q.MaxBytes == 0 || q.MaxBytes > contract.HistoryPageMaxBytes {
		q.MaxBytes = contract.HistoryPageMaxBytes
	}
	return q, nil
}

// HistoryPage reads one page. A missing record for an indexed seq, bytes that do not decode as a
// MessageRecord, or a record whose conversation or seq disagrees with the index fail the whole
// page with a *CorruptError: a client must never mistake a silently shortened page for history.
// The first record is returned even when it alone exceeds MaxBytes, so the anchor always moves.
func (s *Store) HistoryPage(ctx context.Context, q HistoryQuery) (HistoryPage, error) {
	q, err := q.normalize()
	if err != nil {
		return HistoryPage{}, err
	}
	ck := newConvKeys(q.Tenant, q.Conversation)
	latest, err := s.latest(ctx, ck.seq, q.Tenant, q.Conversation)
	if err != nil {
		return HistoryPage{}, err
	}
	w := walk{q: q, keys: ck, latest: latest, maxEmpty: s.maxEmptyScan}
	if err := w.collect(ctx, s.rdb); err != nil {
		return HistoryPage{}, err
	}
	recs, err := s.loadRecords(ctx, q, ck, w.seqs)
	if err != nil {
		return HistoryPage{}, err
	}
	return w.page(recs), nil
}

// page applies the byte budget to records (in walk order, nearest the anchor first) and returns
// them ascending. A byte cut continues from the last returned record; a scan-bound stop after all
// records continues from the boundary beyond the empty buckets already scanned.
func (w *walk) page(recs [][]byte) HistoryPage {
	n, total := 0, 0
	for n < len(recs) && (n == 0 || total+len(recs[n]) <= w.q.MaxBytes) {
		total += len(recs[n])
		n++
	}
	p := HistoryPage{Records: recs[:n:n], HasMore: w.more}
	switch {
	case n < len(recs):
		p.HasMore, p.NextAnchor = true, w.seqs[n-1]
	case w.stopped:
		p.NextAnchor = w.boundary
	case n > 0:
		p.NextAnchor = w.seqs[n-1]
	default:
		p.NextAnchor = w.q.Anchor
	}
	if n == 0 {
		p.Records = nil
	}
	if w.q.Direction == Older {
		slices.Reverse(p.Records)
	}
	return p
}
