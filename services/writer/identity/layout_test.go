package identity

import (
	"context"
	"strconv"
	"testing"
	"time"
)

// The layout tests run each script through its typed binding with values that differ from each
// other, and check every reply field and what the script left in Redis: a swapped name in a
// header, a Go type or a script body shows up as a wrong field, TTL or owner.

func TestLayoutClaimWindow(t *testing.T) {
	rdb := coreRedis(t)
	region := testRegion(t, rdb, 3)
	ctx := context.Background()
	key := HLCKey(region, 2)
	const now, window = int64(1_700_000_000_000), int64(60_000)
	steps := []struct {
		name string
		in   claimWindowArgs
		want claimWindowOut
	}{
		{"first", claimWindowArgs{HLC: key, NowMs: now, WindowMs: window, FloorMs: 5, ClaimID: "x:7"},
			claimWindowOut{Start: now, Finish: now + window}},
		{"retry", claimWindowArgs{HLC: key, NowMs: now + 9, WindowMs: 1, FloorMs: 6, ClaimID: "x:7"},
			claimWindowOut{Start: now, Finish: now + window}},
		{"above the floor", claimWindowArgs{HLC: key, NowMs: now, WindowMs: 1000, FloorMs: now + window + 500, ClaimID: "x:8"},
			claimWindowOut{Start: now + window + 500, Finish: now + window + 1500}},
	}
	for _, s := range steps {
		got, err := claimWindowScript.Do(ctx, rdb, &s.in)
		if err != nil || got != s.want {
			t.Fatalf("%s: %+v, %v; want %+v", s.name, got, err, s.want)
		}
		h := rdb.HGetAll(ctx, key).Val()
		if h["hw"] != strconv.FormatInt(s.want.Finish, 10) || h["start"] != strconv.FormatInt(s.want.Start, 10) || h["claim"] != s.in.ClaimID {
			t.Errorf("%s: stored %q", s.name, h)
		}
	}
}

// lease_claim takes the lowest free id, answers a retry with the same id and -1 when all are held;
// lease_claim_fixed, lease_renew and lease_release act for their owner only.
func TestLayoutLeaseScripts(t *testing.T) {
	rdb := coreRedis(t)
	region := testRegion(t, rdb, 3)
	ctx := context.Background()
	prefix := string(appendLeasePrefix(nil, region))
	rdb.Set(ctx, LeaseKey(region, 0), "someone-else", time.Minute)
	claim := func(owner string, ttl int64) int64 {
		r, err := leaseClaimScript.Do(ctx, rdb, &leaseClaimArgs{Prefix: prefix, MaxWriters: 3, Owner: owner, TTLMs: ttl})
		if err != nil {
			t.Fatalf("lease_claim %s: %v", owner, err)
		}
		return r.WriterID
	}
	for _, s := range []struct {
		owner string
		ttl   int64
		want  int64
	}{{"owner-a", 4321, 1}, {"owner-a", 4321, 1}, {"owner-b", 3210, 2}, {"owner-c", 2100, -1}} {
		if got := claim(s.owner, s.ttl); got != s.want {
			t.Errorf("lease_claim %s = %d, want %d", s.owner, got, s.want)
		}
		if s.want < 0 {
			continue
		}
		k := LeaseKey(region, uint16(s.want))
		if v, ttl := rdb.Get(ctx, k).Val(), rdb.PTTL(ctx, k).Val(); v != s.owner || ttl <= 0 || ttl > time.Duration(s.ttl)*time.Millisecond {
			t.Errorf("lease %d holds %q with PTTL %v, want %s and at most %d ms", s.want, v, ttl, s.owner, s.ttl)
		}
	}

	key := LeaseKey(region, 2) // held by owner-b
	fixed := func(owner string, ttl int64) int64 {
		r, err := leaseClaimFixedScript.Do(ctx, rdb, &leaseArgs{Lease: key, Owner: owner, TTLMs: ttl})
		if err != nil {
			t.Fatal(err)
		}
		return r.Held
	}
	renew := func(owner string, ttl int64) int64 {
		r, err := leaseRenewScript.Do(ctx, rdb, &leaseArgs{Lease: key, Owner: owner, TTLMs: ttl})
		if err != nil {
			t.Fatal(err)
		}
		return r.Renewed
	}
	release := func(owner string) int64 {
		r, err := leaseReleaseScript.Do(ctx, rdb, &leaseReleaseArgs{Lease: key, Owner: owner})
		if err != nil {
			t.Fatal(err)
		}
		return r.Released
	}
	steps := []struct {
		name   string
		run    func() int64
		want   int64
		holder string
		minTTL time.Duration // the PTTL afterwards is above it (the call set the TTL), 0: unchecked
	}{
		{"fixed claim of a held id", func() int64 { return fixed("owner-x", 9000) }, 0, "owner-b", 0},
		{"fixed claim by its owner", func() int64 { return fixed("owner-b", 60_000) }, 1, "owner-b", 10 * time.Second},
		{"renew by another owner", func() int64 { return renew("owner-x", 1) }, 0, "owner-b", 10 * time.Second},
		{"renew by its owner", func() int64 { return renew("owner-b", 120_000) }, 1, "owner-b", 60 * time.Second},
		{"release by another owner", func() int64 { return release("owner-x") }, 0, "owner-b", 60 * time.Second},
		{"release by its owner", func() int64 { return release("owner-b") }, 1, "", 0},
		{"release retry", func() int64 { return release("owner-b") }, 0, "", 0},
		{"fixed claim of a free id", func() int64 { return fixed("owner-x", 9000) }, 1, "owner-x", time.Second},
	}
	for _, s := range steps {
		if got := s.run(); got != s.want {
			t.Errorf("%s = %d, want %d", s.name, got, s.want)
		}
		if v := rdb.Get(ctx, key).Val(); v != s.holder {
			t.Errorf("%s: lease holds %q, want %q", s.name, v, s.holder)
		}
		if ttl := rdb.PTTL(ctx, key).Val(); s.minTTL > 0 && ttl <= s.minTTL {
			t.Errorf("%s: PTTL %v, want above %v", s.name, ttl, s.minTTL)
		}
	}
}
