package mailboxstore

import (
	"context"

	"github.com/redis/go-redis/v9"

	"github.com/qim-dev/qim/services/internal/redisdur"
)

// DurabilityError names the setting that makes a Redis instance unfit to hold mailboxes.
type DurabilityError = redisdur.Error

// CheckDurability proves rdb can hold mailboxes (redisdur.Mailboxes: Redis ≥ 7.0, standalone,
// AOF with appendfsync everysec or always, noeviction); see redisdur.Mailboxes for why everysec is
// enough here and not for commit facts. Anything else is a *DurabilityError naming the setting.
func CheckDurability(ctx context.Context, rdb *redis.Client) error {
	return redisdur.Check(ctx, rdb, redisdur.Mailboxes, false)
}
