//go:build failpoints

package mailboxstore

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/gates/itest"
	"github.com/qim-dev/qim/services/internal/luascript/luascripttest"
)

// faultDB is the mailbox Redis database the script-fault matrix flushes before every run: one of
// its own, so the other tests' keys in database 0 are never touched.
const faultDB = 12

// TestLuaFaultMailbox is the "Lua script fault" chaos cell for the mailbox: every mutating
// script of this package dies before its first write and right after each of its writes
// (luascripttest.Case states the property: all-or-nothing, or a retry with the same arguments
// converges to the fault-free keyspace and reply). Covered, one row per code path:
// materialize.lua (fresh on an empty shard, fresh after a watermark, a batch of two, a duplicate
// dispatch, a retry the watermark covers, a digest conflict), pull.lua — a read that also writes
// the device cursor and the user's trim mark — (cursor stored, cursor kept because the stored one
// is ahead, a day bucket expired, everything expired), trim.lua (days removed, nothing to
// remove). OpenShards is a plain SETNX, no script.
//
// Run: go test -tags failpoints -run TestLuaFault ./services/...
func TestLuaFaultMailbox(t *testing.T) {
	rdb := redis.NewClient(&redis.Options{Addr: itest.Endpoints(t).RedisMailbox, DB: faultDB})
	t.Cleanup(func() { _ = rdb.Close() })
	n, _ := contract.NewShardCount(testShards)
	f := &fix{t: t, rdb: rdb, store: New(rdb, n), ctx: t.Context(), shard: 7, tenant: randU128(t), ep: 1}
	ctx, s := f.ctx, f.store
	m := luascripttest.Matrix{RDB: rdb}

	u1, u2 := f.user(), f.user()
	d0, d1, d2 := newDispatchID(t), newDispatchID(t), newDispatchID(t)
	m0 := f.mat(d0, 0xa0, 0, testDay, u1, u2)
	m1 := f.mat(d1, 0xa1, 1, testDay, u1, u2)
	dup := f.mat(d0, 0xa0, 1, testDay, u1, u2)      // d0 again at the next offset
	conflict := f.mat(d0, 0xee, 1, testDay, u1, u2) // d0 again with another digest
	// u1's history over three days, for the expiry and trim paths.
	old0 := f.mat(d0, 0xa0, 0, testDay-2, u1)
	old1 := f.mat(d1, 0xa1, 1, testDay-1, u1)
	now2 := f.mat(d2, 0xa2, 2, testDay, u1)

	open := func(ctx context.Context) error { _, err := s.OpenShards(ctx, []uint32{f.shard}); return err }
	apply := func(ms ...Materialization) func(context.Context) (any, error) {
		return func(ctx context.Context) (any, error) { return s.Materialize(ctx, ms) }
	}
	setup := func(steps ...func(context.Context) (any, error)) func(context.Context) error {
		return func(ctx context.Context) error {
			if err := open(ctx); err != nil {
				return err
			}
			for _, st := range steps {
				if _, err := st(ctx); err != nil {
					return err
				}
			}
			return nil
		}
	}
	pull := func(cursor contract.MailboxSeq) func(context.Context) (any, error) {
		return func(ctx context.Context) (any, error) {
			return s.Pull(ctx, PullQuery{Tenant: f.tenant, User: u1, Device: "dev", Cursor: cursor,
				Limit: 10, MaxBytes: 1 << 20, StoreCursor: true})
		}
	}
	// expire deletes keys as their EXPIREAT would have.
	expire := func(keys ...string) func(context.Context) (any, error) {
		return func(ctx context.Context) (any, error) { return nil, rdb.Del(ctx, keys...).Err() }
	}
	uk := newUserKeys(f.shard, f.tenant, u1)
	seq0, seq1 := seqOf(t, f.ep, 0), seqOf(t, f.ep, 1)

	for _, c := range []luascripttest.Case{
		{Name: "materialize fresh on an empty shard", Script: "materialize.lua", Writes: 10,
			Setup: setup(), Op: apply(m0)},
		{Name: "materialize fresh after a watermark", Script: "materialize.lua", Writes: 6,
			Setup: setup(apply(m0)), Op: apply(m1)},
		{Name: "materialize batch of two, fault in the first", Script: "materialize.lua", Writes: 10,
			Setup: setup(), Op: apply(m0, m1)},
		{Name: "materialize duplicate dispatch", Script: "materialize.lua", Writes: 1,
			Setup: setup(apply(m0)), Op: apply(dup)},
		{Name: "materialize retry covered by the watermark", Script: "materialize.lua", Writes: 0,
			Setup: setup(apply(m0)), Op: apply(m0)},
		{Name: "materialize digest conflict", Script: "materialize.lua", Writes: 0,
			Setup: setup(apply(m0)), Op: apply(conflict)},
		{Name: "pull storing the cursor", Script: "pull.lua", Writes: 1,
			Setup: setup(apply(m0, m1)), Op: pull(seq0)},
		{Name: "pull with the stored cursor ahead", Script: "pull.lua", Writes: 1,
			Setup: setup(apply(m0, m1), pull(seq1)), Op: pull(seq0)},
		{Name: "pull after a day bucket expired", Script: "pull.lua", Writes: 3,
			Setup: setup(apply(old0, old1, now2), expire(uk.bucketKey(testDay-2), uk.bucketKey(testDay-1))), Op: pull(seq0)},
		{Name: "pull after everything expired", Script: "pull.lua", Writes: 3,
			Setup: setup(apply(m0, m1), expire(uk.index, uk.bucketKey(testDay))), Op: pull(seq0)},
		{Name: "trim days below the cutoff", Script: "trim.lua", Writes: 4,
			Setup: setup(apply(old0, old1, now2)),
			Op:    func(ctx context.Context) (any, error) { return s.TrimBefore(ctx, f.tenant, u1, testDay) }},
		{Name: "trim with nothing to remove", Script: "trim.lua", Writes: 0,
			Setup: setup(apply(old0, old1, now2)),
			Op:    func(ctx context.Context) (any, error) { return s.TrimBefore(ctx, f.tenant, u1, testDay-2) }},
	} {
		t.Run(c.Name, func(t *testing.T) { m.Check(t, ctx, c) })
	}
}
