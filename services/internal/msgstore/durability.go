package msgstore

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
)

// DurabilityError says which setting of a Redis instance makes it unfit to hold commit facts,
// what it is and what it must be. The writer refuses to start on it.
type DurabilityError struct {
	Setting string
	Got     string
	Want    string
}

func (e *DurabilityError) Error() string {
	return fmt.Sprintf("msgstore: redis holding commit facts has %s = %q, want %q (fix: set %s %s in redis.conf or CONFIG SET and CONFIG REWRITE; "+
		"commit facts need AOF with appendfsync always on a standalone, non-evicting Redis >= 7.0)",
		e.Setting, e.Got, e.Want, e.Setting, e.Want)
}

// durableSettings are the CONFIG GET values commit facts require, in check order. A host crash
// with appendfsync everysec loses up to a second of writes, which would let the conversation_seq
// counter go back and reuse seqs that were already acknowledged and archived; no-appendfsync-on-
// rewrite=yes reopens that window during every AOF rewrite; eviction would drop commit facts.
var durableSettings = []struct{ name, want, relaxed string }{
	{"appendonly", "yes", "no"},
	{"appendfsync", "always", "everysec"},
	{"no-appendfsync-on-rewrite", "no", ""},
	{"maxmemory-policy", "noeviction", ""},
}

// CheckCommitFactsDurability proves rdb can hold commit facts: redis_version ≥ 7.0, cluster
// disabled, appendonly yes, appendfsync always, no-appendfsync-on-rewrite no, maxmemory-policy
// noeviction. Any other value returns a *DurabilityError naming the setting; a CONFIG GET or INFO
// that fails (renamed command, missing permission) fails closed the same way.
//
// allowRelaxedLoopback is for development only: it additionally accepts appendfsync everysec and
// appendonly no, and only when the client's address is loopback (or a unix socket); against any
// other address the relaxed values are still refused.
func CheckCommitFactsDurability(ctx context.Context, rdb *redis.Client, allowRelaxedLoopback bool) error {
	info, err := rdb.Info(ctx, "server", "cluster").Result()
	if err != nil {
		return &DurabilityError{Setting: "INFO", Got: "unreadable: " + err.Error(), Want: "readable"}
	}
	kv := parseInfo(info)
	if v := kv["redis_version"]; !versionAtLeast(v, 7, 0) {
		return &DurabilityError{Setting: "redis_version", Got: v, Want: ">= 7.0"}
	}
	if v := kv["cluster_enabled"]; v != "0" {
		return &DurabilityError{Setting: "cluster-enabled", Got: v, Want: "no (cluster_enabled:0)"}
	}
	relaxed := allowRelaxedLoopback && isLoopback(rdb.Options())
	for _, s := range durableSettings {
		got, err := rdb.ConfigGet(ctx, s.name).Result()
		if err != nil {
			return &DurabilityError{Setting: s.name, Got: "unreadable: " + err.Error(), Want: s.want}
		}
		v, ok := got[s.name]
		if ok && (v == s.want || (relaxed && s.relaxed != "" && v == s.relaxed)) {
			continue
		}
		if !ok {
			v = "(absent)"
		}
		return &DurabilityError{Setting: s.name, Got: v, Want: s.want}
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

// isLoopback reports a client that can only reach a server on this host.
func isLoopback(o *redis.Options) bool {
	if o.Network == "unix" {
		return true
	}
	host, _, err := net.SplitHostPort(o.Addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
