package msgstore

import (
	"errors"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/qim-dev/qim/gates/itest"
)

func TestCheckCommitFactsDurability(t *testing.T) {
	ep := itest.Endpoints(t)
	ctx := testCtx(t)
	client := func(addr string) *redis.Client {
		rdb := redis.NewClient(&redis.Options{Addr: addr})
		t.Cleanup(func() { _ = rdb.Close() })
		return rdb
	}
	core, mailbox := client(ep.RedisCore), client(ep.RedisMailbox)
	if err := CheckCommitFactsDurability(ctx, core, false); err != nil {
		t.Fatalf("core (appendfsync always): %v", err)
	}
	err := CheckCommitFactsDurability(ctx, mailbox, false)
	var de *DurabilityError
	if !errors.As(err, &de) || de.Setting != "appendfsync" || de.Got != "everysec" || de.Want != "always" {
		t.Fatalf("mailbox (everysec): %v, want DurabilityError on appendfsync", err)
	}
	if !strings.Contains(err.Error(), "appendfsync") || !strings.Contains(err.Error(), "always") {
		t.Errorf("message does not name the setting and the fix: %q", err)
	}
	if err := CheckCommitFactsDurability(ctx, mailbox, true); err != nil {
		t.Errorf("relaxed override on loopback mailbox: %v", err)
	}
}

// A non-loopback address never gets the relaxed override. The server is reached through a
// dialer, so the check sees only the configured (non-loopback) address, as in production.
func TestRelaxedRefusedOffLoopback(t *testing.T) {
	ep := itest.Endpoints(t)
	opt := &redis.Options{Addr: "10.255.255.1:6379", Dialer: dialTo(ep.RedisMailbox)}
	rdb := redis.NewClient(opt)
	defer rdb.Close()
	err := CheckCommitFactsDurability(testCtx(t), rdb, true)
	var de *DurabilityError
	if !errors.As(err, &de) || de.Setting != "appendfsync" {
		t.Fatalf("relaxed off loopback: %v, want refusal on appendfsync", err)
	}
}

// A CONFIG GET that fails (renamed command, ACL) fails closed.
func TestDurabilityFailsClosedWithoutConfig(t *testing.T) {
	ep := itest.Endpoints(t)
	ctx := testCtx(t)
	admin := coreClient(t)
	const user, pass = "msgstore-noconfig", "test-only-password"
	if err := admin.Do(ctx, "ACL", "SETUSER", user, "on", ">"+pass, "~*", "+@all", "-config").Err(); err != nil {
		t.Fatal(err)
	}
	defer admin.Do(ctx, "ACL", "DELUSER", user)
	rdb := redis.NewClient(&redis.Options{Addr: ep.RedisCore, Username: user, Password: pass})
	defer rdb.Close()
	err := CheckCommitFactsDurability(ctx, rdb, true)
	var de *DurabilityError
	if !errors.As(err, &de) || !strings.HasPrefix(de.Got, "unreadable") {
		t.Fatalf("without CONFIG permission: %v, want a fail-closed DurabilityError", err)
	}
}
