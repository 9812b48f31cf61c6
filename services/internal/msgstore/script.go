package msgstore

import (
	"context"
	"embed"
	"fmt"
	"reflect"

	"github.com/redis/go-redis/v9"

	"github.com/qim-dev/qim/services/internal/luascript"
)

//go:embed lua/*.lua
var luaFS embed.FS

// The Go side of each script's --! header: luascript checks these types against the headers when
// the package initialises and derives every KEYS/ARGV position and reply position from them.

// reserveArgs calls reserve_and_record.lua and reserve.lua.
type reserveArgs struct {
	Commit         string `key:"commit"`
	Seq            string `key:"seq"`
	Pending        string `key:"pending"`
	Owner          string `key:"owner"`
	Identity       []byte `arg:"identity"`
	MessageID      []byte `arg:"message_id"`
	ConversationID []byte `arg:"conversation_id"`
	Record         []byte `arg:"record"` // without field 4: the script appends conversation_seq
	NowMs          int64  `arg:"now_ms"`
	HrecPrefix     string `arg:"hrec_prefix"`
	HidxPrefix     string `arg:"hidx_prefix"`
	BucketWidth    int64  `arg:"bucket_width"`
	MaxRecordBytes int64  `arg:"max_record_bytes"`
}

// groupSendArgs calls group_send.lua: the reserve call plus the group's keys and the sender.
// Record carries neither field 4 nor 17: the script appends both.
type groupSendArgs struct {
	reserveArgs
	Grp    string `key:"grp"`
	Grpmem string `key:"grpmem"`
	Sender uint64 `arg:"sender"`
}

// groupChangeArgs calls group_change.lua: the reserve call of the CONTROL message plus the change.
type groupChangeArgs struct {
	reserveArgs
	Grp        string   `key:"grp"`
	Grpmem     string   `key:"grpmem"`
	Op         int64    `arg:"op"`
	Expect     uint64   `arg:"expect"`
	MaxMembers int64    `arg:"max_members"`
	GroupOwner uint64   `arg:"owner"`
	Name       string   `arg:"name"`
	Crq        string   `arg:"crq"`
	Users      []string `arg:"users"`
}

// recordArgs calls record.lua.
type recordArgs struct {
	Commit         string `key:"commit"`
	Seq            string `key:"seq"`
	ConversationID []byte `arg:"conversation_id"`
	HrecPrefix     string `arg:"hrec_prefix"`
	HidxPrefix     string `arg:"hidx_prefix"`
	BucketWidth    int64  `arg:"bucket_width"`
}

// markArgs calls mark_committed.lua: the commits of a batch as parallel slices.
type markArgs struct {
	Pending       string   `key:"pending"`
	Commit        []string `key:"commit"`
	Owner         []string `key:"owner"`
	Shrunk        []string `key:"shrunk"`
	Htrim         []string `key:"htrim"`
	WindowMs      int64    `arg:"window_ms"`
	CommittedAtMs []string `arg:"committed_at_ms"`
	TrimConv      []string `arg:"trim_conv"`
}

// trimArgs calls trim.lua.
type trimArgs struct {
	Htrim        string `key:"htrim"`
	CutoffMs     int64  `arg:"cutoff_ms"`
	Limit        int64  `arg:"limit"`
	HrecPrefix   string `arg:"hrec_prefix"`
	HidxPrefix   string `arg:"hidx_prefix"`
	HfloorPrefix string `arg:"hfloor_prefix"`
	BucketWidth  int64  `arg:"bucket_width"`
}

// trimReply is the reply of trim.lua.
type trimReply struct {
	Trimmed int64  `reply:"trimmed"`
	Held    int64  `reply:"held"`
	More    string `reply:"more"`
}

// storedCommit is a commit hash as strings, empty when absent: the reply of the commit scripts
// after their kind, and what LoadCommit reads with HMGET.
type storedCommit struct {
	St  string `reply:"st" redis:"st"`
	Mid string `reply:"mid" redis:"mid"`
	Seq string `reply:"seq" redis:"seq"`
	Rec string `reply:"rec" redis:"rec"`
	Rat string `reply:"rat" redis:"rat"`
	Cat string `reply:"cat" redis:"cat"`
	Cid string `reply:"cid" redis:"cid"`
	Idn string `reply:"idn" redis:"idn"`
}

// commitReply is the reply of reserve_and_record, reserve and record: kind 'F' fresh, 'E'
// existing, 'X' identity conflict, then the commit.
type commitReply struct {
	Kind string `reply:"kind"`
	storedCommit
}

// markReply is the reply of mark_committed.lua: per commit "C:<committed_at_ms>" or its error.
type markReply struct {
	Results []string `reply:"results"`
}

type (
	groupSendBinding   = luascript.Binding[groupSendArgs, commitReply]
	groupChangeBinding = luascript.Binding[groupChangeArgs, commitReply]
	reserveBinding     = luascript.Binding[reserveArgs, commitReply]
	recordBinding      = luascript.Binding[recordArgs, commitReply]
	markBinding        = luascript.Binding[markArgs, markReply]
	trimBinding        = luascript.Binding[trimArgs, trimReply]
	amendBinding       = luascript.Binding[amendArgs, amendReply]
	reactBinding       = luascript.Binding[reactArgs, reactReply]
)

// scripts are shared by every Store: the SHA is computed once per process, never per call.
var scripts = func() scriptSet {
	s := scriptSet{
		reserveAndRecord: luascript.MustBind[reserveArgs, commitReply](luaFS, "prelude.lua", "reserve_and_record.lua"),
		reserve:          luascript.MustBind[reserveArgs, commitReply](luaFS, "prelude.lua", "reserve.lua"),
		record:           luascript.MustBind[recordArgs, commitReply](luaFS, "prelude.lua", "record.lua"),
		markCommitted:    luascript.MustBind[markArgs, markReply](luaFS, "prelude.lua", "mark_committed.lua"),
		groupSend:        luascript.MustBind[groupSendArgs, commitReply](luaFS, "prelude.lua", "group_send.lua"),
		groupChange:      luascript.MustBind[groupChangeArgs, commitReply](luaFS, "prelude.lua", "group_change.lua"),
		trim:             luascript.MustBind[trimArgs, trimReply](luaFS, "prelude.lua", "trim.lua"),
		amend:            luascript.MustBind[amendArgs, amendReply](luaFS, "prelude.lua", "amend.lua"),
		react:            luascript.MustBind[reactArgs, reactReply](luaFS, "prelude.lua", "react.lua"),
	}
	// commitResult decodes the replies of all three commit scripts with one binding; that is
	// sound only while their reply lines are the same.
	want := s.reserveAndRecord.Script().Interface().Reply
	for _, sc := range []*luascript.Script{s.reserve.Script(), s.record.Script(), s.groupSend.Script(), s.groupChange.Script()} {
		if !reflect.DeepEqual(sc.Interface().Reply, want) {
			panic("msgstore: " + sc.Name() + " must declare the commit reply of reserve_and_record.lua")
		}
	}
	return s
}()

type scriptSet struct {
	reserveAndRecord, reserve *reserveBinding
	record                    *recordBinding
	markCommitted             *markBinding
	groupSend                 *groupSendBinding
	groupChange               *groupChangeBinding
	trim                      *trimBinding
	amend                     *amendBinding
	react                     *reactBinding
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
