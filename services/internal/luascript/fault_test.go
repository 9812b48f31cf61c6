//go:build failpoints

package luascript

import (
	"errors"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/redis/go-redis/v9"
)

// faulty.lua calls Redis every way the hook must see through: a helper of the prelude (pcall,
// lower case), an alias of redis.call taken before the body, a read, and a write whose error the
// script catches with pcall.
var faultLua = fstest.MapFS{
	"lua/prelude.lua": {Data: []byte("local function put(k, v) return redis.pcall('set', k, v) end\n")},
	"lua/faulty.lua": {Data: []byte(`--! keys: a b c
--! argv: v
--! value: n
local call = redis.call
put(K_a, A_v)                              -- write 1
redis.call('GET', K_a)
call('hset', K_b, 'f', A_v)                -- write 2
local ok = pcall(redis.call, 'INCR', K_c)  -- write 3 (a fault raised here is caught)
call('EXPIRE', K_b, 100)                   -- write 4
return reply{n = 4}
`)},
	"lua/unlisted.lua": {Data: []byte("--! keys: a\n--! argv:\n--! value: n\nreturn reply{n = redis.call('NOSUCHCMD', K_a)}\n")},
}

type faultyArgs struct {
	A string `key:"a"`
	B string `key:"b"`
	C string `key:"c"`
	V string `arg:"v"`
}

type faultyReply struct {
	N int64 `reply:"n"`
}

// For every k the script leaves exactly its first k writes, an aliased or pcall'ed call included;
// a fault beyond the last write changes nothing; the fault is taken by one call only.
func TestLuaFaultHookStopsAtWrite(t *testing.T) {
	rdb, ctx := testRedis(t), t.Context()
	b := Bind[faultyArgs, faultyReply](MustLoad(faultLua, "prelude.lua", "faulty.lua"))
	p := "qim:test:luascript:fault:"
	a := &faultyArgs{A: p + "a", B: p + "b", C: p + "c", V: "v"}
	t.Cleanup(func() { rdb.Del(ctx, a.A, a.B, a.C) })
	for k := 0; k <= 5; k++ {
		rdb.Del(ctx, a.A, a.B, a.C)
		f := &Fault{Script: "faulty.lua", After: k}
		fctx := WithFault(ctx, f)
		r, err := b.Do(fctx, rdb, a)
		if !f.Used() {
			t.Fatalf("k=%d: the armed call did not take the fault", k)
		}
		if k <= 4 != IsInjectedFault(err) {
			t.Fatalf("k=%d: reply %v, %v", k, r, err)
		}
		if k <= 4 && !strings.Contains(err.Error(), FaultMarker) {
			t.Fatalf("k=%d: %v", k, err)
		}
		state := []bool{
			rdb.Exists(ctx, a.A).Val() == 1,
			rdb.HGet(ctx, a.B, "f").Val() == "v",
			rdb.Get(ctx, a.C).Val() == "1",
			rdb.TTL(ctx, a.B).Val() > 0,
		}
		for w, done := range state {
			if done != (w < k) {
				t.Fatalf("k=%d: write %d done = %v (a, b, c, ttl: %v)", k, w+1, done, state)
			}
		}
		if r2, err := b.Do(fctx, rdb, a); err != nil || r2.N != 4 {
			t.Fatalf("k=%d: the second call under the same context must run normally: %v, %v", k, r2, err)
		}
	}
	other := WithFault(ctx, &Fault{Script: "other.lua", After: 0})
	if _, err := Run(other, rdb, []Call{b.Call(a)}, RefusedOnly); err != nil {
		t.Fatal(err)
	}
}

// Run sends the armed call as EVAL and the rest of the batch as EVALSHA.
func TestLuaFaultHookInRun(t *testing.T) {
	rdb, ctx := testRedis(t), t.Context()
	b := Bind[faultyArgs, faultyReply](MustLoad(faultLua, "prelude.lua", "faulty.lua"))
	p := "qim:test:luascript:faultrun:"
	a := &faultyArgs{A: p + "a", B: p + "b", C: p + "c", V: "v"}
	rdb.Del(ctx, a.A, a.B, a.C)
	t.Cleanup(func() { rdb.Del(ctx, a.A, a.B, a.C) })
	cmds, err := Run(WithFault(ctx, &Fault{Script: "faulty.lua", After: 3}), rdb, []Call{b.Call(a), b.Call(a)}, RefusedOnly)
	if err != nil {
		t.Fatal(err)
	}
	if !IsInjectedFault(cmds[0].Err()) || cmds[1].Err() != nil {
		t.Fatalf("first call %v, second %v: want the fault on the first only", cmds[0].Err(), cmds[1].Err())
	}
	if n, _ := rdb.Get(ctx, a.C).Int(); n != 2 {
		t.Fatalf("counter = %d, want 2 (the faulted call's INCR and the second call's)", n)
	}
}

// The rewrite keeps the script's line numbers, and an unlisted command fails the call loudly.
func TestLuaFaultHookSourceShape(t *testing.T) {
	sc := MustLoad(faultLua, "prelude.lua", "faulty.lua")
	if got, want := strings.Count(FaultSource(sc.src, 2), "\n"), strings.Count(sc.src, "\n"); got != want {
		t.Fatalf("rewritten source has %d newlines, the script %d", got, want)
	}
	rdb, ctx := testRedis(t), t.Context()
	u := MustLoad(faultLua, "", "unlisted.lua")
	err := rdb.Eval(ctx, FaultSource(u.src, 1), []string{"qim:test:luascript:unlisted"}).Err()
	var re redis.Error
	if !errors.As(err, &re) || !strings.Contains(err.Error(), "NOSUCHCMD is in neither the write nor the read list") {
		t.Fatalf("unlisted command: %v", err)
	}
}

// Every listed write command has the server's "write" flag and no listed read command has it:
// the fault counts what Redis counts as a write.
func TestLuaFaultHookCommandLists(t *testing.T) {
	rdb, ctx := testRedis(t), t.Context()
	info, err := rdb.Command(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	check := func(names []string, write bool) {
		for _, n := range names {
			ci, ok := info[strings.ToLower(n)]
			if !ok {
				t.Errorf("%s: not a command of this server", n)
				continue
			}
			if got := !ci.ReadOnly && hasFlag(ci.Flags, "write"); got != write {
				t.Errorf("%s: server flags %v, listed as write = %v", n, ci.Flags, write)
			}
		}
	}
	check(writeCommands, true)
	check(readCommands, false)
}

func hasFlag(flags []string, f string) bool {
	for _, x := range flags {
		if x == f {
			return true
		}
	}
	return false
}
