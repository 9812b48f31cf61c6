package mailboxstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/qim-dev/qim/contract"
)

// Time arithmetic of the layout. A day is a UTC calendar day of the message's created_at_ms; the
// expiries below derive from it, never from the local clock, so a replay writes the same keys
// with the same expiries.
var (
	dayMillis        = (24 * time.Hour).Milliseconds()
	daySeconds       = int64((24 * time.Hour) / time.Second)
	retentionSeconds = int64(contract.MailboxRetention / time.Second)
	// identityTTL keeps a dispatch identity a day longer than the retention, so a duplicate that
	// arrives while its entries still exist always converges onto them.
	identityTTL = retentionSeconds + daySeconds
	// cursorTTL keeps a device cursor (and an index that only holds a trim mark) for two
	// retentions after the device's last pull; a device silent for longer gets CURSOR_EXPIRED.
	cursorTTL = 2 * retentionSeconds
)

// Store is the Redis MailboxStore of one mailbox instance. Safe for concurrent use.
type Store struct {
	rdb    *redis.Client
	shards contract.ShardCount
}

// New returns a Store over rdb for a deployment of shards mailbox shards (the validated count
// writer, fanout and mailbox share: it decides which shard a user's keys belong to).
func New(rdb *redis.Client, shards contract.ShardCount) *Store {
	return &Store{rdb: rdb, shards: shards}
}

// Shards is the shard count the store routes users with.
func (s *Store) Shards() contract.ShardCount { return s.shards }

// ShardState is what a MailboxNode needs to start a shard: its epoch and its watermark.
type ShardState struct {
	Shard uint32
	Epoch uint16
	// Watermark is the last materialized log offset, -1 when the shard has materialized nothing.
	Watermark int64
}

// OpenShards initialises the epoch of every given shard to 1 where none exists (SETNX) and reads
// each shard's epoch and watermark, in one pipeline. A stored value that is not a valid epoch or
// offset is ErrCorrupt: starting from a guessed position could skip or repeat records.
func (s *Store) OpenShards(ctx context.Context, shards []uint32) ([]ShardState, error) {
	epochs := make([]*redis.StringCmd, len(shards))
	wms := make([]*redis.StringCmd, len(shards))
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, sh := range shards {
			p.SetNX(ctx, epochKey(sh), 1, 0)
			epochs[i] = p.Get(ctx, epochKey(sh))
			wms[i] = p.Get(ctx, watermarkKey(sh))
		}
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("mailboxstore: open shards: %w", err)
	}
	out := make([]ShardState, len(shards))
	for i, sh := range shards {
		st, err := shardState(sh, epochs[i], wms[i])
		if err != nil {
			return nil, err
		}
		out[i] = st
	}
	return out, nil
}

func shardState(sh uint32, ecmd, wcmd *redis.StringCmd) (ShardState, error) {
	if err := ecmd.Err(); err != nil {
		return ShardState{}, fmt.Errorf("mailboxstore: shard %d epoch: %w", sh, err)
	}
	e, err := strconv.ParseUint(ecmd.Val(), 10, 16)
	if err != nil || e == 0 || e > contract.MaxShardEpoch {
		return ShardState{}, fmt.Errorf("%w: shard %d epoch %q", ErrCorrupt, sh, ecmd.Val())
	}
	st := ShardState{Shard: sh, Epoch: uint16(e), Watermark: -1}
	switch err := wcmd.Err(); {
	case errors.Is(err, redis.Nil):
		return st, nil
	case err != nil:
		return ShardState{}, fmt.Errorf("mailboxstore: shard %d watermark: %w", sh, err)
	}
	w, err := strconv.ParseInt(wcmd.Val(), 10, 64)
	if err != nil || w < 0 || w > contract.MaxLogOffset {
		return ShardState{}, fmt.Errorf("%w: shard %d watermark %q", ErrCorrupt, sh, wcmd.Val())
	}
	st.Watermark = w
	return st, nil
}

// ReadShard reads one shard's epoch and watermark without initialising anything; a shard that was
// never opened reads as Epoch 0 and Watermark -1.
func (s *Store) ReadShard(ctx context.Context, shard uint32) (ShardState, error) {
	vals, err := s.rdb.MGet(ctx, epochKey(shard), watermarkKey(shard)).Result()
	if err != nil {
		return ShardState{}, fmt.Errorf("mailboxstore: read shard %d: %w", shard, err)
	}
	st := ShardState{Shard: shard, Watermark: -1}
	if v, ok := vals[0].(string); ok {
		e, err := strconv.ParseUint(v, 10, 16)
		if err != nil || e == 0 || e > contract.MaxShardEpoch {
			return ShardState{}, fmt.Errorf("%w: shard %d epoch %q", ErrCorrupt, shard, v)
		}
		st.Epoch = uint16(e)
	}
	if v, ok := vals[1].(string); ok {
		w, err := strconv.ParseInt(v, 10, 64)
		if err != nil || w < 0 || w > contract.MaxLogOffset {
			return ShardState{}, fmt.Errorf("%w: shard %d watermark %q", ErrCorrupt, shard, v)
		}
		st.Watermark = w
	}
	return st, nil
}

// DeviceCursor returns the cursor last recorded for a device by PULL_MAILBOX (false if none).
func (s *Store) DeviceCursor(ctx context.Context, tenant contract.TenantID, user contract.UserID, device string) (contract.MailboxSeq, bool, error) {
	shard := s.shards.UserShard(tenant, user)
	v, err := s.rdb.Get(ctx, cursorKey(shard, tenant, user, device)).Result()
	if errors.Is(err, redis.Nil) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("mailboxstore: device cursor on shard %d: %w", shard, err)
	}
	c, err := parseSeq(v)
	if err != nil {
		return 0, false, fmt.Errorf("%w: device cursor on shard %d", ErrCorrupt, shard)
	}
	return c, true, nil
}
