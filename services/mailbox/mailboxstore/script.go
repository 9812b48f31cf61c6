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

// The Go side of each script's --! header: luascript checks these types against the headers when
// the package initialises and derives every KEYS/ARGV position and reply position from them.

// materializeArgs calls materialize.lua: Buckets[i] and Indexes[i] are the keys of Members[i]'s
// recipient.
type materializeArgs struct {
	EpochKey       string   `key:"epoch"`
	WatermarkKey   string   `key:"watermark"`
	IdentityKey    string   `key:"identity"`
	Buckets        []string `key:"bucket"`
	Indexes        []string `key:"index"`
	Epoch          int64    `arg:"epoch"`
	Offset         int64    `arg:"offset"`
	PrevOffset     string   `arg:"prev_offset"` // empty: the shard has no watermark yet
	Digest         []byte   `arg:"digest"`
	Seq            []byte   `arg:"seq"`
	Day            int64    `arg:"day"`
	BucketExpireAt int64    `arg:"bucket_expire_at"`
	IndexExpireAt  int64    `arg:"index_expire_at"`
	IdentityTTL    int64    `arg:"identity_ttl"`
	Settled        string   `arg:"settled"` // "1": the bucket's expiry is beyond the margin
	Members        [][]byte `arg:"members"`
}

// materializeOut is materialize.lua's reply.
type materializeOut struct {
	Seq       string `reply:"seq"`
	Duplicate int64  `reply:"duplicate"`
	Kind      string `reply:"kind"`
}

// pullArgs calls pull.lua.
type pullArgs struct {
	EpochKey     string `key:"epoch"`
	WatermarkKey string `key:"watermark"`
	IndexKey     string `key:"index"`
	CursorKey    string `key:"cursor"`
	Cursor       []byte `arg:"cursor"`
	Lower        []byte `arg:"lower"`
	Limit        int    `arg:"limit"`
	MaxBytes     int    `arg:"max_bytes"`
	Prefix       string `arg:"prefix"`
	Store        string `arg:"store"`
	TTL          int64  `arg:"ttl"`
	Window       int    `arg:"window"`
}

// pullOut is pull.lua's reply.
type pullOut struct {
	Status  string   `reply:"status"`
	Next    string   `reply:"next"`
	HasMore int64    `reply:"has_more"`
	Members []string `reply:"members"`
}

// trimArgs calls trim.lua.
type trimArgs struct {
	IndexKey string `key:"index"`
	Prefix   string `arg:"prefix"`
	Cutoff   int64  `arg:"cutoff"`
	TTL      int64  `arg:"ttl"`
}

// trimOut is trim.lua's reply.
type trimOut struct {
	Mark string `reply:"mark"`
}

// scripts are shared by every Store of the process; each SHA is computed once (luascript).
var scripts = struct {
	materialize *luascript.Binding[materializeArgs, materializeOut]
	pull        *luascript.Binding[pullArgs, pullOut]
	trim        *luascript.Binding[trimArgs, trimOut]
}{
	materialize: luascript.MustBind[materializeArgs, materializeOut](luaFS, "prelude.lua", "materialize.lua"),
	pull:        luascript.MustBind[pullArgs, pullOut](luaFS, "prelude.lua", "pull.lua"),
	trim:        luascript.MustBind[trimArgs, trimOut](luaFS, "prelude.lua", "trim.lua"),
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
	if err := luascript.Preload(ctx, rdb, scripts.materialize.Script(), scripts.pull.Script(), scripts.trim.Script()); err != nil {
		return fmt.Errorf("mailboxstore: %w", err)
	}
	return nil
}
