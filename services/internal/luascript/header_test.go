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

// checkSource accepts plain Lua over the prologue's names and refuses every way around the header.
func TestCheckSource(t *testing.T) {
	iface := Interface{Keys: Section{Fixed: []string{"commit"}, Tail: []string{"lists"}},
		Argv: Section{Fixed: []string{"limit", "cursor"}}, Reply: Section{Fixed: []string{"st", "seq"}}}
	good := []string{
		"local x = K_commit .. A_cursor\nfor i = 1, #K_lists do x = K_lists[i] end\nreturn reply{st = 'C', seq = x}",
		"local t = {st = 'x', seq = 1}\nreturn reply(t)",
		"if not ARITY then return fail('QIMINVAL', 'want 2 arguments') end",
		"if A_limit == '0' then return reply{st = K_commit, seq = A_limit} end",
		"local function f(a, b) return a.K, b end\nfor _, v in ipairs(K_lists) do f(v, 1) end",
	}
	for _, src := range good {
		if err := checkSource(iface, src, true, 4); err != nil {
			t.Errorf("check %q: %v", src, err)
		}
	}
	bad := map[string]string{
		"ARGV indexed":         "local x = ARGV[1]",
		"KEYS indexed":         "return redis.call('GET', KEYS[1])",
		"ARGV counted":         "if #ARGV ~= 2 then return 1 end",
		"old dialect":          "local x = K.commit",
		"undeclared key":       "local x = K_comit",
		"argument as a key":    "local x = K_limit",
		"assigned argument":    "A_limit = '1'",
		"assigned ARITY":       "ARITY = true",
		"array literal reply":  "return {'C', 1}",
		"local K_":             "local K_commit = 'x'",
		"local reply function": "local function reply(r) return r end",
		"global reply":         "function reply(r) return r end",
		"local in a list":      "local a, ARITY = 1, true",
		"parameter named A_":   "local function f(x, A_limit) return x end",
		"loop variable K_":     "for _, K_lists in ipairs(t) do end",
	}
	for name, src := range bad {
		if err := checkSource(iface, src, true, 4); err == nil {
			t.Errorf("%s: accepted %q", name, src)
		} else if !strings.HasPrefix(err.Error(), "line 4: ") {
			t.Errorf("%s: %v does not name line 4", name, err)
		}
	}
	// A prelude is shared by scripts of different headers: its helpers take keys and arguments as
	// parameters and may build the reply by name.
	if err := checkSource(iface, "local function f(commit, limit) return reply{st = commit, seq = limit} end", false, 1); err != nil {
		t.Errorf("prelude helper with parameters: %v", err)
	}
	for _, src := range []string{"local function f() return ARGV[1] end", "local function g() return {1} end", "local A_x = 1",
		"local function f() return A_limit end", "local function f() return K_other end", "local function f() return ARITY end"} {
		if err := checkSource(iface, src, false, 1); err == nil {
			t.Errorf("prelude %q accepted", src)
		}
	}
}

// MustLoad refuses (panics on) a script whose body or prelude bypasses its header, and reports
// the file line; what it accepts runs as the file is written, after the prologue.
func TestLoadRefusesBypass(t *testing.T) {
	head := "--! keys: counter\n--! argv: by\n--! value: count\n"
	okSrc := head + "return reply{count = redis.call('INCRBY', K_counter, A_by)}\n"
	fsys := fstest.MapFS{
		"lua/ok.lua":       {Data: []byte(okSrc)},
		"lua/argv.lua":     {Data: []byte(head + "-- fine\nreturn reply{count = redis.call('INCRBY', K_counter, ARGV[1])}\n")},
		"lua/noheader.lua": {Data: []byte("return redis.call('INCRBY', KEYS[1], ARGV[1])\n")},
		"lua/prelude.lua":  {Data: []byte("local function by() return ARGV[1] end\n")},
		"lua/helpers.lua":  {Data: []byte("local function by(n) return n end\n")},
	}
	sc, err := load(fsys, "helpers.lua", "ok.lua")
	if err != nil {
		t.Fatalf("ok.lua: %v", err)
	}
	if !strings.HasSuffix(sc.Source(), "\nlocal function by(n) return n end\n"+okSrc) ||
		!strings.HasPrefix(sc.Source(), prologue("ok.lua", sc.Interface())) {
		t.Errorf("source is not prologue, base.lua, prelude, file:\n%s", sc.Source())
	}
	_, err = load(fsys, "", "argv.lua")
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
	})
	for _, want := range []string{
		"local K_epoch, K_wm, K_ident = KEYS[1], KEYS[2], KEYS[3]",
		"local A_x = ARGV[1]",
		"local ARITY = #KEYS >= 3 and (#KEYS - 3) % 2 == 0 and #ARGV >= 1",
		"local K_bucket, K_index = {}, {}",
		"for i = 1, math.floor((#KEYS - 3) / 2) do",
		"K_bucket[i] = KEYS[2 + 2 * i]",
		"K_index[i] = KEYS[3 + 2 * i]",
		"for i = 1, #ARGV - 1 do",
		"A_members[i] = ARGV[1 + i]",
		"if r.seq == nil or r.kind == nil then",
		"return {r.seq, r.kind}",
	} {
		if !strings.Contains(p, want) {
			t.Errorf("prologue lacks %q:\n%s", want, p)
		}
	}
}
