//go:build failpoints

package luascript

import (
	"context"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
)

// Script faults, compiled in only with `-tags failpoints` (house rule 8): one call of one script
// dies with a Lua error at an exact write, so a test can show what a script leaves behind —
// Redis does not roll back the writes a script made before it failed — and whether the caller's
// retry converges.
//
// How: the armed call goes out as EVAL of a rewritten source instead of EVALSHA. The rewrite puts,
// on the source's first line (so the script's line numbers do not move), a local named redis that
// shadows the global for the whole chunk: prologue, base.lua, the store's prelude and the body all
// resolve redis to it, also through aliases (local call = redis.call) and helpers. Its call and
// pcall look each command up in writeCommands and readCommands, count the writes and raise
// "qim injected fault after write k (CMD)" right after the k-th (k = 0: before the first). A
// command in neither list fails the call with a hook error, so a script that starts using a new
// command cannot have its writes miscounted in silence. After the fault every redis.call and
// redis.pcall raises it again, so a script that catches the error with pcall still writes nothing
// more. The error reply is an ordinary script error (ERR user_script:...): each store passes it
// through like any unexpected reply.
//
// Rejected: an unexported package variable set from an export_test.go (only luascript's own tests
// could arm it, never the stores'); an exported variable in the normal build (production would
// carry the hook and a check per call); one process-wide armed fault (a parallel test calling the
// same script would take it): the fault rides in the context of the call it is meant for.

// Fault arms one call of one script (see WithFault).
type Fault struct {
	// Script is the script's file name (Script.Name), e.g. "reserve_and_record.lua".
	Script string
	// After is the write the script dies after: 0 before its first write, k ≥ 1 right after its
	// k-th. A call that performs fewer than After writes (or none, for After = 0) runs to its end
	// unharmed: the caller sees that as "no injected fault" and knows the path's write count.
	After int

	used atomic.Bool
}

// Used reports whether a call of f.Script took the fault (ran the rewritten source), whether or
// not it reached the write the fault names.
func (f *Fault) Used() bool { return f.used.Load() }

type faultKey struct{}

// WithFault returns ctx armed with f: the first call of f.Script run by Run or Binding.Do under
// the returned context runs the faulty source; every later call (and every other script) runs
// normally. One context carries one fault.
func WithFault(ctx context.Context, f *Fault) context.Context {
	return context.WithValue(ctx, faultKey{}, f)
}

// FaultMarker starts the message of every injected fault.
const FaultMarker = "qim injected fault"

// IsInjectedFault reports whether err (however wrapped) carries an injected fault's error reply.
func IsInjectedFault(err error) bool { return err != nil && strings.Contains(err.Error(), FaultMarker) }

func faultSource(ctx context.Context, sc *Script) (string, bool) {
	f, _ := ctx.Value(faultKey{}).(*Fault)
	if f == nil || f.Script != sc.name || !f.used.CompareAndSwap(false, true) {
		return "", false
	}
	return FaultSource(sc.src, f.After), true
}

// FaultSource is src (a full script as Redis runs it) rewritten to die at write after; the
// result has the same number of lines as src.
func FaultSource(src string, after int) string {
	return faultPreamble + strconv.Itoa(after) + "); " + src
}

// writeCommands are the Redis commands with the "write" flag a script may call (Redis 7.0;
// TestLuaFaultHookCommandLists checks every entry against the server's COMMAND INFO). A write
// that did not change anything (SET NX on an existing key, ZREM of an absent member) still
// counts: the fault is placed by command, not by effect. Container commands (XGROUP, XINFO, OBJECT) are in
// neither list: their flags are their subcommands', which COMMAND INFO does not show here.
var writeCommands = []string{
	"APPEND", "BITFIELD", "BITOP", "COPY", "DECR", "DECRBY", "DEL", "EXPIRE", "EXPIREAT",
	"GEOADD", "GEOSEARCHSTORE", "GETDEL", "GETEX", "GETSET", "HDEL", "HINCRBY", "HINCRBYFLOAT",
	"HMSET", "HSET", "HSETNX", "INCR", "INCRBY", "INCRBYFLOAT", "LINSERT", "LMOVE", "LMPOP",
	"LPOP", "LPUSH", "LPUSHX", "LREM", "LSET", "LTRIM", "MOVE", "MSET", "MSETNX", "PERSIST",
	"PEXPIRE", "PEXPIREAT", "PFADD", "PFMERGE", "PSETEX", "RENAME", "RENAMENX",
	"RESTORE", "RPOP", "RPOPLPUSH", "RPUSH", "RPUSHX", "SADD", "SDIFFSTORE", "SET", "SETBIT",
	"SETEX", "SETNX", "SETRANGE", "SINTERSTORE", "SMOVE", "SORT", "SPOP", "SREM", "SUNIONSTORE",
	"UNLINK", "XACK", "XADD", "XAUTOCLAIM", "XCLAIM", "XDEL", "XREADGROUP", "XSETID",
	"XTRIM", "ZADD", "ZDIFFSTORE", "ZINCRBY", "ZINTERSTORE", "ZMPOP", "ZPOPMAX", "ZPOPMIN",
	"ZRANGESTORE", "ZREM", "ZREMRANGEBYLEX", "ZREMRANGEBYRANK", "ZREMRANGEBYSCORE", "ZUNIONSTORE",
}

// readCommands are the commands without the "write" flag the hook lets through uncounted.
var readCommands = []string{
	"BITCOUNT", "BITFIELD_RO", "BITPOS", "DBSIZE", "DUMP", "ECHO", "EXISTS", "EXPIRETIME",
	"GEODIST", "GEOHASH", "GEOPOS", "GEOSEARCH", "GET", "GETBIT", "GETRANGE", "HEXISTS", "HGET",
	"HGETALL", "HKEYS", "HLEN", "HMGET", "HRANDFIELD", "HSCAN", "HSTRLEN", "HVALS", "KEYS", "LCS",
	"LINDEX", "LLEN", "LPOS", "LRANGE", "MGET", "PEXPIRETIME", "PFCOUNT", "PING", "PTTL", "RANDOMKEY",
	"SCAN", "SCARD", "SDIFF", "SINTER", "SINTERCARD", "SISMEMBER", "SMEMBERS", "SMISMEMBER",
	"SORT_RO", "SRANDMEMBER", "SSCAN", "STRLEN", "SUBSTR", "SUNION", "TIME", "TOUCH", "TTL",
	"TYPE", "XLEN", "XPENDING", "XRANGE", "XREAD", "XREVRANGE", "ZCARD", "ZCOUNT",
	"ZDIFF", "ZINTER", "ZINTERCARD", "ZLEXCOUNT", "ZMSCORE", "ZRANDMEMBER", "ZRANGE",
	"ZRANGEBYLEX", "ZRANGEBYSCORE", "ZRANK", "ZREVRANGE", "ZREVRANGEBYLEX", "ZREVRANGEBYSCORE",
	"ZREVRANK", "ZSCAN", "ZSCORE", "ZUNION",
}

// faultPreamble is the Lua FaultSource puts before a script, one line, up to the write's number.
var faultPreamble = regexp.MustCompile(`\n\s*`).ReplaceAllString(`local redis = (function(real, after)
	local W, R = {`+luaSet(writeCommands)+`}, {`+luaSet(readCommands)+`};
	local n, dead = 0, nil;
	local function wrap(f)
		return function(cmd, ...)
			if dead then error(dead, 2) end;
			local c = string.upper(tostring(cmd));
			if W[c] then
				if after == 0 then dead = '`+FaultMarker+` before write 1 (' .. c .. ')'; error(dead, 2) end;
				local r = f(cmd, ...);
				n = n + 1;
				if n == after then dead = '`+FaultMarker+` after write ' .. n .. ' (' .. c .. ')'; error(dead, 2) end;
				return r
			end;
			if not R[c] then error('luascript fault hook: ' .. c .. ' is in neither the write nor the read list', 2) end;
			return f(cmd, ...)
		end
	end;
	return setmetatable({call = wrap(real.call), pcall = wrap(real.pcall)}, {__index = real})
end)(redis, `, " ")

// luaSet renders names as the fields of a Lua table constructor: NAME=true, ...
func luaSet(names []string) string {
	s := slices.Clone(names)
	for i, n := range s {
		s[i] = n + "=true"
	}
	return strings.Join(s, ", ")
}
