package mailboxstore

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"strings"

	"github.com/redis/go-redis/v9"
)

//go:embed lua/*.lua
var luaFS embed.FS

// script is one Lua script with its SHA computed once per process (redis.NewScript hashes at
// construction). Calls go out as EVALSHA; EVAL of the full source per call was rejected: it ships
// the script on every dispatch and makes Redis hash it each time (the seed measured a third of a
// MailboxNode's CPU in per-call script hashing).
type script struct {
	name string
	s    *redis.Script
}

type scriptSet struct {
	materialize, pull, trim *script
}

// scripts are shared by every Store of the process.
var scripts = func() scriptSet {
	prelude := mustRead("prelude.lua")
	load := func(name string) *script {
		// The prelude is prepended, so every script is still one self-contained EVALSHA.
		return &script{name: name, s: redis.NewScript(prelude + "\n" + mustRead(name))}
	}
	return scriptSet{materialize: load("materialize.lua"), pull: load("pull.lua"), trim: load("trim.lua")}
}()

func mustRead(name string) string {
	b, err := luaFS.ReadFile("lua/" + name)
	if err != nil {
		panic("mailboxstore: embedded script missing: " + name) // build defect, not a runtime condition
	}
	return string(b)
}

// call is one queued script invocation.
type call struct {
	sc   *script
	keys []string
	args []any
}

// runCalls sends calls as EVALSHA in one pipeline and returns one *redis.Cmd per call; per-call
// error replies stay on their Cmd, a transport or context error is returned (then no outcome can
// be trusted, and every script is idempotent, so the caller may retry or replay).
//
// NOSCRIPT (the server restarted or SCRIPT FLUSH ran) loads the script and re-sends every call
// from the first refused one on: later calls of a materialization batch depend on the earlier
// ones through the watermark CAS, so they may have failed only because of it. Re-sending a call
// that did run is safe, because each script answers a retry with its original result.
func runCalls(ctx context.Context, rdb redis.Cmdable, calls []call) ([]*redis.Cmd, error) {
	cmds, err := pipeline(ctx, rdb, calls)
	if err != nil {
		return nil, err
	}
	first := -1
	for i, c := range cmds {
		if isNoScript(c.Err()) {
			first = i
			break
		}
	}
	if first < 0 {
		return cmds, nil
	}
	loaded := map[*script]bool{}
	for _, c := range calls[first:] {
		if !loaded[c.sc] {
			if err := c.sc.s.Load(ctx, rdb).Err(); err != nil {
				return nil, fmt.Errorf("mailboxstore: SCRIPT LOAD %s: %w", c.sc.name, err)
			}
			loaded[c.sc] = true
		}
	}
	again, err := pipeline(ctx, rdb, calls[first:])
	if err != nil {
		return nil, err
	}
	copy(cmds[first:], again)
	return cmds, nil
}

func pipeline(ctx context.Context, rdb redis.Cmdable, calls []call) ([]*redis.Cmd, error) {
	cmds := make([]*redis.Cmd, 0, len(calls))
	// Pipelined's own error is only the first failed command's; each command is inspected below.
	_, _ = rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, c := range calls {
			cmds = append(cmds, c.sc.s.EvalSha(ctx, p, c.keys, c.args...))
		}
		return nil
	})
	for _, c := range cmds {
		if err := c.Err(); err != nil && !isReply(err) {
			return nil, fmt.Errorf("mailboxstore: redis pipeline of %d calls: %w", len(calls), err)
		}
	}
	return cmds, nil
}

// isReply reports an error that is a reply from Redis, as opposed to a transport or context
// failure after which the command's outcome is unknown.
func isReply(err error) bool {
	var re redis.Error
	return errors.As(err, &re)
}

func isNoScript(err error) bool {
	return err != nil && isReply(err) && strings.HasPrefix(err.Error(), "NOSCRIPT")
}

// LoadScripts loads every script into rdb, so the first materialization after start-up does
// not pay a NOSCRIPT round trip. Optional: calls load scripts on demand anyway.
func LoadScripts(ctx context.Context, rdb redis.Cmdable) error {
	for _, sc := range []*script{scripts.materialize, scripts.pull, scripts.trim} {
		if err := sc.s.Load(ctx, rdb).Err(); err != nil {
			return fmt.Errorf("mailboxstore: SCRIPT LOAD %s: %w", sc.name, err)
		}
	}
	return nil
}
