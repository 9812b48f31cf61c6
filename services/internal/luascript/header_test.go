package luascript

import (
	"reflect"
	"strings"
	"testing"
	"testing/fstest"
)

func TestParseHeader(t *testing.T) {
	good := []struct {
		name, src string
		want      Interface
	}{
		{"fixed", "--! keys: a b\n--! argv: x\n--! reply: p q\nreturn 1\n",
			Interface{Keys: Section{Fixed: []string{"a", "b"}}, Argv: Section{Fixed: []string{"x"}}, Reply: Section{Fixed: []string{"p", "q"}}}},
		{"no keys, a value", "--! keys:\n--! argv: prefix max_writers\n--! value: writer_id\n",
			Interface{Argv: Section{Fixed: []string{"prefix", "max_writers"}}, Reply: Section{Fixed: []string{"writer_id"}}, Value: true}},
		{"tails and a group", "--!keys: e w [bucket index]...\n--! argv: x members...\n--! reply: status next members...\n",
			Interface{Keys: Section{Fixed: []string{"e", "w"}, Tail: []string{"bucket", "index"}},
				Argv:  Section{Fixed: []string{"x"}, Tail: []string{"members"}},
				Reply: Section{Fixed: []string{"status", "next"}, Tail: []string{"members"}}}},
		{"a one-name group", "--! keys: [lists]...\n--! argv:\n--! reply: x\n",
			Interface{Keys: Section{Tail: []string{"lists"}}, Reply: Section{Fixed: []string{"x"}}}},
	}
	for _, c := range good {
		got, body, err := parseHeader(c.src)
		if err != nil || !reflect.DeepEqual(got, c.want) || strings.Contains(body, "--!") {
			t.Errorf("%s: parseHeader = %+v, %q, %v; want %+v", c.name, got, body, err, c.want)
		}
	}
	bad := map[string]string{
		"no header":               "return 1\n",
		"argv first":              "--! argv: x\n--! keys: a\n--! reply: r\n",
		"reply missing":           "--! keys: a\n--! argv: x\nreturn 1\n",
		"fourth line":             "--! keys: a\n--! argv: x\n--! reply: r\n--! value: v\n",
		"no colon":                "--! keys a\n--! argv: x\n--! reply: r\n",
		"unknown directive":       "--! keys: a\n--! args: x\n--! reply: r\n",
		"duplicate name":          "--! keys: a a\n--! argv: x\n--! reply: r\n",
		"upper case":              "--! keys: Epoch\n--! argv: x\n--! reply: r\n",
		"lua keyword":             "--! keys: a\n--! argv: x\n--! reply: start end\n",
		"tail not last in line":   "--! keys: a... b\n--! argv: x\n--! reply: r\n",
		"group not last":          "--! keys: [a b]... c\n--! argv: x\n--! reply: r\n",
		"unclosed group":          "--! keys: [a b\n--! argv: x\n--! reply: r\n",
		"group in a reply":        "--! keys: a\n--! argv: x\n--! reply: [p q]...\n",
		"value of two":            "--! keys: a\n--! argv: x\n--! value: p q\n",
		"value tail":              "--! keys: a\n--! argv: x\n--! value: p...\n",
		"empty reply":             "--! keys: a\n--! argv: x\n--! reply:\n",
		"header line below":       "--! keys: a\n--! argv: x\n--! reply: r\n-- note\n--! argv: y\n",
		"header after a comment":  "-- a.lua\n--! keys: a\n--! argv: x\n--! reply: r\n",
		"dash in a name":          "--! keys: max-bytes\n--! argv: x\n--! reply: r\n",
		"name twice across group": "--! keys: a [a b]...\n--! argv: x\n--! reply: r\n",
	}
	for name, src := range bad {
		if got, _, err := parseHeader(src); err == nil {
			t.Errorf("%s: header accepted as %+v", name, got)
		}
	}
}

// compileSource sees through comments and strings, compiles names to positions and refuses every
// way around the header.
func TestCompileSource(t *testing.T) {
	iface := Interface{Keys: Section{Fixed: []string{"commit"}, Tail: []string{"lists"}},
		Argv: Section{Fixed: []string{"limit", "cursor"}}, Reply: Section{Fixed: []string{"st", "seq"}}}
	good := []struct{ src, want string }{
		{"local x = K.commit .. A.cursor\nfor i = 1, #K.lists do x = K.lists[i] end\nreturn reply{st = 'C', seq = x}",
			"local x = KEYS[1] .. ARGV[2]\nfor i = 1, #K__lists do x = K__lists[i] end\nreturn {'C', x}"},
		{"-- KEYS[1] and K.commit in a comment\nlocal s = 'KEYS[1] A.limit' .. \"ARGV[1]\" .. [[KEYS[3] ]]\n--[==[ return {1} ]==]", ""},
		{"local t = {st = 'x', seq = 1}\nreturn reply(t)", ""},
		{"local function f(a) return a.KEYS, a.K end\nreturn reply{st = f({}), seq = {n = 1}}",
			"local function f(a) return a.KEYS, a.K end\nreturn {f({}), {n = 1}}"},
		{"if not ARITY then return fail('QIMINVAL', 'want 2 arguments') end", ""},
		{"local n = 1e3 + .5 + 0x1F\nreturn reply{st = (n == 2) and 'a' or 'b', seq = n,}",
			"local n = 1e3 + .5 + 0x1F\nreturn {(n == 2) and 'a' or 'b', n,}"},
		{"return reply{st = K.commit, seq = A.limit}", "return {KEYS[1], ARGV[1]}"},
	}
	for _, c := range good {
		got, undeclared, err := compileSource(iface, c.src, true, 4)
		if c.want == "" {
			c.want = c.src
		}
		if err != nil || got != c.want || undeclared {
			t.Errorf("compile %q = %q, %v, %v; want %q", c.src, got, undeclared, err, c.want)
		}
	}
	bad := map[string]string{
		"ARGV indexed":            "local x = ARGV[1]",
		"KEYS indexed":            "return redis.call('GET', KEYS[1])",
		"ARGV counted":            "if #ARGV ~= 2 then return 1 end",
		"K by position":           "local x = K[1]",
		"A by string":             "local x = A['limit']",
		"A passed whole":          "local x = check(A)",
		"undeclared key":          "local x = K.comit",
		"argument as a key":       "local x = K.limit",
		"assigned argument":       "A.limit = '1'",
		"array literal reply":     "return {'C', 1}",
		"local K":                 "local K = {}",
		"local reply function":    "local function reply(r) return r end",
		"local in a list":         "local a, ARITY = 1, true",
		"parameter named A":       "local function f(x, A) return x end",
		"loop variable K":         "for _, K in ipairs(t) do end",
		"reply field unknown":     "return reply{st = 1, seq = 2, extra = 3}",
		"reply field missing":     "return reply{st = 1}",
		"reply out of order":      "return reply{seq = 2, st = 1}",
		"reply by position":       "return reply{'C', 1}",
		"reply computed key":      "return reply{['st'] = 1, seq = 2}",
		"unterminated string":     "local s = 'abc",
		"unterminated comment":    "--[[ never closed",
		"ARGV after a string":     "local s = 'x' .. ARGV[1]",
		"KEYS after long bracket": "local s = [==[ ]] ]==] .. KEYS[1]",
	}
	for name, src := range bad {
		if _, _, err := compileSource(iface, src, true, 4); err == nil {
			t.Errorf("%s: accepted %q", name, src)
		}
	}
	// A value or a reply with a tail is built by the prologue's reply, which checks it when it runs.
	for _, h := range []Interface{
		{Reply: Section{Fixed: []string{"st"}}, Value: true},
		{Reply: Section{Fixed: []string{"st"}, Tail: []string{"seq"}}},
	} {
		src := "return reply{st = 1, seq = 2}"
		if h.Value {
			src = "return reply{st = 1}"
		}
		if got, _, err := compileSource(h, src, true, 4); err != nil || got != src {
			t.Errorf("reply of %+v compiled to %q, %v", h.Reply, got, err)
		}
	}
	// A prelude is shared by scripts of different headers: a name this header lacks compiles to a
	// call that fails if it runs, but a prelude may never touch KEYS or ARGV nor build an array
	// reply by position.
	got, undeclared, err := compileSource(iface, "local function f() return A.identity, A.limit end\n"+
		"local function g() return reply{kind = 1} end\nlocal function h(x) return reply{st = x, seq = 1} end", false, 1)
	if want := "local function f() return luascript_undeclared('A.identity'), ARGV[1] end\n" +
		"local function g() return reply{kind = 1} end\nlocal function h(x) return {x, 1} end"; err != nil || got != want || !undeclared {
		t.Errorf("prelude = %q, %v, %v; want %q", got, undeclared, err, want)
	}
	for _, src := range []string{"local function f() return ARGV[1] end", "local function g() return {1} end"} {
		if _, _, err := compileSource(iface, src, false, 1); err == nil {
			t.Errorf("prelude %q accepted", src)
		}
	}
}

// MustLoad refuses (panics on) a script whose body or prelude bypasses its header, and reports
// the file line.
func TestLoadRefusesBypass(t *testing.T) {
	head := "--! keys: counter\n--! argv: by\n--! value: count\n"
	fsys := fstest.MapFS{
		"lua/ok.lua":       {Data: []byte(head + "return reply{count = redis.call('INCRBY', K.counter, A.by)}\n")},
		"lua/argv.lua":     {Data: []byte(head + "-- fine\nreturn reply{count = redis.call('INCRBY', K.counter, ARGV[1])}\n")},
		"lua/noheader.lua": {Data: []byte("return redis.call('INCRBY', KEYS[1], ARGV[1])\n")},
		"lua/prelude.lua":  {Data: []byte("local function by() return ARGV[1] end\n")},
	}
	if _, err := load(fsys, "", "ok.lua"); err != nil {
		t.Fatalf("ok.lua: %v", err)
	}
	_, err := load(fsys, "", "argv.lua")
	if err == nil || !strings.Contains(err.Error(), "line 5") || !strings.Contains(err.Error(), "ARGV") {
		t.Errorf("argv.lua: err = %v, want ARGV refused at line 5", err)
	}
	if _, err := load(fsys, "prelude.lua", "ok.lua"); err == nil || !strings.Contains(err.Error(), "prelude.lua") {
		t.Errorf("prelude indexing ARGV: err = %v", err)
	}
	if _, err := load(fsys, "", "noheader.lua"); err == nil || !strings.Contains(err.Error(), "--! keys:") {
		t.Errorf("a script without a header: err = %v", err)
	}
	if _, err := load(fsys, "", "missing.lua"); err == nil {
		t.Error("missing script loaded")
	}
	defer func() {
		if recover() == nil {
			t.Error("MustLoad of a bypassing script did not panic")
		}
	}()
	MustLoad(fsys, "", "argv.lua")
}

// The prologue counts ARITY from the header, lays tail groups out item by item and builds the
// reply in header order.
func TestPrologueText(t *testing.T) {
	p := prologue("m.lua", Interface{
		Keys:  Section{Fixed: []string{"epoch", "wm", "ident"}, Tail: []string{"bucket", "index"}},
		Argv:  Section{Fixed: []string{"x"}, Tail: []string{"members"}},
		Reply: Section{Fixed: []string{"seq", "kind"}},
	}, false)
	for _, want := range []string{
		"local ARITY = #KEYS >= 3 and (#KEYS - 3) % 2 == 0 and #ARGV >= 1",
		"local K__bucket, K__index = {}, {}",
		"for i = 1, math.floor((#KEYS - 3) / 2) do",
		"K__bucket[i] = KEYS[2 + 2 * i]",
		"K__index[i] = KEYS[3 + 2 * i]",
		"for i = 1, #ARGV - 1 do",
		"A__members[i] = ARGV[1 + i]",
		"if r.seq == nil or r.kind == nil then",
		"return {r.seq, r.kind}",
	} {
		if !strings.Contains(p, want) {
			t.Errorf("prologue lacks %q:\n%s", want, p)
		}
	}
	if strings.Contains(p, undeclaredFn) {
		t.Errorf("prologue defines %s without a use:\n%s", undeclaredFn, p)
	}
}
