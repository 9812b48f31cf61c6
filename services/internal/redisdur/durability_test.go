package redisdur

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
)

func TestVersionAtLeast(t *testing.T) {
	for v, want := range map[string]bool{
		"7.0.15": true, "7.2.4": true, "8.0.0": true, "10.1": true,
		"6.2.14": false, "6.9": false, "": false, "7": false, "x.y.z": false,
	} {
		if got := versionAtLeast(v, 7, 0); got != want {
			t.Errorf("versionAtLeast(%q) = %v, want %v", v, got, want)
		}
	}
}

func TestIsLoopback(t *testing.T) {
	tests := []struct {
		opt  redis.Options
		want bool
	}{
		{redis.Options{Addr: "127.0.0.1:6379"}, true},
		{redis.Options{Addr: "127.9.9.9:6379"}, true},
		{redis.Options{Addr: "[::1]:6379"}, true},
		{redis.Options{Addr: "localhost:6379"}, true},
		{redis.Options{Network: "unix", Addr: "/run/redis.sock"}, true},
		{redis.Options{Addr: "10.0.0.5:6379"}, false},
		{redis.Options{Addr: "redis.internal:6379"}, false},
		{redis.Options{Addr: "0.0.0.0:6379"}, false},
		{redis.Options{Addr: "127.0.0.1"}, false},
	}
	for _, tc := range tests {
		if got := isLoopback(&tc.opt); got != tc.want {
			t.Errorf("isLoopback(%s %s) = %v, want %v", tc.opt.Network, tc.opt.Addr, got, tc.want)
		}
	}
}

func TestProfiles(t *testing.T) {
	good := func() (map[string]string, map[string]string) {
		return map[string]string{"redis_version": "7.0.15", "cluster_enabled": "0"},
			map[string]string{"appendonly": "yes", "appendfsync": "always", "no-appendfsync-on-rewrite": "no",
				"maxmemory-policy": "noeviction"}
	}
	cases := []struct {
		name    string
		p       Profile
		relaxed bool
		setting string // "" = passes
		mutate  func(info, conf map[string]string)
	}{
		{"commit facts ok", CommitFacts, false, "", func(map[string]string, map[string]string) {}},
		{"commit facts refuse everysec", CommitFacts, false, "appendfsync", func(_, c map[string]string) { c["appendfsync"] = "everysec" }},
		{"commit facts relaxed everysec", CommitFacts, true, "", func(_, c map[string]string) { c["appendfsync"] = "everysec" }},
		{"relaxed never accepts fsync no", CommitFacts, true, "appendfsync", func(_, c map[string]string) { c["appendfsync"] = "no" }},
		{"rewrite window", CommitFacts, false, "no-appendfsync-on-rewrite", func(_, c map[string]string) { c["no-appendfsync-on-rewrite"] = "yes" }},
		{"mailboxes everysec ok", Mailboxes, false, "", func(_, c map[string]string) { c["appendfsync"] = "everysec" }},
		{"old redis", Mailboxes, false, "redis_version", func(i, _ map[string]string) { i["redis_version"] = "6.2.14" }},
		{"cluster", Mailboxes, false, "cluster-enabled", func(i, _ map[string]string) { i["cluster_enabled"] = "1" }},
		{"no aof", Mailboxes, false, "appendonly", func(_, c map[string]string) { c["appendonly"] = "no" }},
		{"fsync no", Mailboxes, false, "appendfsync", func(_, c map[string]string) { c["appendfsync"] = "no" }},
		{"eviction", Mailboxes, false, "maxmemory-policy", func(_, c map[string]string) { c["maxmemory-policy"] = "allkeys-lru" }},
		{"unreadable", Mailboxes, false, "maxmemory-policy", func(_, c map[string]string) { delete(c, "maxmemory-policy") }},
	}
	for _, tc := range cases {
		info, conf := good()
		tc.mutate(info, conf)
		err := tc.p.check(info, conf, tc.relaxed)
		var de *Error
		switch {
		case tc.setting == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.setting != "" && (!errors.As(err, &de) || de.Setting != tc.setting):
			t.Errorf("%s: want an Error on %s, got %v", tc.name, tc.setting, err)
		}
	}
}

// reply is an error reply as go-redis returns it (redis.Error).
type reply string

func (r reply) Error() string { return string(r) }
func (reply) RedisError()     {}

// TestRefused: a verdict on the instance or an error reply is a refusal; a Redis that cannot
// serve yet (loading its AOF, busy) or does not answer is not, so start-up waits for it.
func TestRefused(t *testing.T) {
	cases := []struct {
		name    string
		err     error
		refused bool
	}{
		{"unfit setting", CommitFacts.fail("appendfsync", "everysec", "always"), true},
		{"wrapped unfit setting", fmt.Errorf("writer: refusing to start: %w", Mailboxes.fail("appendonly", "no", "yes")), true},
		{"wrong password", reply("WRONGPASS invalid username-password pair or user is disabled."), true},
		{"renamed command", reply("ERR unknown command 'CONFIG'"), true},
		{"loading", reply("LOADING Redis is loading the dataset in memory"), false},
		{"busy script", reply("BUSY Redis is busy running a script."), false},
		{"refused connection", fmt.Errorf("%w: dial tcp 127.0.0.1:1: connect: connection refused", ErrUnreachable), false},
	}
	for _, tc := range cases {
		if got := Refused(tc.err); got != tc.refused {
			t.Errorf("%s: Refused(%v) = %v, want %v", tc.name, tc.err, got, tc.refused)
		}
	}
}

// TestCheckUnreachableIsNotAVerdict: a Redis nobody answers for is ErrUnreachable, naming its
// address, never an *Error about its settings.
func TestCheckUnreachableIsNotAVerdict(t *testing.T) {
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1}) // nothing listens on port 1
	defer rdb.Close()
	err := Check(context.Background(), rdb, CommitFacts, false)
	var e *Error
	if !errors.Is(err, ErrUnreachable) || errors.As(err, &e) || Refused(err) || !strings.Contains(err.Error(), "127.0.0.1:1") {
		t.Fatalf("Check = %v, want ErrUnreachable naming the address", err)
	}
}

// TestCheckNamesTLSWhenClosedAtOnce: a server that closes a plaintext connection without a
// word, as a TLS-only Redis does, is still ErrUnreachable, and the error names QIM_REDIS_TLS_CA.
func TestCheckNamesTLSWhenClosedAtOnce(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_ = c.Close()
		}
	}()
	rdb := redis.NewClient(&redis.Options{Addr: ln.Addr().String(), MaxRetries: -1})
	defer rdb.Close()
	err = Check(context.Background(), rdb, CommitFacts, false)
	if !errors.Is(err, ErrUnreachable) || Refused(err) || !strings.Contains(err.Error(), "QIM_REDIS_TLS_CA") {
		t.Fatalf("Check = %v, want ErrUnreachable naming QIM_REDIS_TLS_CA", err)
	}
}
