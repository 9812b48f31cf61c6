package msgstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/qim-dev/qim/contract"
)

// tailFloors reads every walk's hot floor in one pipeline.
func (s *Store) tailFloors(ctx context.Context, walks []*tailWalk) error {
	if len(walks) == 0 {
		return nil
	}
	cmds := make([]*redis.StringCmd, len(walks))
	amended := make([]*redis.IntCmd, len(walks))
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, w := range walks {
			cmds[i] = p.Get(ctx, w.keys.floor())
			amended[i] = p.Exists(ctx, w.keys.amend())
		}
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return fmt.Errorf("msgstore: tail: read hot floors: %w", err)
	}
	for i, w := range walks {
		if w.floor, err = parseFloor(cmds[i], w.tenant, w.q.Conversation); err != nil {
			return err
		}
		w.amended = amended[i].Val() > 0
	}
	return nil
}

// amendTails folds the amendment index into the tails of the walks that found one.
func (s *Store) amendTails(ctx context.Context, tenant contract.TenantID, walks []*tailWalk, out []Tail) error {
	var jobs []amendJob
	for i, w := range walks {
		if w.amended {
			jobs = append(jobs, amendJob{conv: w.q.Conversation, recs: out[i].Records})
		}
	}
	if len(jobs) == 0 {
		return nil
	}
	return s.foldAmendments(ctx, tenant, jobs)
}

// coldTail completes one tail below its hot floor from the archive: every record of the span
// (After, min(Latest, F)] (the span is at most MaxTailSpan wide, so one read covers it or the
// read fails), then head candidates below until Min records are held (bounded by the archive's
// empty-bucket scan, like the Redis walk). hot holds the Redis records, all above F, newest first.
func (s *Store) coldTail(ctx context.Context, w *tailWalk, hot [][]byte) ([][]byte, error) {
	top := min(w.q.Latest, w.floor)
	if top == 0 {
		return hot, nil
	}
	recs := hot
	if w.q.After < top {
		span, scanned, err := s.descending(ctx, w.tenant, w.q.Conversation, w.q.After, top, MaxTailSpan+MaxTailMin)
		if err != nil {
			return nil, err
		}
		if scanned != w.q.After {
			return nil, fmt.Errorf("msgstore: tail: archive read of (%d, %d] stopped at %d: %w", w.q.After, top, scanned, ErrArchiveShort)
		}
		for _, a := range span {
			recs = append(recs, a.Raw)
		}
		top = w.q.After
	}
	if need := w.q.Min - len(recs); need > 0 && top > 0 {
		head, _, err := s.descending(ctx, w.tenant, w.q.Conversation, 0, top, need)
		if err != nil {
			return nil, err
		}
		for _, a := range head {
			recs = append(recs, a.Raw)
		}
	}
	return recs, nil
}

// ErrArchiveShort: an archive read that must cover a whole span stopped before its end.
var ErrArchiveShort = errors.New("msgstore: the archive read did not cover the span")
