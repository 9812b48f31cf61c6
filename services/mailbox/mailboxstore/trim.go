package mailboxstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/services/internal/luascript"
)

// TrimBefore removes a user's day buckets of days below beforeDay (days since the Unix epoch,
// UTC) and raises the user's trim mark to the highest mailbox_seq they held; a device cursor below
// the mark then gets CURSOR_EXPIRED. It returns the mark (0 when nothing was ever trimmed).
// Idempotent. Retention needs no call: buckets expire by themselves and pulls notice.
func (s *Store) TrimBefore(ctx context.Context, tenant contract.TenantID, user contract.UserID, beforeDay int64) (contract.MailboxSeq, error) {
	if beforeDay < 0 {
		return 0, fmt.Errorf("%w: cutoff day %d", ErrInvalid, beforeDay)
	}
	shard := s.shards.UserShard(tenant, user)
	uk := newUserKeys(shard, tenant, user)
	cmds, err := runCalls(ctx, s.rdb, []call{scripts.trim.Call(&trimArgs{IndexKey: uk.index, Prefix: uk.bucket,
		Cutoff: beforeDay, TTL: cursorTTL})})
	if err != nil {
		return 0, fmt.Errorf("mailboxstore: trim on shard %d: %w", shard, err)
	}
	r, err := scripts.trim.Decode(cmds[0])
	switch {
	case errors.Is(err, luascript.ErrReplyShape):
		return 0, fmt.Errorf("%w: trim on shard %d: %v", ErrCorrupt, shard, err)
	case err != nil && !errors.Is(err, redis.Nil):
		return 0, scriptError("trim", shard, -1, contract.DispatchID{}, err)
	}
	v := r.Mark
	if v == "" {
		return 0, nil
	}
	mark, err := parseSeq(v)
	if err != nil {
		return 0, fmt.Errorf("%w: trim mark on shard %d", ErrCorrupt, shard)
	}
	return mark, nil
}

// Day is the day bucket of a message created at createdAtMs (days since the Unix epoch, UTC).
func Day(createdAtMs int64) int64 { return createdAtMs / dayMillis }
