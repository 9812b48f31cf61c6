package luascript

import (
	"reflect"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/qim-dev/qim/gates/itest"
)

func testRedis(t *testing.T) *redis.Client {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: itest.Endpoints(t).RedisCore})
	t.Cleanup(func() { _ = rdb.Close() })
	return rdb
}

// On the real Redis, every name of echo.lua's header reaches the script at its position and every
// reply field comes back at its own: distinct values make a swap of any two visible.
func TestLayoutEcho(t *testing.T) {
	rdb, ctx := testRedis(t), t.Context()
	b := Bind[echoArgs, echoReply](MustLoad(testLua, "", "echo.lua"))
	cases := []struct {
		name string
		in   echoArgs
		want echoReply
	}{
		{"two groups", echoArgs{A: "ka", B: []string{"b1", "b2"}, C: []string{"c1", "c2"}, X: []byte("ax"), N: 42, Rest: []string{"r1", "r2", "r3"}},
			echoReply{echoHead{"ka", 1}, "b1,b2", "c1,c2", []byte("ax"), 42, []string{"r1", "r2", "r3"}}},
		{"empty tails", echoArgs{A: "ka", X: []byte{0, 1}, N: 1},
			echoReply{echoHead{"ka", 1}, "", "", []byte{0, 1}, 1, []string{}}},
	}
	for _, c := range cases {
		cmds, err := Run(ctx, rdb, []Call{b.Call(&c.in)}, RefusedOnly)
		if err != nil {
			t.Fatal(err)
		}
		got, err := b.Decode(cmds[0])
		if err != nil || !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: reply %+v, %v; want %+v", c.name, got, err, c.want)
		}
	}
	// A call that does not fit the header (a half group) sets ARITY false and binds only whole
	// groups.
	short := b.Call(&echoArgs{A: "ka", B: []string{"b1"}, C: []string{"c1"}, N: 1})
	short.keys = append(short.keys, "b2")
	cmds, err := Run(ctx, rdb, []Call{short}, RefusedOnly)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := b.Decode(cmds[0]); err != nil || got.Arity != 0 || got.KB != "b1" {
		t.Errorf("half group: %+v, %v; want arity 0 and b1 only", got, err)
	}
}

// The run-time guards: a prelude reading an undefined global, or a reply table without one
// of the reply's fields, fails the script instead of answering nil; the error names the file and
// line it happened at, not the line of the assembled source.
func TestLayoutGuards(t *testing.T) {
	type args struct {
		A    string `key:"a"`
		Mode string `arg:"mode"`
	}
	type out struct {
		P int64 `reply:"p"`
		Q int64 `reply:"q"`
	}
	rdb, ctx := testRedis(t), t.Context()
	b := Bind[args, out](MustLoad(testLua, "prelude.lua", "guard.lua"))
	for mode, want := range map[string]string{
		"name":    "nonexistent global variable 'missing_global'",
		"missing": "reply needs p q",
	} {
		r, err := b.Do(ctx, rdb, &args{A: "k", Mode: mode})
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %+v, %v; want an error with %q", mode, r, err, want)
		}
		// Redis names the line that raised: the prelude's, or the prologue's reply.
		at := map[string]string{"name": "(at prelude.lua:1)", "missing": "(at prologue of guard.lua:7)"}[mode]
		if err == nil || !strings.HasSuffix(err.Error(), at) || !IsReply(err) {
			t.Errorf("%s: %v; want a reply ending %q", mode, err, at)
		}
	}
}

// incr.lua through its binding, one call at a time and in a pipeline.
func TestLayoutIncr(t *testing.T) {
	rdb, ctx := testRedis(t), t.Context()
	b := MustBind[incrArgs, incrReply](testFS, "", "incr.lua")
	key := "qim:test:luascript:" + t.Name()
	rdb.Del(ctx, key)
	r, err := b.Do(ctx, rdb, &incrArgs{Counter: key, By: 5})
	if err != nil || r.Count != 5 {
		t.Fatalf("Do = %+v, %v; want 5", r, err)
	}
	cmds, err := Run(ctx, rdb, []Call{b.Call(&incrArgs{Counter: key, By: 3})}, RefusedOnly)
	if err != nil {
		t.Fatal(err)
	}
	if r, err := b.Decode(cmds[0]); err != nil || r.Count != 8 {
		t.Fatalf("Decode = %+v, %v; want 8", r, err)
	}
}
