package keyspace

import (
	"context"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// trimItem is one key of a trimmed family with the trim registrations its positions need.
type trimItem struct {
	f       *Family
	key     string
	members []string // a TrimMembers key's members, one per registration
	cands   []registration
}

// registration is one (sorted set, member) a trimmed position needs.
type registration struct{ set, member string }

// checkTrimmed counts the positions of trimmed families and, with one ZSCORE each in one
// pipeline, those not registered for the trim: a position without its registration is never
// trimmed, which is what a key without a TTL is to an expiring family. A live trim removes a
// position and its registration in one script, so a registration found missing is read again
// and then the position itself (confirm): only a position that still exists after its
// registration was seen missing is untracked; one trimmed in between is not.
func (s *scan) checkTrimmed(ctx context.Context, items []trimItem) error {
	if len(items) == 0 {
		return nil
	}
	missing, err := s.unregistered(ctx, items, nil)
	if err != nil {
		return err
	}
	confirmed, err := s.confirm(ctx, items, missing)
	if err != nil {
		return err
	}
	for i, it := range items {
		it.f.Positions += int64(len(it.cands))
		if n := confirmed[i]; n > 0 || len(it.cands) == 0 {
			it.f.Untracked += max(int64(n), 1)
			it.f.Breaking = keep(it.f.Breaking, it.key)
		}
	}
	return nil
}

// unregistered returns, per item, the indexes of its registrations that are missing (of only
// those in only, when set).
func (s *scan) unregistered(ctx context.Context, items []trimItem, only [][]int) ([][]int, error) {
	scores := make([][]*redis.FloatCmd, len(items))
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, it := range items {
			for _, j := range indexes(it, only, i) {
				scores[i] = append(scores[i], p.ZScore(ctx, it.cands[j].set, it.cands[j].member))
			}
		}
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("keyspace: ZSCORE trim registrations %s: %w", s.inv.Instance, err)
	}
	out := make([][]int, len(items))
	for i, it := range items {
		for k, j := range indexes(it, only, i) {
			switch err := scores[i][k].Err(); {
			case errors.Is(err, redis.Nil):
				out[i] = append(out[i], j)
			case err != nil:
				return nil, fmt.Errorf("keyspace: ZSCORE trim registration of %s: %w", it.key, err)
			}
		}
	}
	return out, nil
}

// confirm reads each missing registration again and then whether its position still exists, in
// that order in one pipeline, and returns per item how many are still missing with the position
// there.
func (s *scan) confirm(ctx context.Context, items []trimItem, missing [][]int) ([]int, error) {
	again, err := s.unregistered(ctx, items, missing)
	if err != nil {
		return nil, err
	}
	exists := make([][]*redis.IntCmd, len(items))
	_, err = s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, it := range items {
			for _, j := range again[i] {
				if it.f.TrimMembers {
					exists[i] = append(exists[i], p.ZRank(ctx, it.key, it.members[j]))
				} else {
					exists[i] = append(exists[i], p.Exists(ctx, it.key))
				}
			}
		}
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("keyspace: confirm untracked positions %s: %w", s.inv.Instance, err)
	}
	out := make([]int, len(items))
	for i, it := range items {
		for _, c := range exists[i] {
			if c.Err() == nil && (it.f.TrimMembers || c.Val() > 0) {
				out[i]++
			}
		}
	}
	return out, nil
}

func indexes(it trimItem, only [][]int, i int) []int {
	if only != nil {
		return only[i]
	}
	all := make([]int, len(it.cands))
	for j := range all {
		all[j] = j
	}
	return all
}
