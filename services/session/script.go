package session

import (
	"context"
	"embed"
	"fmt"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/qim-dev/qim/services/internal/luascript"
)

//go:embed lua/*.lua
var luaFS embed.FS

// scripts are shared by every store of the process; each SHA is computed once (luascript).
var scripts = struct{ apply, markRead, bind *luascript.Script }{
	apply:    luascript.MustLoad(luaFS, "prelude.lua", "apply.lua"),
	markRead: luascript.MustLoad(luaFS, "prelude.lua", "mark_read.lua"),
	bind:     luascript.MustLoad(luaFS, "prelude.lua", "bind.lua"),
}

// call is one queued script invocation.
type call = luascript.Call

// runCalls sends calls as EVALSHA in one pipeline (luascript.Run). After NOSCRIPT every call from
// the first refused one on is re-sent: later apply calls of a batch depend on earlier ones through
// the checkpoint compare-and-set, so they may have failed only because of it. Re-sending a call
// that did run is safe, because apply answers a retry with its original outcome.
func runCalls(ctx context.Context, rdb redis.Cmdable, calls []call) ([]*redis.Cmd, error) {
	cmds, err := luascript.Run(ctx, rdb, calls, luascript.FromFirstRefused)
	if err != nil {
		return nil, fmt.Errorf("session: %w", err)
	}
	return cmds, nil
}

// loadScripts loads every script, so the first record after start-up pays no NOSCRIPT trip.
func loadScripts(ctx context.Context, rdb redis.Cmdable) error {
	if err := luascript.Preload(ctx, rdb, scripts.apply, scripts.markRead, scripts.bind); err != nil {
		return fmt.Errorf("session: %w", err)
	}
	return nil
}

// scriptClass splits a script error reply into its class word and detail.
func scriptClass(err error) (class, detail string) {
	class, detail, _ = strings.Cut(err.Error(), " ")
	return class, detail
}
