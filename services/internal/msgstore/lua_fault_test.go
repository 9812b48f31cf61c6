//go:build failpoints

package msgstore

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/qim-dev/qim/gates/itest"
	"github.com/qim-dev/qim/services/internal/luascript/luascripttest"
)

// faultDB is the core Redis database the script-fault matrix flushes before every run: one of
// its own, so the other tests' keys in database 0 are never touched.
const faultDB = 11

// TestLuaFaultCommitPath is the "Lua script fault" chaos cell for the writer's commit path: every
// mutating script of this package dies before its first write and right after each of its writes
// (luascripttest.Case states the property: all-or-nothing, or a retry with the same arguments
// converges to the fault-free keyspace and reply). Covered, one row per code path:
// reserve_and_record.lua (fresh; existing commit reserved, recorded or committed; identity
// conflict; client_message_id owned by another conversation), reserve.lua (fresh), record.lua
// (reserved; already recorded), mark_committed.lua (recorded; already committed), trim.lua (one
// due candidate). There are no
// read-only scripts here (history pages and LoadCommit are plain reads).
//
// The writes, in order: reserve_and_record.lua fresh 1 HSET commit (R), 2 INCR seq, 3 SET owner,
// 4 ZADD recovery index, 5 SET history record, 6 ZADD history index, 7 HSET st = D (reserve.lua:
// 1-4); record.lua and the fused path on a reserved commit 5-7; mark_committed.lua on a recorded
// commit 1 HSET shrunk hash, 2 RENAME it over the commit, 3 ZADD trim candidate, 4 PEXPIREAT
// commit, 5 SET owner PXAT, 6 ZREM recovery index (on a committed one 3-6); trim.lua on one due
// candidate 1 SET hot floor, 2 DEL record, 3 ZREM index member, 4 ZREM candidate.
//
// Run: go test -tags failpoints -run TestLuaFault ./services/...
func TestLuaFaultCommitPath(t *testing.T) {
	rdb := redis.NewClient(&redis.Options{Addr: itest.Endpoints(t).RedisCore, DB: faultDB})
	t.Cleanup(func() { _ = rdb.Close() })
	ctx, s, f := testCtx(t), New(rdb), newFixture(t)
	m := luascripttest.Matrix{RDB: rdb}

	in := f.intent(t, 40)
	other := in // the same idempotency key, another request
	other.Identity[35] ^= 1
	otherConv := f.intent(t, 40) // the same client_message_id, another conversation
	otherConv.Key.ClientMessageID = in.Key.ClientMessageID
	f2 := newFixture(t)
	otherConv.Key.Tenant, otherConv.Key.Sender = f.tenant, f.sender
	otherConv.Key.Conversation = f2.conv
	committedAt := time.Now().UnixMilli() // fixed: mark_committed's expiry is absolute from it

	reserve := func(in Intent) func(context.Context) (any, error) {
		return func(ctx context.Context) (any, error) {
			cs, errs := s.ReserveAndRecord(ctx, []Intent{in})
			return cs[0], errs[0]
		}
	}
	mark := func(ctx context.Context) (any, error) {
		return nil, errors.Join(s.MarkCommitted(ctx, []MarkRequest{{Key: in.Key, CommittedAtMs: committedAt}})...)
	}
	steps := func(ops ...func(context.Context) (any, error)) func(context.Context) error {
		return func(ctx context.Context) error {
			for _, op := range ops {
				if _, err := op(ctx); err != nil {
					return err
				}
			}
			return nil
		}
	}
	reserveR := func(ctx context.Context) (any, error) { return s.Reserve(ctx, in) }
	record := func(ctx context.Context) (any, error) { return s.Record(ctx, in.Key) }
	// One bucket's call: the matrix faults the script's first invocation, and TrimHot's first
	// is bucket 000's, which holds nothing here.
	trim := func(ctx context.Context) (any, error) {
		return s.trimTags(ctx, committedAt, 100, []string{tagOf(f.tenant, f.conv)})
	}

	for _, c := range []luascripttest.Case{
		{Name: "reserve_and_record fresh", Script: "reserve_and_record.lua", Writes: 7, Op: reserve(in)},
		{Name: "reserve_and_record existing reserved", Script: "reserve_and_record.lua", Writes: 3,
			Setup: steps(reserveR), Op: reserve(in)},
		{Name: "reserve_and_record existing recorded", Script: "reserve_and_record.lua", Writes: 0,
			Setup: steps(reserve(in)), Op: reserve(in)},
		{Name: "reserve_and_record existing committed", Script: "reserve_and_record.lua", Writes: 0,
			Setup: steps(reserve(in), mark), Op: reserve(in)},
		{Name: "reserve_and_record identity conflict", Script: "reserve_and_record.lua", Writes: 0,
			Setup: steps(reserve(in)), Op: reserve(other)},
		{Name: "reserve_and_record owned by another conversation", Script: "reserve_and_record.lua", Writes: 0,
			Setup: steps(reserve(in)), Op: reserve(otherConv)},
		{Name: "reserve fresh", Script: "reserve.lua", Writes: 4, Op: reserveR},
		{Name: "record reserved", Script: "record.lua", Writes: 3, Setup: steps(reserveR), Op: record},
		{Name: "record already recorded", Script: "record.lua", Writes: 0, Setup: steps(reserveR, record), Op: record},
		{Name: "mark_committed recorded", Script: "mark_committed.lua", Writes: 6, Setup: steps(reserve(in)), Op: mark},
		{Name: "mark_committed already committed", Script: "mark_committed.lua", Writes: 4,
			Setup: steps(reserve(in), mark), Op: mark},
		{Name: "trim a due candidate", Script: "trim.lua", Writes: 4, Setup: steps(reserve(in), mark), Op: trim},
	} {
		t.Run(c.Name, func(t *testing.T) { m.Check(t, ctx, c) })
	}
}
