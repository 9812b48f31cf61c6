package mailboxstore

import (
	"errors"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/qim-dev/qim/gates/itest"
)

func TestCheckSettings(t *testing.T) {
	good := func() (map[string]string, map[string]string) {
		return map[string]string{"redis_version": "7.0.15", "cluster_enabled": "0"},
			map[string]string{"appendonly": "yes", "appendfsync": "everysec", "maxmemory-policy": "noeviction"}
	}
	cases := []struct {
		name, setting string
		mutate        func(info, conf map[string]string)
	}{
		{"ok everysec", "", func(map[string]string, map[string]string) {}},
		{"ok always", "", func(_, c map[string]string) { c["appendfsync"] = "always" }},
		{"old redis", "redis_version", func(i, _ map[string]string) { i["redis_version"] = "6.2.14" }},
		{"cluster", "cluster-enabled", func(i, _ map[string]string) { i["cluster_enabled"] = "1" }},
		{"no aof", "appendonly", func(_, c map[string]string) { c["appendonly"] = "no" }},
		{"fsync no", "appendfsync", func(_, c map[string]string) { c["appendfsync"] = "no" }},
		{"eviction", "maxmemory-policy", func(_, c map[string]string) { c["maxmemory-policy"] = "allkeys-lru" }},
		{"unreadable", "maxmemory-policy", func(_, c map[string]string) { delete(c, "maxmemory-policy") }},
	}
	for _, tc := range cases {
		info, conf := good()
		tc.mutate(info, conf)
		err := checkSettings(info, conf)
		var de *DurabilityError
		switch {
		case tc.setting == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.setting != "" && (!errors.As(err, &de) || de.Setting != tc.setting):
			t.Errorf("%s: want a DurabilityError on %s, got %v", tc.name, tc.setting, err)
		}
	}
}

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
