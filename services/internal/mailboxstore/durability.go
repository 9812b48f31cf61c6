package mailboxstore

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
)

// DurabilityError names the setting that makes a Redis instance unfit to hold mailboxes.
type DurabilityError struct {
	Setting string
	Got     string
	Want    string
}

func (e *DurabilityError) Error() string {
	return fmt.Sprintf("mailboxstore: mailbox redis has %s = %q, want %s (mailboxes need a standalone, "+
		"non-evicting Redis >= 7.0 with AOF and appendfsync everysec or always)", e.Setting, e.Got, e.Want)
}

// CheckDurability proves rdb can hold mailboxes: redis_version ≥ 7.0 (EXPIRETIME, EXPIREAT
// options and script effects replication), cluster disabled (scripts touch keys built inside the
// script), appendonly yes, appendfsync everysec or always, maxmemory-policy noeviction. Anything
// else — including a CONFIG GET or INFO that fails — is a *DurabilityError naming the setting.
//
// Why everysec is enough here and not for commit facts: a host crash may lose the last second of
// mailbox writes, but the watermark written in the same script rolls back with them, so the
// restarted MailboxNode replays those dispatch records from the log and rebuilds the same
// entries at the same mailbox_seq. Eviction, in contrast, could drop an entry or an identity and
// leave the watermark past it: nothing would replay that.
func CheckDurability(ctx context.Context, rdb *redis.Client) error {
	info, err := rdb.Info(ctx, "server", "cluster").Result()
	if err != nil {
		return &DurabilityError{Setting: "INFO", Got: "unreadable: " + err.Error(), Want: "readable"}
	}
	conf := map[string]string{}
	for _, name := range []string{"appendonly", "appendfsync", "maxmemory-policy"} {
		got, err := rdb.ConfigGet(ctx, name).Result()
		if err != nil {
			return &DurabilityError{Setting: name, Got: "unreadable: " + err.Error(), Want: "readable by CONFIG GET"}
		}
		if v, ok := got[name]; ok {
			conf[name] = v
		}
	}
	return checkSettings(parseInfo(info), conf)
}

// checkSettings is the decision of CheckDurability over INFO fields and CONFIG GET values.
func checkSettings(info, conf map[string]string) error {
	if v := info["redis_version"]; !versionAtLeast(v, 7, 0) {
		return &DurabilityError{Setting: "redis_version", Got: v, Want: ">= 7.0"}
	}
	if v := info["cluster_enabled"]; v != "0" {
		return &DurabilityError{Setting: "cluster-enabled", Got: v, Want: `"no" (cluster_enabled:0)`}
	}
	want := []struct {
		name string
		ok   []string
	}{
		{"appendonly", []string{"yes"}},
		{"appendfsync", []string{"everysec", "always"}},
		{"maxmemory-policy", []string{"noeviction"}},
	}
	for _, w := range want {
		v, present := conf[w.name]
		if !present {
			v = "(absent)"
		}
		good := false
		for _, ok := range w.ok {
			good = good || v == ok
		}
		if !good {
			return &DurabilityError{Setting: w.name, Got: v, Want: `"` + strings.Join(w.ok, `" or "`) + `"`}
		}
	}
	return nil
}

func parseInfo(info string) map[string]string {
	kv := map[string]string{}
	for _, line := range strings.Split(info, "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), ":"); ok {
			kv[k] = v
		}
	}
	return kv
}

// versionAtLeast compares the major.minor of a redis_version string; unparsable is false.
func versionAtLeast(v string, major, minor int) bool {
	parts := strings.SplitN(v, ".", 3)
	if len(parts) < 2 {
		return false
	}
	ma, err1 := strconv.Atoi(parts[0])
	mi, err2 := strconv.Atoi(parts[1])
	if err1 != nil || err2 != nil {
		return false
	}
	return ma > major || (ma == major && mi >= minor)
}
