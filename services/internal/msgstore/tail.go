package msgstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/redis/go-redis/v9"
	"google.golang.org/protobuf/proto"

	"github.com/qim-dev/qim/contract"
	internalv1 "github.com/qim-dev/qim/proto/qiminternal/v1"
)

// Bounds of a TailQuery. They are this package's tuning, not contract constants.
const (
	// MaxTailSpan bounds Latest − After of one TailQuery: a span of at most one bucket width is
	// always covered by the two newest buckets, which the first round trip reads.
	MaxTailSpan = bucketWidth
	// MaxTailMin bounds TailQuery.Min (head candidates per conversation).
	MaxTailMin = 64
	// tailFirstBuckets is how many buckets the first round trip reads per conversation.
	tailFirstBuckets = 2
)

// TailQuery asks for the newest hot-history records of one conversation at or below Latest:
// every indexed record with seq in (After, Latest], and at least the Min newest indexed records
// at or below Latest (fewer when the conversation has fewer, or when DefaultMaxEmptyBucketScan
// consecutive empty buckets end the search). After >= Latest asks for the Min newest only.
//
// It is the read the SessionProjection builds a session-list row from (the head, and the records
// an unread count is defined over); authorisation is the caller's job.
type TailQuery struct {
	Conversation contract.ConversationID
	Latest       uint64 // upper bound, usually from LatestSeqs
	After        uint64 // exclusive lower bound of the span that must be complete
	Min          int    // newest records wanted regardless of After, in [0, MaxTailMin]
}

// Tail is the answer to one TailQuery: complete MessageRecord bytes, newest first.
type Tail struct {
	Records [][]byte
}

// LatestSeqs returns the conversation_seq counter of each conversation (0 when it has none), in
// one round trip. Like LatestSeq, a value may be a hole.
func (s *Store) LatestSeqs(ctx context.Context, tenant contract.TenantID, convs []contract.ConversationID) ([]uint64, error) {
	cmds := make([]*redis.StringCmd, len(convs))
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, c := range convs {
			cmds[i] = p.Get(ctx, newConvKeys(tenant, c).seq)
		}
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("msgstore: latest seqs: %w", err)
	}
	out := make([]uint64, len(convs))
	for i, c := range cmds {
		v, err := c.Result()
		if errors.Is(err, redis.Nil) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("msgstore: latest seqs: %w", err)
		}
		if out[i], err = strconv.ParseUint(v, 10, 64); err != nil {
			return nil, &CorruptError{Tenant: tenant, Conversation: convs[i], Reason: "sequence counter is not a decimal integer"}
		}
	}
	return out, nil
}

// Tails answers every query with one pipelined index read (the two newest buckets of each
// conversation), bounded further reads only for conversations still short of Min head
// candidates, and one MGET for all records. A missing record for an indexed seq, a record that
// does not decode, or one whose conversation or seq disagrees with the index fails the whole call
// with a *CorruptError: a session-list page built from a silently shortened tail would show wrong
// unread counts.
func (s *Store) Tails(ctx context.Context, tenant contract.TenantID, qs []TailQuery) ([]Tail, error) {
	for _, q := range qs {
		if err := q.validate(); err != nil {
			return nil, err
		}
	}
	return retryOnFloorMove(func() ([]Tail, bool, error) { return s.tailsOnce(ctx, tenant, qs) })
}

// tailsOnce reads every tail once across both tiers; moved reports a trim under the read.
func (s *Store) tailsOnce(ctx context.Context, tenant contract.TenantID, qs []TailQuery) ([]Tail, bool, error) {
	walks := make([]*tailWalk, len(qs))
	for i, q := range qs {
		walks[i] = &tailWalk{q: q, keys: newConvKeys(tenant, q.Conversation), tenant: tenant, next: q.Latest / bucketWidth}
	}
	if err := s.tailFloors(ctx, walks); err != nil {
		return nil, false, err
	}
	for _, w := range walks {
		w.done = w.q.Latest <= w.floor || (w.q.After >= w.q.Latest && w.q.Min == 0)
	}
	for first := true; ; first = false {
		active := walks[:0:0]
		for _, w := range walks {
			if !w.done {
				active = append(active, w)
			}
		}
		if len(active) == 0 {
			break
		}
		n := bucketsPerRoundTrip
		if first {
			n = tailFirstBuckets
		}
		if err := s.tailRound(ctx, active, n, first, s.maxEmptyScan); err != nil {
			return nil, false, err
		}
	}
	out, moved, err := s.tailRecords(ctx, tenant, walks)
	if moved || err != nil {
		return nil, moved, err
	}
	for i, w := range walks {
		if w.floor > 0 {
			if out[i].Records, err = s.coldTail(ctx, w, out[i].Records); err != nil {
				return nil, false, err
			}
		}
	}
	if err := s.amendTails(ctx, tenant, walks, out); err != nil {
		return nil, false, err
	}
	return out, false, nil
}

func (q TailQuery) validate() error {
	switch {
	case contract.U128(q.Conversation).IsZero():
		return fmt.Errorf("msgstore: tail: %w: zero conversation_id", ErrInvalidArgument)
	case q.Min < 0 || q.Min > MaxTailMin:
		return fmt.Errorf("msgstore: tail: %w: min %d not in [0, %d]", ErrInvalidArgument, q.Min, MaxTailMin)
	case q.After < q.Latest && q.Latest-q.After > MaxTailSpan:
		return fmt.Errorf("msgstore: tail: %w: span (%d, %d] wider than %d", ErrInvalidArgument, q.After, q.Latest, MaxTailSpan)
	}
	return nil
}

// tailWalk is one conversation's descending walk over its bucket indexes.
//
// Invariants: seqs are strictly descending and at most Latest; every indexed seq in
// (After, Latest] is taken (the span fits in the two buckets the first round reads); the walk
// ends at bucket 0, when it has the span and Min seqs, or after maxEmpty consecutive empty
// buckets (holes are legal and may be wide, so the head search is bounded like a history page).
type tailWalk struct {
	q       TailQuery
	keys    convKeys
	tenant  contract.TenantID
	next    uint64 // next bucket to read
	floor   uint64 // the hot floor F: only seqs above it are read from Redis
	empty   int
	seqs    []uint64
	done    bool
	amended bool // the conversation's amendment index exists (read with the floor)
}

// tailRound reads up to n buckets of every active walk in one pipeline.
func (s *Store) tailRound(ctx context.Context, active []*tailWalk, n int, first bool, maxEmpty int) error {
	cmds := make([][]*redis.StringSliceCmd, len(active))
	var key []byte
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, w := range active {
			count := int64(w.q.Min)
			if w.q.After < w.q.Latest {
				count += int64(w.q.Latest - w.q.After)
			}
			for j := 0; j < n && uint64(j) <= w.next-w.floor/bucketWidth; j++ {
				key = appendNumKey(key[:0], w.keys.hidx, w.next-uint64(j))
				args := redis.ZRangeArgs{Key: string(key), ByScore: true, Rev: true, Start: "+inf", Stop: "-inf", Count: count}
				if first && j == 0 {
					args.Start = strconv.FormatUint(w.q.Latest, 10)
				}
				cmds[i] = append(cmds[i], p.ZRangeArgs(ctx, args))
			}
		}
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return fmt.Errorf("msgstore: tail: read bucket index: %w", err)
	}
	for i, w := range active {
		for _, c := range cmds[i] {
			if w.done {
				break
			}
			if err := w.absorb(c, maxEmpty); err != nil {
				return err
			}
		}
	}
	return nil
}

// absorb takes one bucket's members (descending) and moves the walk to the next bucket.
func (w *tailWalk) absorb(c *redis.StringSliceCmd, maxEmpty int) error {
	members, err := c.Result()
	if err != nil {
		return fmt.Errorf("msgstore: tail: read bucket index: %w", err)
	}
	b := w.next
	if len(members) == 0 {
		w.empty++
	} else {
		w.empty = 0
	}
	for _, m := range members {
		seq, err := strconv.ParseUint(m, 10, 64)
		last := len(w.seqs) > 0 && seq >= w.seqs[len(w.seqs)-1]
		if err != nil || seq/bucketWidth != b || seq == 0 || seq > w.q.Latest || last {
			return &CorruptError{Tenant: w.tenant, Conversation: w.q.Conversation, Seq: seq,
				Reason: "history index member outside its bucket or out of order"}
		}
		if seq <= w.floor {
			continue // committed late, not trimmed yet: the archive is its tier
		}
		if seq <= w.q.After && len(w.seqs) >= w.q.Min {
			w.done = true
			return nil
		}
		w.seqs = append(w.seqs, seq)
	}
	// The span (After, Latest] is complete once the bucket of its lowest seq was read (it lies
	// in the first two buckets); only then may the empty-bucket bound end the head search.
	spanDone := w.q.After >= w.q.Latest || b*bucketWidth <= w.q.After+1
	switch {
	case b == w.floor/bucketWidth, spanDone && (len(w.seqs) >= w.q.Min || w.empty >= maxEmpty):
		w.done = true
	default:
		w.next = b - 1
	}
	return nil
}

// tailRecords fetches the records of every walk and every walk's hot floor with one MGET and
// verifies the records; moved reports a floor that is not the one the walk started from.
func (s *Store) tailRecords(ctx context.Context, tenant contract.TenantID, walks []*tailWalk) ([]Tail, bool, error) {
	var keys []string
	var buf []byte
	for _, w := range walks {
		for _, seq := range w.seqs {
			buf = appendNumKey(buf[:0], w.keys.hrec, seq)
			keys = append(keys, string(buf))
		}
	}
	nrec := len(keys)
	for _, w := range walks {
		keys = append(keys, w.keys.floor())
	}
	out := make([]Tail, len(walks))
	if len(keys) == 0 {
		return out, false, nil
	}
	vals, err := s.rdb.MGet(ctx, keys...).Result()
	if err != nil {
		return nil, false, fmt.Errorf("msgstore: tail: read records: %w", err)
	}
	for i, w := range walks {
		if f, err := floorValue(vals[nrec+i], tenant, w.q.Conversation); err != nil || f != w.floor {
			return nil, err == nil, err
		}
	}
	var rec internalv1.MessageRecord
	k := 0
	for i, w := range walks {
		cid := w.q.Conversation.Bytes()
		out[i].Records = make([][]byte, len(w.seqs))
		for j, seq := range w.seqs {
			sv, ok := vals[k].(string)
			k++
			corrupt := func(reason string) error {
				return &CorruptError{Tenant: tenant, Conversation: w.q.Conversation, Seq: seq, Reason: reason}
			}
			if !ok {
				return nil, false, corrupt("indexed history record is missing")
			}
			b := []byte(sv)
			if err := proto.Unmarshal(b, &rec); err != nil {
				return nil, false, corrupt("history record does not decode as MessageRecord")
			}
			if rec.GetConversationSeq() != seq || !bytes.Equal(rec.GetConversationId(), cid[:]) {
				return nil, false, corrupt("history record's conversation or seq disagrees with its index")
			}
			out[i].Records[j] = b
		}
	}
	return out, false, nil
}
