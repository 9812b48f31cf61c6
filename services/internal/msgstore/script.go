package msgstore

import (
	"context"
	"embed"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/qim-dev/qim/services/internal/luascript"
)

//go:embed lua/*.lua
var luaFS embed.FS

// script is one Lua script with its SHA computed once per process (luascript).
type script = luascript.Script

// scripts are shared by every Store: the SHA is computed once per process, never per call.
var scripts = scriptSet{
	reserveAndRecord: luascript.MustLoad(luaFS, "prelude.lua", "reserve_and_record.lua"),
	reserve:          luascript.MustLoad(luaFS, "prelude.lua", "reserve.lua"),
	record:           luascript.MustLoad(luaFS, "prelude.lua", "record.lua"),
	markCommitted:    luascript.MustLoad(luaFS, "prelude.lua", "mark_committed.lua"),
}

type scriptSet struct {
	reserveAndRecord, reserve, record, markCommitted *script
}

// call is one queued script invocation of a pipeline.
type call = luascript.Call

// runCalls sends calls in one pipeline (luascript.Run) and returns one *redis.Cmd per call.
// Per-call server errors (script error replies) stay on their Cmd; a transport error is returned,
// and then no result can be trusted. NOSCRIPT re-sends only the refused calls: the calls of a
// commit batch are independent of each other. The scripts are idempotent, so the caller may retry.
func runCalls(ctx context.Context, rdb redis.Cmdable, calls []call) ([]*redis.Cmd, error) {
	cmds, err := luascript.Run(ctx, rdb, calls, luascript.RefusedOnly)
	if err != nil {
		return nil, fmt.Errorf("msgstore: %w", err)
	}
	return cmds, nil
}

// isReply reports an error that is a reply from Redis (see luascript.IsReply).
func isReply(err error) bool { return luascript.IsReply(err) }
