// Package luascript runs the Redis Lua scripts of the stores: each script's SHA is computed once
// per process, calls go out as EVALSHA in one pipeline per batch, and a NOSCRIPT reply (the
// server restarted or SCRIPT FLUSH ran) loads the script and re-sends.
//
// EVAL of the full source per call was rejected: it ships the script on every message and makes
// Redis hash it each time (per-call script hashing was measured at a third of a MailboxNode's
// CPU: docs/adr/0006-lua-scripts-sha-once-evalsha.md). Every script run through this package
// must be idempotent — answer a retry with its original result — because a re-send after
// NOSCRIPT, or a caller's retry after a transport error, may run a call that already ran.
//
// Each script also declares its interface in a "--!" header (header.go): the names of its KEYS,
// ARGV and reply positions. Redis runs the file as written, after a prologue generated from the
// header that binds the names as plain locals (prologue.go; every script's is listed in
// docs/lua-scripts.md), base.lua and the store's prelude. The loader refuses a file that reaches
// around the names (check.go), maps an error's line back to the file it is in, and checks the Go
// call and reply types of each script against the header (bind.go), so the agreement between a
// script and its caller is machine-checked at package initialisation rather than kept in
// comments (docs/adr/0018-lua-script-interface-header.md).
//
// A build with `-tags failpoints` can make one call of a script die right after its k-th write
// (fault_on.go), for the stores' TestLuaFault tests; a normal build carries no trace of it.
package luascript

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"io/fs"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
)

// Script is one Lua script with its SHA computed at construction.
type Script struct {
	name  string
	src   string // what Redis runs; only the fault hook of a failpoints build reads it
	s     *redis.Script
	iface Interface
	parts []part // the texts src is made of, in order, for locating an error's line
}

// part is one text of a script's source: a file, or the generated prologue.
type part struct {
	name  string
	lines int
}

// Name is the script's file name, for errors.
func (s *Script) Name() string { return s.name }

// Interface is the script's header (see Interface).
func (s *Script) Interface() Interface { return s.iface }

// Source is the text Redis runs: the prologue, base.lua, the prelude, then the file unchanged.
func (s *Script) Source() string { return s.src }

// MustLoad reads lua/<name> from fsys, checks it against its "--!" header and assembles the
// source Redis runs: the prologue generated from the header, base.lua, then lua/<prelude> when
// prelude is non-empty, then the file as written, so every script stays one self-contained
// EVALSHA. A missing file, a malformed header or a text that bypasses the header (check.go) is a
// build defect and panics.
func MustLoad(fsys fs.FS, prelude, name string) *Script {
	sc, err := load(fsys, prelude, name)
	if err != nil {
		panic(err.Error())
	}
	return sc
}

func load(fsys fs.FS, prelude, name string) (*Script, error) {
	src, err := read(fsys, name)
	if err != nil {
		return nil, err
	}
	iface, body, err := parseHeader(src)
	if err != nil {
		return nil, fmt.Errorf("luascript: %s: %w", name, err)
	}
	texts := []struct{ name, src string }{{"prologue of " + name, prologue(name, iface)}, {"base.lua", baseLua}}
	if prelude != "" {
		raw, err := read(fsys, prelude)
		if err != nil {
			return nil, err
		}
		texts = append(texts, struct{ name, src string }{prelude, raw})
	}
	for _, t := range texts[1:] {
		if err := checkSource(iface, t.src, false, 1); err != nil {
			return nil, fmt.Errorf("luascript: %s (for %s): %w", t.name, name, err)
		}
	}
	headerLines := strings.Count(src[:len(src)-len(body)], "\n")
	if err := checkSource(iface, body, true, headerLines+1); err != nil {
		return nil, fmt.Errorf("luascript: %s: %w", name, err)
	}
	texts = append(texts, struct{ name, src string }{name, src})
	var full strings.Builder
	parts := make([]part, 0, len(texts))
	for _, t := range texts {
		text := strings.TrimSuffix(t.src, "\n") + "\n"
		full.WriteString(text)
		parts = append(parts, part{name: t.name, lines: strings.Count(text, "\n")})
	}
	return &Script{name: name, src: full.String(), s: redis.NewScript(full.String()), iface: iface, parts: parts}, nil
}

// locate names the file and line of line n of the source Redis runs.
func (s *Script) locate(n int) string {
	for _, p := range s.parts {
		if n <= p.lines {
			return p.name + ":" + strconv.Itoa(n)
		}
		n -= p.lines
	}
	return "beyond the source"
}

func read(fsys fs.FS, name string) (string, error) {
	b, err := fs.ReadFile(fsys, "lua/"+name)
	if err != nil {
		return "", fmt.Errorf("luascript: embedded script missing: %s", name)
	}
	return string(b), nil
}

// baseLua holds the helpers every script gets (fail, natint, posint, dec), between the generated
// prologue and the store's own prelude.
//
//go:embed base.lua
var baseLua string

// Call is one queued script invocation. Only Binding.Call builds one, from a typed value, so no
// caller ever lays out KEYS or ARGV by hand; WithArg and WithoutArg (for tests of a script's own
// validation) address arguments by name.
type Call struct {
	script *Script
	keys   []string
	args   []any
}

// Resend says which calls a NOSCRIPT reply re-sends after loading the script.
type Resend int

const (
	// RefusedOnly re-sends exactly the calls that got NOSCRIPT (they did not run).
	RefusedOnly Resend = iota
	// FromFirstRefused re-sends every call from the first refused one on, for batches whose later
	// calls depend on earlier ones (a watermark CAS) and may have failed only because of them.
	FromFirstRefused
)

// Run sends calls as EVALSHA in one pipeline and returns one *redis.Cmd per call. Per-call error
// replies stay on their Cmd; a transport or context error is returned as err, and then no
// outcome can be trusted (the server may or may not have run each script).
func Run(ctx context.Context, rdb redis.Cmdable, calls []Call, resend Resend) ([]*redis.Cmd, error) {
	cmds, err := pipeline(ctx, rdb, calls)
	if err != nil {
		return nil, err
	}
	retry := refused(cmds, resend)
	if len(retry) == 0 {
		return cmds, nil
	}
	again := make([]Call, len(retry))
	loaded := map[*Script]bool{}
	for j, i := range retry {
		again[j] = calls[i]
		if sc := calls[i].script; !loaded[sc] {
			if err := sc.s.Load(ctx, rdb).Err(); err != nil {
				return nil, fmt.Errorf("luascript: SCRIPT LOAD %s: %w", sc.name, err)
			}
			loaded[sc] = true
		}
	}
	second, err := pipeline(ctx, rdb, again)
	if err != nil {
		return nil, err
	}
	for j, i := range retry {
		cmds[i] = second[j]
	}
	return cmds, nil
}

// refused lists the indices to re-send.
func refused(cmds []*redis.Cmd, resend Resend) []int {
	var out []int
	for i, c := range cmds {
		switch {
		case len(out) > 0 && resend == FromFirstRefused:
			out = append(out, i)
		case isNoScript(c.Err()):
			out = append(out, i)
		}
	}
	return out
}

// Preload loads scripts into rdb so the first batch after start-up pays no NOSCRIPT round trip.
func Preload(ctx context.Context, rdb redis.Cmdable, scripts ...*Script) error {
	for _, sc := range scripts {
		if err := sc.s.Load(ctx, rdb).Err(); err != nil {
			return fmt.Errorf("luascript: SCRIPT LOAD %s: %w", sc.name, err)
		}
	}
	return nil
}

func pipeline(ctx context.Context, rdb redis.Cmdable, calls []Call) ([]*redis.Cmd, error) {
	cmds := make([]*redis.Cmd, 0, len(calls))
	// Pipelined's own error is only the first failed command's; each command is inspected below.
	_, _ = rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, c := range calls {
			if src, ok := faultSource(ctx, c.script); ok { // never in a normal build (fault_off.go)
				cmds = append(cmds, p.Eval(ctx, src, c.keys, c.args...))
				continue
			}
			cmds = append(cmds, c.script.s.EvalSha(ctx, p, c.keys, c.args...))
		}
		return nil
	})
	for _, c := range cmds {
		if err := c.Err(); err != nil && !IsReply(err) {
			return nil, fmt.Errorf("luascript: redis pipeline of %d calls: %w", len(calls), err)
		}
	}
	return cmds, nil
}

// IsReply reports an error that is a reply from Redis (an error reply or nil), as opposed to a
// transport or context failure after which the command's outcome is unknown.
func IsReply(err error) bool {
	var re redis.Error
	return errors.As(err, &re)
}

func isNoScript(err error) bool {
	return err != nil && IsReply(err) && strings.HasPrefix(err.Error(), "NOSCRIPT")
}
