package msgstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/redis/go-redis/v9"

	"github.com/qim-dev/qim/contract"
)

// ArchiveWatermarkKey is the sorted set of archive watermarks in the core Redis: member = the
// HistoryArchiver's consumer group, score = T in Unix ms (only raised, ZADD GT). The archiver
// writes it; the writer's trim reads it. Its key family is registered by the archiver.
const ArchiveWatermarkKey = "qim:archive:watermark"

// TrimResult is what one TrimHot pass did.
type TrimResult struct {
	Trimmed int  // hot records removed (their candidates, index members and records)
	Held    int  // candidates kept because a lower seq of their conversation is still hot (trim.lua)
	More    bool // some bucket stopped at its per-call limit: candidates at or below the cutoff remain
}

// TrimHot removes, in every commit bucket, the hot records committed at or before cutoffMs, at
// most perCall per bucket, raising each conversation's hot floor F in the same script (trim.lua).
// It is one pipeline of contract.CommitBucketCount script calls: one round trip trims up to
// CommitBucketCount × perCall records, far above any write rate, so the trim never falls behind
// the way a fixed trickle would.
//
// The cutoff is the caller's decision: every record committed at or before it must already be in
// the archive, and no commit reserved before it may still be unfinished, because reads of seq ≤ F
// go to the archive only (see the writer's trimmer and ADR-0022). The script adds the rest: F
// never rises over a lower seq still in the hot index (a later-committed one, maybe unarchived).
func (s *Store) TrimHot(ctx context.Context, cutoffMs int64, perCall int) (TrimResult, error) {
	return s.trimTags(ctx, cutoffMs, perCall, keyTags[:])
}

// trimTags is TrimHot over the commit buckets of tags.
func (s *Store) trimTags(ctx context.Context, cutoffMs int64, perCall int, tags []string) (TrimResult, error) {
	if cutoffMs < 0 || perCall < 1 {
		return TrimResult{}, fmt.Errorf("msgstore: trim: %w: cutoff %d, per call %d", ErrInvalidArgument, cutoffMs, perCall)
	}
	calls := make([]call, len(tags))
	for i, tag := range tags {
		calls[i] = s.scripts.trim.Call(&trimArgs{Htrim: htrimPrefix + tag, CutoffMs: cutoffMs, Limit: int64(perCall),
			HrecPrefix: hrecPrefix + tag + ":", HidxPrefix: hidxPrefix + tag + ":", HfloorPrefix: hfloorPrefix + tag + ":",
			BucketWidth: int64(bucketWidth)})
	}
	cmds, err := runCalls(ctx, s.rdb, calls)
	if err != nil {
		return TrimResult{}, fmt.Errorf("msgstore: trim: %w", err)
	}
	var res TrimResult
	var errs []error
	for i, c := range cmds {
		r, err := s.scripts.trim.Decode(c)
		if err != nil {
			errs = append(errs, fmt.Errorf("msgstore: trim bucket %s: %w", tags[i], err))
			continue
		}
		res.Trimmed += int(r.Trimmed)
		res.Held += int(r.Held)
		res.More = res.More || r.More == "1"
	}
	return res, errors.Join(errs...)
}

// OldestPendingReserveMs is the reservation time of the oldest unfinished commit (ok=false when
// none is pending). A pending commit holds a seq that may still reach COMMITTED (and then the
// archive) later than messages with higher seqs: the trim must not raise a floor above it first.
func (s *Store) OldestPendingReserveMs(ctx context.Context) (ms int64, ok bool, err error) {
	z, err := s.rdb.ZRangeWithScores(ctx, pendingKey, 0, 0).Result()
	if err != nil {
		return 0, false, fmt.Errorf("msgstore: oldest pending commit: %w", err)
	}
	if len(z) == 0 {
		return 0, false, nil
	}
	return int64(z[0].Score), true, nil
}

// ArchiveWatermarkMs is the archive watermark T of one archiver group (ok=false when the group
// has published none).
func (s *Store) ArchiveWatermarkMs(ctx context.Context, group string) (ms int64, ok bool, err error) {
	v, err := s.rdb.ZScore(ctx, ArchiveWatermarkKey, group).Result()
	if errors.Is(err, redis.Nil) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("msgstore: archive watermark of %s: %w", group, err)
	}
	return int64(v), true, nil
}

// HotFloor is the conversation's hot floor F: seqs ≤ F are read from the archive, seqs above it
// from Redis. 0 means nothing was ever trimmed, and then the hot tier is the whole history.
func (s *Store) HotFloor(ctx context.Context, tenant contract.TenantID, conv contract.ConversationID) (uint64, error) {
	return parseFloor(s.rdb.Get(ctx, newConvKeys(tenant, conv).floor()), tenant, conv)
}

func parseFloor(c *redis.StringCmd, tenant contract.TenantID, conv contract.ConversationID) (uint64, error) {
	v, err := c.Result()
	if errors.Is(err, redis.Nil) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("msgstore: hot floor: %w", err)
	}
	return floorValue(v, tenant, conv)
}

// floorValue reads a hot floor from an MGET reply (nil: never trimmed).
func floorValue(v any, tenant contract.TenantID, conv contract.ConversationID) (uint64, error) {
	if v == nil {
		return 0, nil
	}
	sv, ok := v.(string)
	f, err := strconv.ParseUint(sv, 10, 64)
	if !ok || err != nil {
		return 0, &CorruptError{Tenant: tenant, Conversation: conv, Reason: "hot floor is not a decimal integer"}
	}
	return f, nil
}
