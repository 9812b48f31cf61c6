package msgstore

import (
	"bytes"
	"context"
	"fmt"
	"strconv"

	"github.com/redis/go-redis/v9"
	"google.golang.org/protobuf/proto"

	"github.com/qim-dev/qim/contract"
	internalv1 "github.com/qim-dev/qim/proto/qiminternal/v1"
)

// walk collects up to q.Limit seqs of a history page from the per-bucket indexes, starting at the
// anchor's bucket and moving in the query's direction, bucketsPerRoundTrip buckets per round trip.
//
// Invariants: never below bucket 0, never above the bucket of the latest seq; at most maxEmpty
// consecutive empty buckets are scanned (conversation_seq has legal holes, some wide), after which
// the walk stops with more=true and a boundary anchor past the scanned buckets, so a client keeps
// paging instead of one request scanning an unbounded gap. Reading limit+1 seqs decides HasMore
// without a second query.
//
// Rejected: one ZRANGE over a conversation-wide index (a single unbounded key per conversation
// cannot be trimmed per bucket and mirrors nothing in the CQL archive's bucket partitions).
type walk struct {
	q        HistoryQuery
	keys     convKeys
	latest   uint64
	floor    uint64 // the hot floor F: only seqs above it are read from Redis
	maxEmpty int

	seqs     []uint64 // walk order: descending for Older, ascending for Newer
	more     bool     // records may exist beyond the page
	stopped  bool     // the empty-bucket bound ended the walk
	boundary uint64   // NextAnchor after a bound stop
}

const bucketWidth = contract.MessageSeqBucketWidth

// start returns the first bucket and the inclusive seq bound inside it, or ok=false when the
// direction holds nothing at all.
func (w *walk) start() (bucket, bound uint64, ok bool) {
	a := w.q.Anchor
	if w.q.Direction == Older {
		hi := w.latest
		if a != 0 && a-1 < hi {
			hi = a - 1
		}
		return hi / bucketWidth, hi, hi > w.floor
	}
	if a >= w.latest {
		return 0, 0, false
	}
	return (a + 1) / bucketWidth, a + 1, true
}

func (w *walk) collect(ctx context.Context, rdb *redis.Client) error {
	b, bound, ok := w.start()
	if !ok {
		return nil
	}
	last := w.latest / bucketWidth // Newer's final bucket; Older's is 0
	empty, first := 0, true
	for {
		n := bucketsPerRoundTrip
		if w.q.Direction == Older {
			n = int(min(uint64(n), b-w.floor/bucketWidth+1))
		} else {
			n = int(min(uint64(n), last-b+1))
		}
		cmds, err := w.fetch(ctx, rdb, b, n, bound, first)
		if err != nil {
			return err
		}
		first = false
		for _, c := range cmds {
			done, err := w.absorb(b, c, &empty)
			if err != nil || done {
				return err
			}
			if w.q.Direction == Older {
				b--
			} else {
				b++
			}
		}
	}
}

// fetch reads n bucket indexes from b in one pipeline. The first bucket of the walk is bounded by
// the anchor; later buckets are read whole (up to the remaining need).
func (w *walk) fetch(ctx context.Context, rdb *redis.Client, b uint64, n int, bound uint64, first bool) ([]*redis.StringSliceCmd, error) {
	need := int64(w.q.Limit + 1 - len(w.seqs))
	cmds := make([]*redis.StringSliceCmd, n)
	var key []byte
	_, err := rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i := range n {
			bi := b + uint64(i)
			if w.q.Direction == Older {
				bi = b - uint64(i)
			}
			key = appendNumKey(key[:0], w.keys.hidx, bi)
			args := redis.ZRangeArgs{Key: string(key), ByScore: true, Count: need}
			if w.q.Direction == Older {
				args.Start, args.Stop, args.Rev = "+inf", "-inf", true
				if first && i == 0 {
					args.Start = strconv.FormatUint(bound, 10)
				}
			} else {
				args.Start, args.Stop = "-inf", "+inf"
				if first && i == 0 {
					args.Start = strconv.FormatUint(bound, 10)
				}
			}
			cmds[i] = p.ZRangeArgs(ctx, args)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("msgstore: history: read bucket index: %w", err)
	}
	return cmds, nil
}

// absorb adds one bucket's seqs and reports whether the walk is finished.
func (w *walk) absorb(b uint64, c *redis.StringSliceCmd, empty *int) (bool, error) {
	members := c.Val()
	if len(members) == 0 {
		*empty++
	} else {
		*empty = 0
	}
	for _, m := range members {
		seq, err := strconv.ParseUint(m, 10, 64)
		if err != nil || seq/bucketWidth != b || !w.inOrder(seq) {
			return true, &CorruptError{Tenant: w.q.Tenant, Conversation: w.q.Conversation, Seq: seq,
				Reason: "history index member outside its bucket or out of order"}
		}
		if seq <= w.floor {
			continue // committed late, not trimmed yet: the archive is its tier (Older reads it next)
		}
		w.seqs = append(w.seqs, seq)
		if len(w.seqs) > w.q.Limit {
			w.seqs, w.more = w.seqs[:w.q.Limit], true
			return true, nil
		}
	}
	switch {
	case w.q.Direction == Older && b == w.floor/bucketWidth, w.q.Direction == Newer && b == w.latest/bucketWidth:
		return true, nil // nothing beyond; more stays false
	case *empty >= w.maxEmpty:
		w.stopped, w.more = true, true
		if w.q.Direction == Older {
			w.boundary = b * bucketWidth // next page reads seq < b*width, i.e. from bucket b-1
		} else {
			w.boundary = (b+1)*bucketWidth - 1 // next page reads from bucket b+1
		}
		return true, nil
	}
	return false, nil
}

func (w *walk) inOrder(seq uint64) bool {
	if len(w.seqs) == 0 {
		return seq > 0
	}
	prev := w.seqs[len(w.seqs)-1]
	if w.q.Direction == Older {
		return seq < prev
	}
	return seq > prev
}

// loadRecords fetches the records of seqs and the hot floor with one MGET and verifies each record
// against the index. The floor comes back so the caller can tell whether a trim ran under the walk.
func (s *Store) loadRecords(ctx context.Context, q HistoryQuery, ck convKeys, seqs []uint64) ([][]byte, uint64, error) {
	keys := make([]string, len(seqs), len(seqs)+1)
	var buf []byte
	for i, seq := range seqs {
		buf = appendNumKey(buf[:0], ck.hrec, seq)
		keys[i] = string(buf)
	}
	vals, err := s.rdb.MGet(ctx, append(keys, ck.floor())...).Result()
	if err != nil {
		return nil, 0, fmt.Errorf("msgstore: history: read records: %w", err)
	}
	floor, err := floorValue(vals[len(seqs)], q.Tenant, q.Conversation)
	if err != nil {
		return nil, 0, err
	}
	cid := q.Conversation.Bytes()
	out := make([][]byte, len(seqs))
	var rec internalv1.MessageRecord
	for i, v := range vals[:len(seqs)] {
		corrupt := func(reason string) error {
			return &CorruptError{Tenant: q.Tenant, Conversation: q.Conversation, Seq: seqs[i], Reason: reason}
		}
		sv, ok := v.(string)
		if !ok {
			return nil, floor, corrupt("indexed history record is missing")
		}
		b := []byte(sv)
		if err := proto.Unmarshal(b, &rec); err != nil {
			return nil, floor, corrupt("history record does not decode as MessageRecord")
		}
		if rec.GetConversationSeq() != seqs[i] || !bytes.Equal(rec.GetConversationId(), cid[:]) {
			return nil, floor, corrupt("history record's conversation or seq disagrees with its index")
		}
		out[i] = b
	}
	return out, floor, nil
}
