package session

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/qim-dev/qim/services/internal/msgstore"
)

//go:embed lua/*.lua
var luaFS embed.FS

// script is one Lua script with its SHA computed once per process (redis.NewScript hashes the
// source at construction). Calls go out as EVALSHA; EVAL of the source per call was rejected:
// it ships the script with every record and makes Redis hash it each time (the seed measured a
// third of a service's CPU in per-call script hashing).
type script struct {
	name string
	s    *redis.Script
}

type scriptSet struct {
	apply, markRead, bind *script
}

// scripts are shared by every store of the process.
var scripts = func() scriptSet {
	prelude := mustRead("prelude.lua")
	load := func(name string) *script {
		// The prelude is prepended, so every script is still one self-contained EVALSHA.
		return &script{name: name, s: redis.NewScript(prelude + "\n" + mustRead(name))}
	}
	return scriptSet{apply: load("apply.lua"), markRead: load("mark_read.lua"), bind: load("bind.lua")}
}()

func mustRead(name string) string {
	b, err := luaFS.ReadFile("lua/" + name)
	if err != nil {
		panic("session: embedded script missing: " + name) // build defect, not a runtime condition
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
// error replies stay on their Cmd, a transport or context error is returned (then no outcome
// can be trusted; the scripts are idempotent, and the projection restarts from its checkpoints).
//
// NOSCRIPT (the server restarted or SCRIPT FLUSH ran) loads the script and re-sends every call
// from the first refused one on: later apply calls of a batch depend on earlier ones through the
// checkpoint compare-and-set, so they may have failed only because of it. Re-sending a call that
// did run is safe, because apply answers a retry with its original outcome.
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
				return nil, fmt.Errorf("session: SCRIPT LOAD %s: %w", c.sc.name, err)
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
			return nil, fmt.Errorf("session: redis pipeline of %d calls: %w", len(calls), err)
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

// loadScripts loads every script, so the first record after start-up pays no NOSCRIPT trip.
func loadScripts(ctx context.Context, rdb redis.Cmdable) error {
	for _, sc := range []*script{scripts.apply, scripts.markRead, scripts.bind} {
		if err := sc.s.Load(ctx, rdb).Err(); err != nil {
			return fmt.Errorf("session: SCRIPT LOAD %s: %w", sc.name, err)
		}
	}
	return nil
}

// scriptClass splits a script error reply into its class word and detail.
func scriptClass(err error) (class, detail string) {
	class, detail, _ = strings.Cut(err.Error(), " ")
	return class, detail
}

// isCorrupt reports corrupt stored state found by this package or by the history store.
func isCorrupt(err error) bool {
	return errors.Is(err, ErrCorruptState) || errors.Is(err, msgstore.ErrCorrupt)
}
