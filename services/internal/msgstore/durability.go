package msgstore

import (
	"context"

	"github.com/redis/go-redis/v9"

	"github.com/qim-dev/qim/services/internal/redisdur"
)

// DurabilityError says which setting of a Redis instance makes it unfit to hold commit facts,
// what it is and what it must be. The writer refuses to start on it.
type DurabilityError = redisdur.Error

// CheckCommitFactsDurability proves rdb can hold commit facts (redisdur.CommitFacts: Redis ≥ 7.0,
// standalone, appendonly yes, appendfsync always, no-appendfsync-on-rewrite no, noeviction); any
// other value, or an unreadable INFO/CONFIG, is a *DurabilityError naming the setting.
//
// allowRelaxedLoopback is for development only: it additionally accepts appendfsync everysec and
// appendonly no, and only when the client's address is loopback (or a unix socket).
func CheckCommitFactsDurability(ctx context.Context, rdb *redis.Client, allowRelaxedLoopback bool) error {
	return redisdur.Check(ctx, rdb, redisdur.CommitFacts, allowRelaxedLoopback)
}
