package mailboxstore

import (
	"context"
	"embed"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/qim-dev/qim/services/internal/luascript"
)

//go:embed lua/*.lua
var luaFS embed.FS

// scripts are shared by every Store of the process; each SHA is computed once (luascript).
var scripts = struct{ materialize, pull, trim *luascript.Script }{
	materialize: luascript.MustLoad(luaFS, "prelude.lua", "materialize.lua"),
	pull:        luascript.MustLoad(luaFS, "prelude.lua", "pull.lua"),
	trim:        luascript.MustLoad(luaFS, "prelude.lua", "trim.lua"),
}

// call is one queued script invocation.
type call = luascript.Call

// runCalls sends calls as EVALSHA in one pipeline (see luascript.Run). After NOSCRIPT every call
// from the first refused one on is re-sent: later calls of a materialization batch depend on the
// earlier ones through the watermark CAS, so they may have failed only because of it; re-sending
// a call that did run is safe, because each script answers a retry with its original result.
func runCalls(ctx context.Context, rdb redis.Cmdable, calls []call) ([]*redis.Cmd, error) {
	cmds, err := luascript.Run(ctx, rdb, calls, luascript.FromFirstRefused)
	if err != nil {
		return nil, fmt.Errorf("mailboxstore: %w", err)
	}
	return cmds, nil
}

// LoadScripts loads every script into rdb, so the first materialization after start-up does
// not pay a NOSCRIPT round trip. Optional: calls load scripts on demand anyway.
func LoadScripts(ctx context.Context, rdb redis.Cmdable) error {
	if err := luascript.Preload(ctx, rdb, scripts.materialize, scripts.pull, scripts.trim); err != nil {
		return fmt.Errorf("mailboxstore: %w", err)
	}
	return nil
}
