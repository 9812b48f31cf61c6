//go:build failpoints

package identity

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/qim-dev/qim/gates/itest"
	"github.com/qim-dev/qim/services/internal/luascript/luascripttest"
)

// faultDB is the core Redis database the script-fault matrix flushes before every run: one of
// its own (the msgstore matrix uses 11), so no other test's keys are touched.
const faultDB = 13

// TestLuaFaultIdentity is the "Lua script fault" chaos cell for the writer's identity: every
// script of this package dies before its write and right after it (luascripttest.Case states
// the property). Each performs at most one write, so a fault can only land before it (nothing
// written) or after it (the retry, the caller's own with the same owner or claim_id, must
// answer as a fault-free run or its retry would). Covered, one row per code path:
// lease_claim.lua (lowest free id, an id the owner already holds, none free),
// lease_claim_fixed.lua (free, ours, another's), lease_renew.lua (ours, lost),
// lease_release.lua (ours, another's), claim_window.lua (first window, next window, retry of
// the claim that set the high-water mark). The calls go through the scripts' bindings with the
// arguments Lease and Issuer send; the owner and claim ids are fixed instead of random.
//
// Run: go test -tags failpoints -run TestLuaFault ./services/...
func TestLuaFaultIdentity(t *testing.T) {
	rdb := redis.NewClient(&redis.Options{Addr: itest.Endpoints(t).RedisCore, DB: faultDB})
	t.Cleanup(func() { _ = rdb.Close() })
	ctx := t.Context()
	m := luascripttest.Matrix{RDB: rdb}

	const region, ttl = 7, 30_000
	prefix := string(appendLeasePrefix(nil, region))
	lease := LeaseKey(region, 3)
	hlc := HLCKey(region, 3)
	const me, other = "0123456789abcdef0123456789abcdef", "fedcba9876543210fedcba9876543210"

	held := func(owners map[string]string) func(context.Context) error {
		return func(ctx context.Context) error {
			for k, o := range owners {
				if err := rdb.Set(ctx, k, o, ttl*time.Millisecond).Err(); err != nil {
					return err
				}
			}
			return nil
		}
	}
	claim := func(ctx context.Context) (any, error) {
		return leaseClaimScript.Do(ctx, rdb, &leaseClaimArgs{Prefix: prefix, MaxWriters: 2, Owner: me, TTLMs: ttl})
	}
	fixed := func(ctx context.Context) (any, error) {
		return leaseClaimFixedScript.Do(ctx, rdb, &leaseArgs{Lease: lease, Owner: me, TTLMs: ttl})
	}
	renew := func(ctx context.Context) (any, error) {
		return leaseRenewScript.Do(ctx, rdb, &leaseArgs{Lease: lease, Owner: me, TTLMs: ttl})
	}
	release := func(ctx context.Context) (any, error) {
		return leaseReleaseScript.Do(ctx, rdb, &leaseReleaseArgs{Lease: lease, Owner: me})
	}
	window := func(now int64, id string) func(context.Context) (any, error) {
		return func(ctx context.Context) (any, error) {
			return claimWindowScript.Do(ctx, rdb, &claimWindowArgs{HLC: hlc, NowMs: now, WindowMs: 1000, FloorMs: 0, ClaimID: id})
		}
	}
	after := func(op func(context.Context) (any, error)) func(context.Context) error {
		return func(ctx context.Context) error { _, err := op(ctx); return err }
	}
	const t0 = 1_700_000_000_000

	for _, c := range []luascripttest.Case{
		{Name: "lease_claim lowest free id", Script: "lease_claim.lua", Writes: 1,
			Setup: held(map[string]string{prefix + "0": other}), Op: claim},
		{Name: "lease_claim id already ours", Script: "lease_claim.lua", Writes: 1,
			Setup: held(map[string]string{prefix + "1": me}), Op: claim},
		{Name: "lease_claim none free", Script: "lease_claim.lua", Writes: 0,
			Setup: held(map[string]string{prefix + "0": other, prefix + "1": other}), Op: claim},
		{Name: "lease_claim_fixed free", Script: "lease_claim_fixed.lua", Writes: 1, Op: fixed},
		{Name: "lease_claim_fixed ours", Script: "lease_claim_fixed.lua", Writes: 1,
			Setup: held(map[string]string{lease: me}), Op: fixed},
		{Name: "lease_claim_fixed another's", Script: "lease_claim_fixed.lua", Writes: 0,
			Setup: held(map[string]string{lease: other}), Op: fixed},
		{Name: "lease_renew ours", Script: "lease_renew.lua", Writes: 1,
			Setup: held(map[string]string{lease: me}), Op: renew},
		{Name: "lease_renew lost", Script: "lease_renew.lua", Writes: 0,
			Setup: held(map[string]string{lease: other}), Op: renew},
		{Name: "lease_release ours", Script: "lease_release.lua", Writes: 1,
			Setup: held(map[string]string{lease: me}), Op: release},
		{Name: "lease_release another's", Script: "lease_release.lua", Writes: 0,
			Setup: held(map[string]string{lease: other}), Op: release},
		{Name: "claim_window first", Script: "claim_window.lua", Writes: 1, Op: window(t0, "c:1")},
		{Name: "claim_window next", Script: "claim_window.lua", Writes: 1,
			Setup: after(window(t0, "c:1")), Op: window(t0, "c:2")},
		{Name: "claim_window retry of the last claim", Script: "claim_window.lua", Writes: 0,
			Setup: after(window(t0, "c:1")), Op: window(t0+5, "c:1")},
	} {
		t.Run(c.Name, func(t *testing.T) { m.Check(t, ctx, c) })
	}
}
