package luascript

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"testing/fstest"

	"github.com/redis/go-redis/v9"
)

// echo.lua exercises every header form: a fixed key, a key group tail, fixed and tail
// arguments, and a reply with a tail. It answers what each name was bound to.
const echoSrc = `--! keys: a [b c]...
--! argv: x n rest...
--! reply: ka arity kb kc ax an rest...
return reply{ka = K_a, arity = ARITY and 1 or 0, kb = table.concat(K_b, ','), kc = table.concat(K_c, ','),
  ax = A_x, an = tonumber(A_n), rest = A_rest}
`

// guard.lua reads an undefined global through the prelude, or builds a reply table that
// lacks a field, depending on its argument: what only the run-time guards can see.
const guardSrc = `--! keys: a
--! argv: mode
--! reply: p q
if A_mode == 'name' then return reply{p = undeclared(), q = 1} end
local t = {p = 1}
return reply(t)
`

var testLua = fstest.MapFS{
	"lua/echo.lua":    {Data: []byte(echoSrc)},
	"lua/guard.lua":   {Data: []byte(guardSrc)},
	"lua/prelude.lua": {Data: []byte("local function undeclared() return missing_global end\n")},
}

type echoArgs struct {
	A    string   `key:"a"`
	B    []string `key:"b"`
	C    []string `key:"c"`
	X    []byte   `arg:"x"`
	N    int64    `arg:"n"`
	Rest []string `arg:"rest"`
}

type echoHead struct {
	KA    string `reply:"ka"`
	Arity int64  `reply:"arity"`
}

type echoReply struct {
	echoHead          // embedded: its fields count
	KB       string   `reply:"kb"`
	KC       string   `reply:"kc"`
	AX       []byte   `reply:"ax"`
	AN       int64    `reply:"an"`
	Rest     []string `reply:"rest"`
}

func TestBindRefusesMismatch(t *testing.T) {
	sc := MustLoad(testLua, "", "echo.lua")
	if _, err := bind[echoArgs, echoReply](sc); err != nil {
		t.Fatalf("matching types refused: %v", err)
	}
	cases := map[string]func() error{
		"key missing": func() error {
			type a struct {
				B    []string `key:"b"`
				C    []string `key:"c"`
				X    string   `arg:"x"`
				N    int64    `arg:"n"`
				Rest []string `arg:"rest"`
			}
			_, err := bind[a, echoReply](sc)
			return err
		},
		"extra name": func() error {
			type a struct {
				echoArgs
				Y string `arg:"y"`
			}
			_, err := bind[a, echoReply](sc)
			return err
		},
		"untagged field": func() error {
			type a struct {
				echoArgs
				Note string
			}
			_, err := bind[a, echoReply](sc)
			return err
		},
		"fixed name as a slice": func() error {
			type a struct {
				A    []string `key:"a"`
				B    []string `key:"b"`
				C    []string `key:"c"`
				X    string   `arg:"x"`
				N    int64    `arg:"n"`
				Rest []string `arg:"rest"`
			}
			_, err := bind[a, echoReply](sc)
			return err
		},
		"tail not a slice": func() error {
			type a struct {
				A    string   `key:"a"`
				B    []string `key:"b"`
				C    []string `key:"c"`
				X    string   `arg:"x"`
				N    int64    `arg:"n"`
				Rest string   `arg:"rest"`
			}
			_, err := bind[a, echoReply](sc)
			return err
		},
		"key not a string": func() error {
			type a struct {
				A    int64    `key:"a"`
				B    []string `key:"b"`
				C    []string `key:"c"`
				X    string   `arg:"x"`
				N    int64    `arg:"n"`
				Rest []string `arg:"rest"`
			}
			_, err := bind[a, echoReply](sc)
			return err
		},
		"argument tagged as a key": func() error {
			type a struct {
				A    string   `key:"a"`
				B    []string `key:"b"`
				C    []string `key:"c"`
				X    string   `key:"x"`
				N    int64    `arg:"n"`
				Rest []string `arg:"rest"`
			}
			_, err := bind[a, echoReply](sc)
			return err
		},
		"reply field missing": func() error {
			type r struct {
				echoHead
				KB   string   `reply:"kb"`
				AX   string   `reply:"ax"`
				AN   int64    `reply:"an"`
				Rest []string `reply:"rest"`
			}
			_, err := bind[echoArgs, r](sc)
			return err
		},
		"reply tail not a slice": func() error {
			type r struct {
				echoHead
				KB   string `reply:"kb"`
				KC   string `reply:"kc"`
				AX   string `reply:"ax"`
				AN   int64  `reply:"an"`
				Rest string `reply:"rest"`
			}
			_, err := bind[echoArgs, r](sc)
			return err
		},
		"reply field unexported": func() error {
			type r struct {
				echoHead
				kb   string   `reply:"kb"`
				KC   string   `reply:"kc"`
				AX   string   `reply:"ax"`
				AN   int64    `reply:"an"`
				Rest []string `reply:"rest"`
			}
			_ = r{}.kb
			_, err := bind[echoArgs, r](sc)
			return err
		},
		"reply not a struct": func() error {
			_, err := bind[echoArgs, []string](sc)
			return err
		},
	}
	for name, f := range cases {
		if err := f(); err == nil {
			t.Errorf("%s: bound", name)
		}
	}
	defer func() {
		if recover() == nil {
			t.Error("Bind of a mismatching type did not panic")
		}
	}()
	Bind[incrArgs, echoReply](sc)
}

// Call lays out fixed names, then the tail group by group; WithArg and WithoutArg address
// arguments by name.
func TestCallLayout(t *testing.T) {
	b := Bind[echoArgs, echoReply](MustLoad(testLua, "", "echo.lua"))
	c := b.Call(&echoArgs{A: "a", B: []string{"b1", "b2"}, C: []string{"c1", "c2"}, X: []byte("x"), N: 7, Rest: []string{"r1"}})
	if want := []string{"a", "b1", "c1", "b2", "c2"}; !reflect.DeepEqual(c.keys, want) {
		t.Errorf("keys = %q, want %q", c.keys, want)
	}
	if want := []any{[]byte("x"), int64(7), "r1"}; !reflect.DeepEqual(c.args, want) {
		t.Errorf("args = %#v, want %#v", c.args, want)
	}
	if got := c.WithArg("n", "7x").args; got[1] != "7x" || c.args[1] != int64(7) {
		t.Errorf("WithArg: %#v (original %#v)", got, c.args)
	}
	if got := c.WithoutArg("x").args; len(got) != 2 || got[0] != int64(7) || len(c.args) != 3 {
		t.Errorf("WithoutArg: %#v (original %#v)", got, c.args)
	}
	defer func() {
		if recover() == nil {
			t.Error("a group with unequal slices did not panic")
		}
	}()
	b.Call(&echoArgs{B: []string{"b1"}})
}

func TestDecodeShape(t *testing.T) {
	b := Bind[echoArgs, echoReply](MustLoad(testLua, "", "echo.lua"))
	cmd := func(v any) *redis.Cmd {
		c := redis.NewCmd(context.Background())
		c.SetVal(v)
		return c
	}
	got, err := b.Decode(cmd([]any{"a", int64(1), "b", "c", "x", int64(2), "r1", "r2"}))
	want := echoReply{echoHead{"a", 1}, "b", "c", []byte("x"), 2, []string{"r1", "r2"}}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("Decode = %+v, %v; want %+v", got, err, want)
	}
	for name, v := range map[string]any{
		"too short":        []any{"a", int64(1), "b", "c", "x"},
		"not an array":     "a",
		"string for int":   []any{"a", "1", "b", "c", "x", int64(2)},
		"int for string":   []any{int64(9), int64(1), "b", "c", "x", int64(2)},
		"tail of integers": []any{"a", int64(1), "b", "c", "x", int64(2), int64(3)},
	} {
		if _, err := b.Decode(cmd(v)); !errors.Is(err, ErrReplyShape) {
			t.Errorf("%s: err = %v, want ErrReplyShape", name, err)
		}
	}
	fixed := Bind[incrArgs, incrReply](MustLoad(testFS, "", "incr.lua"))
	if _, err := fixed.Decode(cmd([]any{int64(1)})); !errors.Is(err, ErrReplyShape) {
		t.Errorf("array for a value: err = %v", err)
	}
	failed := redis.NewCmd(context.Background())
	failed.SetErr(replyErr("QIMINVAL bad"))
	if _, err := fixed.Decode(failed); err == nil || err.Error() != "QIMINVAL bad" {
		t.Errorf("error reply: err = %v, want it unchanged", err)
	}
}
