//go:build failpoints

package msgstore

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/gates/itest"
	"github.com/qim-dev/qim/services/internal/luascript/luascripttest"
)

// TestLuaFaultGroupPath is the script-fault cell for the group scripts: group_change.lua dies
// before its first write and after each one, and its retry (the same change, planned at the same
// version) must converge to the fault-free keyspace — in particular the intervals and the meta,
// which follow the commit writes and are redone from the stored seq while the meta still holds
// the planned version. group_send.lua is reserve_and_record.lua plus reads, so its fresh path
// has the same 7 writes.
//
// Writes: group_change fresh = the 7 commit writes of reserve_and_record, one HSET per user's
// interval, one HSET of the meta (CREATE of two users: 10, ADD of one: 9, LEAVE: 9).
func TestLuaFaultGroupPath(t *testing.T) {
	rdb := redis.NewClient(&redis.Options{Addr: itest.Endpoints(t).RedisCore, DB: faultDB})
	t.Cleanup(func() { _ = rdb.Close() })
	ctx, s, f := testCtx(t), New(rdb), newGroupFixture(t)
	m := luascripttest.Matrix{RDB: rdb}
	a, b := f.sender, f.sender+1

	create, add := f.change(t, contract.MembershipCreate, a, 0, a, b), f.change(t, contract.MembershipAdd, a, 1, b+1)
	leave := f.change(t, contract.MembershipLeave, b, 1, b)
	send := f.intent(t, 20)
	change := func(ch GroupChange) func(context.Context) (any, error) {
		return func(ctx context.Context) (any, error) { return s.ChangeMembership(ctx, ch) }
	}
	setup := func(chs ...GroupChange) func(context.Context) error {
		return func(ctx context.Context) error {
			for _, ch := range chs {
				if _, err := s.ChangeMembership(ctx, ch); err != nil {
					return err
				}
			}
			return nil
		}
	}
	reserve := func(ctx context.Context) (any, error) {
		cs, errs := s.ReserveAndRecord(ctx, []Intent{send})
		return cs[0], errs[0]
	}
	for _, c := range []luascripttest.Case{
		{Name: "group_change create", Script: "group_change.lua", Writes: 10, Op: change(create)},
		{Name: "group_change add", Script: "group_change.lua", Writes: 9, Setup: setup(create), Op: change(add)},
		{Name: "group_change leave", Script: "group_change.lua", Writes: 9, Setup: setup(create), Op: change(leave)},
		{Name: "group_change applied retry", Script: "group_change.lua", Writes: 0, Setup: setup(create), Op: change(create)},
		{Name: "group_send fresh", Script: "group_send.lua", Writes: 7, Setup: setup(create), Op: reserve},
	} {
		t.Run(c.Name, func(t *testing.T) { m.Check(t, ctx, c) })
	}
}
