package msgstore

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

// script is one Lua script with its SHA computed once per process (redis.NewScript hashes the
// source at construction). Calls go out as EVALSHA; a NOSCRIPT reply (the server restarted or
// SCRIPT FLUSH ran) loads the script and re-sends only the calls that were refused, which is
// safe because a NOSCRIPT call did not run. EVAL of the full source per call was rejected: it
// ships several KB per message and makes the server hash the source on every call.
type script struct {
	name string
	s    *redis.Script
}

// scripts are shared by every Store: the SHA is computed once per process, never per call.
var scripts = loadScripts()

type scriptSet struct {
	reserveAndRecord, reserve, record, markCommitted *script
}

func loadScripts() scriptSet {
	prelude := mustRead("prelude.lua")
	load := func(name string) *script {
		// The prelude is prepended, so every script is still one self-contained EVALSHA.
		return &script{name: name, s: redis.NewScript(prelude + "\n" + mustRead(name))}
	}
	return scriptSet{
		reserveAndRecord: load("reserve_and_record.lua"),
		reserve:          load("reserve.lua"),
		record:           load("record.lua"),
		markCommitted:    load("mark_committed.lua"),
	}
}

func mustRead(name string) string {
	b, err := luaFS.ReadFile("lua/" + name)
	if err != nil {
		panic("msgstore: embedded script missing: " + name) // build defect, not a runtime condition
	}
	return string(b)
}

// call is one queued script invocation of a pipeline.
type call struct {
	sc   *script
	keys []string
	args []any
}

// runCalls sends calls in one pipeline and returns one *redis.Cmd per call. Per-call server
// errors (script error replies) stay on their Cmd; a transport error (connection, context) is
// returned as err, and then no result can be trusted, because the server may or may not have
// run each script. The scripts are idempotent, so the caller may retry the whole batch.
func runCalls(ctx context.Context, rdb redis.Cmdable, calls []call) ([]*redis.Cmd, error) {
	cmds, err := pipeline(ctx, rdb, calls, nil)
	if err != nil {
		return nil, err
	}
	var retry []int
	loaded := map[*script]bool{}
	for i, c := range cmds {
		if !isNoScript(c.Err()) {
			continue
		}
		retry = append(retry, i)
		if !loaded[calls[i].sc] {
			if err := calls[i].sc.s.Load(ctx, rdb).Err(); err != nil {
				return nil, fmt.Errorf("msgstore: SCRIPT LOAD %s: %w", calls[i].sc.name, err)
			}
			loaded[calls[i].sc] = true
		}
	}
	if len(retry) == 0 {
		return cmds, nil
	}
	again, err := pipeline(ctx, rdb, calls, retry)
	if err != nil {
		return nil, err
	}
	for j, i := range retry {
		cmds[i] = again[j]
	}
	return cmds, nil
}

// pipeline queues calls (only the indices in only, when non-nil) as EVALSHA on one pipeline.
func pipeline(ctx context.Context, rdb redis.Cmdable, calls []call, only []int) ([]*redis.Cmd, error) {
	n := len(calls)
	if only != nil {
		n = len(only)
	}
	cmds := make([]*redis.Cmd, 0, n)
	// Pipelined's own error is just the first failed command's; each command is inspected below.
	_, _ = rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for j := 0; j < n; j++ {
			c := calls[j]
			if only != nil {
				c = calls[only[j]]
			}
			cmds = append(cmds, c.sc.s.EvalSha(ctx, p, c.keys, c.args...))
		}
		return nil
	})
	for _, c := range cmds {
		if err := c.Err(); err != nil && !isReply(err) {
			return nil, fmt.Errorf("msgstore: redis pipeline of %d calls: %w", n, err)
		}
	}
	return cmds, nil
}

// isReply reports an error that is a reply from Redis (an error reply or nil), as opposed to a
// transport or context failure after which the outcome of the command is unknown.
func isReply(err error) bool {
	var re redis.Error
	return errors.As(err, &re)
}

func isNoScript(err error) bool {
	return err != nil && isReply(err) && strings.HasPrefix(err.Error(), "NOSCRIPT")
}
