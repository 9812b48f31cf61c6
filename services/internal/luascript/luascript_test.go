package luascript

import (
	"context"
	"embed"
	"os"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/qim-dev/qim/gates/itest"
)

//go:embed lua/incr.lua
var testFS embed.FS

func TestMain(m *testing.M) { os.Exit(itest.Main(m)) }

// incrArgs and incrReply bind lua/incr.lua.
type incrArgs struct {
	Counter string `key:"counter"`
	By      int64  `arg:"by"`
}

type incrReply struct {
	Count int64 `reply:"count"`
}

// replyErr is an error reply as go-redis reports it (implements redis.Error).
type replyErr string

func (e replyErr) Error() string { return string(e) }
func (replyErr) RedisError()     {}

func TestRefusedSelection(t *testing.T) {
	ok := redis.NewCmd(context.Background())
	no := redis.NewCmd(context.Background())
	no.SetErr(replyErr("NOSCRIPT No matching script"))
	cmds := []*redis.Cmd{ok, no, ok, no}
	if got := refused(cmds, RefusedOnly); len(got) != 2 || got[0] != 1 || got[1] != 3 {
		t.Fatalf("RefusedOnly = %v, want [1 3]", got)
	}
	if got := refused(cmds, FromFirstRefused); len(got) != 3 || got[0] != 1 || got[2] != 3 {
		t.Fatalf("FromFirstRefused = %v, want [1 2 3]", got)
	}
}

// After SCRIPT FLUSH every call of a batch still runs exactly once with RefusedOnly.
func TestReloadAfterFlush(t *testing.T) {
	rdb := redis.NewClient(&redis.Options{Addr: itest.Endpoints(t).RedisCore})
	defer rdb.Close()
	ctx := t.Context()
	incr := MustBind[incrArgs, incrReply](testFS, "", "incr.lua")
	key := "qim:test:luascript:" + t.Name()
	rdb.Del(ctx, key)
	if err := rdb.ScriptFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	calls := []Call{incr.Call(&incrArgs{Counter: key, By: 1}), incr.Call(&incrArgs{Counter: key, By: 10})}
	cmds, err := Run(ctx, rdb, calls, RefusedOnly)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cmds {
		if c.Err() != nil {
			t.Fatal(c.Err())
		}
	}
	if v, _ := rdb.Get(ctx, key).Int(); v != 11 {
		t.Fatalf("counter = %d, want 11 (each call once)", v)
	}
	if _, err := Run(ctx, redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}), calls, RefusedOnly); err == nil || IsReply(err) {
		t.Fatalf("a transport failure must be returned as err, got %v", err)
	}
}
