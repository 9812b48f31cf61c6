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

// The Go side of each script's --! header: luascript checks these types against the headers when
// the package initialises and derives every KEYS/ARGV position and reply position from them.

// applyArgs calls apply.lua: the records of a batch as parallel slices, one item per record;
// Read and Lists index Touched from 1 (see apply.lua).
type applyArgs struct {
	Checkpoint string   `key:"checkpoint"`
	Touched    []string `key:"touched"`
	TopicID    string   `arg:"topic_id"`
	Field      []string `arg:"field"`
	Prev       []string `arg:"prev"`
	Next       []string `arg:"next"`
	Score      []string `arg:"score"`
	Member     []string `arg:"member"`
	Seq        []string `arg:"seq"`
	Read       []string `arg:"read"`
	Lists      []string `arg:"lists"`
}

// applyOut is apply.lua's answer: how many records of the call applied (a repeated call's
// records already applied do not count).
type applyOut struct {
	Applied int64 `reply:"applied"`
}

// bindArgs calls bind.lua.
type bindArgs struct {
	Checkpoint string `key:"checkpoint"`
	ClusterID  string `arg:"cluster_id"`
	TopicID    string `arg:"topic_id"`
	Partitions int    `arg:"partitions"`
}

// bindOut is the binding bind.lua leaves stored.
type bindOut struct {
	ClusterID  string `reply:"cluster_id"`
	TopicID    string `reply:"topic_id"`
	Partitions string `reply:"partitions"`
	Fresh      int64  `reply:"fresh"`
}

// markReadArgs calls mark_read.lua.
type markReadArgs struct {
	Read   string `key:"read"`
	Member string `arg:"member"`
	Seq    string `arg:"seq"`
}

// markReadOut is the watermark mark_read.lua leaves stored.
type markReadOut struct {
	Watermark string `reply:"watermark"`
}

// scripts are shared by every store of the process; each SHA is computed once (luascript).
var scripts = struct {
	apply    *luascript.Binding[applyArgs, applyOut]
	markRead *luascript.Binding[markReadArgs, markReadOut]
	bind     *luascript.Binding[bindArgs, bindOut]
}{
	apply:    luascript.MustBind[applyArgs, applyOut](luaFS, "prelude.lua", "apply.lua"),
	markRead: luascript.MustBind[markReadArgs, markReadOut](luaFS, "prelude.lua", "mark_read.lua"),
	bind:     luascript.MustBind[bindArgs, bindOut](luaFS, "prelude.lua", "bind.lua"),
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
	if err := luascript.Preload(ctx, rdb, scripts.apply.Script(), scripts.markRead.Script(), scripts.bind.Script()); err != nil {
		return fmt.Errorf("session: %w", err)
	}
	return nil
}

// scriptClass splits a script error reply into its class word and detail.
func scriptClass(err error) (class, detail string) {
	class, detail, _ = strings.Cut(err.Error(), " ")
	return class, detail
}
