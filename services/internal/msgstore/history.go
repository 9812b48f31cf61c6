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
	return counterValue(v, tenant, conv)
}

// counterValue reads a conversation_seq counter from an MGET reply (nil: none allocated).
func counterValue(v any, tenant contract.TenantID, conv contract.ConversationID) (uint64, error) {
	if v == nil {
		return 0, nil
	}
	sv, ok := v.(string)
	n, err := strconv.ParseUint(sv, 10, 64)
	if !ok || err != nil {
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

// HistoryPage reads one page across both tiers (tiered.go): seqs above the conversation's hot
// floor from Redis, seqs at or below it from the Archive, merged in seq order. A missing record
// for an indexed seq, bytes that do not decode as a MessageRecord, or a record whose conversation
// or seq disagrees with the index fail the whole page with a *CorruptError, in either tier: a
// client must never mistake a silently shortened page for history. The first record is returned
// even when it alone exceeds MaxBytes, so the anchor always moves.
func (s *Store) HistoryPage(ctx context.Context, q HistoryQuery) (HistoryPage, error) {
	q, err := q.normalize()
	if err != nil {
		return HistoryPage{}, err
	}
	return retryOnFloorMove(func() (HistoryPage, bool, error) { return s.historyOnce(ctx, q) })
}

// historyOnce reads one page; moved reports a trim under the read (the page is then discarded).
func (s *Store) historyOnce(ctx context.Context, q HistoryQuery) (p HistoryPage, moved bool, err error) {
	ck := newConvKeys(q.Tenant, q.Conversation)
	var mget *redis.SliceCmd
	var amended *redis.IntCmd
	_, err = s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		mget = p.MGet(ctx, ck.seq, ck.floor())
		amended = p.Exists(ctx, ck.amend())
		return nil
	})
	if err != nil {
		return HistoryPage{}, false, fmt.Errorf("msgstore: history: read counter and floor: %w", err)
	}
	vals := mget.Val()
	latest, err := counterValue(vals[0], q.Tenant, q.Conversation)
	if err != nil {
		return HistoryPage{}, false, err
	}
	floor, err := floorValue(vals[1], q.Tenant, q.Conversation)
	if err != nil {
		return HistoryPage{}, false, err
	}
	w := walk{q: q, keys: ck, latest: latest, floor: floor, maxEmpty: s.maxEmptyScan}
	var cold [][]byte // archive records, in walk order
	if q.Direction == Newer && q.Anchor < floor {
		if cold, err = s.coldNewer(ctx, &w); err != nil {
			return HistoryPage{}, false, err
		}
	}
	if !w.more && !w.stopped {
		if err := w.collect(ctx, s.rdb); err != nil {
			return HistoryPage{}, false, err
		}
	}
	hot, now, err := s.loadRecords(ctx, q, ck, w.seqs[len(cold):])
	if now != floor {
		return HistoryPage{}, true, nil
	}
	if err != nil {
		return HistoryPage{}, false, err
	}
	recs := append(cold, hot...)
	if q.Direction == Older && floor > 0 && !w.more && !w.stopped {
		if recs, err = s.coldOlder(ctx, &w, recs); err != nil {
			return HistoryPage{}, false, err
		}
	}
	page := w.page(recs)
	if amended.Val() > 0 {
		if err := s.foldAmendments(ctx, q.Tenant, []amendJob{{conv: q.Conversation, recs: page.Records}}); err != nil {
			return HistoryPage{}, false, err
		}
	}
	return page, false, nil
}

// coldNewer reads the archive part of a NEWER page, (anchor, floor], and leaves the walk set to
// continue in Redis above the floor when the archive part did not end the page.
func (s *Store) coldNewer(ctx context.Context, w *walk) ([][]byte, error) {
	arch, scanned, err := s.ascending(ctx, w.q, w.q.Anchor, w.floor, w.q.Limit+1)
	if err != nil {
		return nil, err
	}
	recs := make([][]byte, 0, len(arch))
	for _, a := range arch {
		w.seqs, recs = append(w.seqs, a.Seq), append(recs, a.Raw)
	}
	switch {
	case len(w.seqs) > w.q.Limit:
		w.seqs, recs, w.more = w.seqs[:w.q.Limit], recs[:w.q.Limit], true
	case scanned < w.floor:
		w.stopped, w.more, w.boundary = true, true, scanned
	default:
		w.q.Anchor = w.floor
	}
	return recs, nil
}

// coldOlder continues an OLDER page below the floor once Redis has nothing more above it.
func (s *Store) coldOlder(ctx context.Context, w *walk, recs [][]byte) ([][]byte, error) {
	upTo := w.floor
	if a := w.q.Anchor; a != 0 && a-1 < upTo {
		upTo = a - 1
	}
	if upTo == 0 {
		return recs, nil
	}
	arch, scanned, err := s.descending(ctx, w.q.Tenant, w.q.Conversation, 0, upTo, w.q.Limit+1-len(w.seqs))
	if err != nil {
		return nil, err
	}
	for _, a := range arch {
		w.seqs, recs = append(w.seqs, a.Seq), append(recs, a.Raw)
	}
	switch {
	case len(w.seqs) > w.q.Limit:
		w.seqs, recs, w.more = w.seqs[:w.q.Limit], recs[:w.q.Limit], true
	case scanned > 0:
		w.stopped, w.more, w.boundary = true, true, scanned+1
	}
	return recs, nil
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
