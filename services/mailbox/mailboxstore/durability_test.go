package mailboxstore

import (
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/qim-dev/qim/gates/itest"
)

// Both stack instances are fit: the mailbox one runs everysec, the core one always.
func TestCheckDurabilityOnStack(t *testing.T) {
	ep := itest.Endpoints(t)
	for _, addr := range []string{ep.RedisMailbox, ep.RedisCore} {
		rdb := redis.NewClient(&redis.Options{Addr: addr})
		if err := CheckDurability(t.Context(), rdb); err != nil {
			t.Errorf("%s: %v", addr, err)
		}
		_ = rdb.Close()
	}
}
