package identity

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/qim-dev/qim/contract"
	"github.com/redis/go-redis/v9"
)

const t0 = int64(1_760_000_000_000) // a fixed wall clock for the fake-clock tests

func startIssuer(t *testing.T, rdb redis.Scripter, region, writer uint16, clk *fakeClock, opts ...IssuerOption) *Issuer {
	t.Helper()
	is, err := NewIssuer(rdb, region, writer, append([]IssuerOption{WithClock(clk.Now)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	if err := is.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	return is
}

func issue(t *testing.T, is *Issuer, n int) []contract.MessageID {
	t.Helper()
	ids, err := is.NextBatch(nil, n)
	if err != nil {
		t.Fatal(err)
	}
	return ids
}

// requireAbove fails unless every id of later is greater than every id of earlier.
func requireAbove(t *testing.T, what string, earlier, later []contract.MessageID) {
	t.Helper()
	maxEarlier, minLater := earlier[0], later[0]
	for _, id := range earlier {
		if id.Compare(maxEarlier) > 0 {
			maxEarlier = id
		}
	}
	for _, id := range later {
		if id.Compare(minLater) < 0 {
			minLater = id
		}
	}
	if minLater.Compare(maxEarlier) <= 0 {
		t.Fatalf("%s: id %s reuses or precedes earlier id %s", what, minLater, maxEarlier)
	}
}

// The failure invariant 4 of docs/architecture.md rules out: a fixed writer_id restarted with its
// clock set back 10 minutes, or restarted in the same millisecond, must never issue an id already
// issued.
func TestIssuerRestartNeverReusesIDs(t *testing.T) {
	rdb := coreRedis(t)
	region := testRegion(t, rdb, 4)
	const writer = 3
	a := startIssuer(t, rdb, region, writer, newFakeClock(t0))
	idsA := issue(t, a, 1000)
	for _, id := range idsA {
		if id.RegionID() != region || id.WriterID() != writer || id.TimeMs() != uint64(t0) {
			t.Fatalf("id %s: fields", id)
		}
	}
	b := startIssuer(t, rdb, region, writer, newFakeClock(t0-10*60*1000)) // clock set back
	idsB := issue(t, b, 1000)
	requireAbove(t, "clock set back 10 min", idsA, idsB)
	c := startIssuer(t, rdb, region, writer, newFakeClock(t0)) // same clock as A
	idsC := issue(t, c, 1000)
	requireAbove(t, "restart with the same clock", idsB, idsC)
	if hw := storedHW(t, rdb, region, writer); hw != c.Horizon() {
		t.Fatalf("stored hw %d, installed horizon %d", hw, c.Horizon())
	}
	if err := c.Start(context.Background()); !errors.Is(err, ErrAlreadyStarted) {
		t.Fatalf("second Start: %v", err)
	}
}

// Two issuers that wrongly share (region, writer) at the same time still get disjoint windows.
func TestIssuerConcurrentSameWriterDisjoint(t *testing.T) {
	rdb := coreRedis(t)
	region := testRegion(t, rdb, 1)
	clk := newFakeClock(t0)
	a := startIssuer(t, rdb, region, 0, clk)
	b := startIssuer(t, rdb, region, 0, clk)
	requireAbove(t, "concurrent incarnations", issue(t, a, 100), issue(t, b, 100))
}

func TestIssuerRenewalHandOver(t *testing.T) {
	rdb := coreRedis(t)
	region := testRegion(t, rdb, 1)
	clk := newFakeClock(t0)
	is := startIssuer(t, rdb, region, 0, clk, WithWindow(200*time.Millisecond), WithRenewBefore(80*time.Millisecond))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- is.Run(ctx) }()
	var last contract.MessageID
	for round := range 5 {
		end := is.Horizon()
		clk.Set(int64(end) - 60) // inside renew-before: Run must claim the next window
		eventually(t, 2*time.Second, "next window claimed", func() bool { return is.Horizon() > end })
		if hw := storedHW(t, rdb, region, 0); hw != is.Horizon() {
			t.Fatalf("round %d: installed horizon %d is not the persisted hw %d", round, is.Horizon(), hw)
		}
		clk.Set(int64(end) + 5) // past the old window: ids come from the new one
		id, err := is.Next()
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		if id.TimeMs() < end || id.Compare(last) <= 0 {
			t.Fatalf("round %d: id %s (time %d) not in the new window above %s", round, id, id.TimeMs(), last)
		}
		last = id
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Run: %v", err)
	}
}

// Redis gone after Start: ids keep coming from the persisted window until its end, then Next
// refuses; no id ever falls outside [start, end) of the window Redis acknowledged.
func TestIssuerWindowExhaustedWithoutRedis(t *testing.T) {
	admin := coreRedis(t)
	region := testRegion(t, admin, 1)
	rdb := redis.NewClient(&redis.Options{Addr: admin.Options().Addr})
	clk := newFakeClock(t0)
	var claimErrors atomic.Int32
	is := startIssuer(t, rdb, region, 0, clk, WithWindow(time.Second), WithRenewBefore(300*time.Millisecond),
		WithRetryBackoff(5*time.Millisecond, 20*time.Millisecond),
		WithClaimErrorHook(func(error) { claimErrors.Add(1) }))
	end := is.Horizon()
	if hw := storedHW(t, admin, region, 0); hw != end {
		t.Fatalf("persisted hw %d, installed end %d", hw, end)
	}
	_ = rdb.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = is.Run(ctx) }()
	clk.Set(int64(end) - 200) // renewal due, but every claim fails
	eventually(t, 2*time.Second, "failed claims reported", func() bool { return claimErrors.Load() >= 2 })
	var issued []contract.MessageID
	refused := 0
	for clk.ms.Load() < int64(end)+50 {
		id, err := is.Next()
		if err != nil {
			var ex *WindowExhaustedError
			if !errors.As(err, &ex) || !errors.Is(err, ErrWindowExhausted) || ex.WindowEnd != end {
				t.Fatalf("at %d: %v", clk.ms.Load(), err)
			}
			if clk.ms.Load() < int64(end) {
				t.Fatalf("refused at %d inside the window ending %d", clk.ms.Load(), end)
			}
			refused++
		} else {
			issued = append(issued, id)
		}
		clk.Add(10 * time.Millisecond)
	}
	for _, id := range issued {
		if id.TimeMs() < end-1000 || id.TimeMs() >= end {
			t.Fatalf("id time %d outside the persisted window [%d, %d)", id.TimeMs(), end-1000, end)
		}
	}
	if len(issued) < 20 || refused < 5 || is.WindowRemaining() != 0 {
		t.Fatalf("issued %d ids, refused %d, remaining %v", len(issued), refused, is.WindowRemaining())
	}
}

func TestIssuerStopsWhenLeaseLost(t *testing.T) {
	rdb := coreRedis(t)
	region := testRegion(t, rdb, 1)
	ctx := context.Background()
	l, err := ClaimLease(ctx, rdb, region, WithMaxWriters(1), fastLease)
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = l.Run(ctx) }()
	is := startIssuer(t, rdb, region, l.WriterID(), newFakeClock(t0), WithLease(l))
	done := make(chan error, 1)
	go func() { done <- is.Run(ctx) }()
	if _, err := is.Next(); err != nil {
		t.Fatal(err)
	}
	if err := rdb.Del(ctx, LeaseKey(region, l.WriterID())).Err(); err != nil {
		t.Fatal(err)
	}
	<-l.Lost()
	if _, err := is.Next(); !errors.Is(err, ErrLeaseLost) {
		t.Fatalf("Next after lease loss: %v", err)
	}
	if err := <-done; !errors.Is(err, ErrLeaseLost) {
		t.Fatalf("Run after lease loss: %v", err)
	}
}

// A claim whose reply was lost is retried with the same claim id and gets the same window back;
// a floor above the stored mark is honoured; bad input changes nothing.
func TestClaimWindowScript(t *testing.T) {
	rdb := coreRedis(t)
	region := testRegion(t, rdb, 1)
	ctx := context.Background()
	run := func(now, window, floor int64, claim string) ([]int64, error) {
		w, err := claimWindowScript.Do(ctx, rdb, &claimWindowArgs{HLC: HLCKey(region, 0), NowMs: now, WindowMs: window,
			FloorMs: floor, ClaimID: claim})
		return []int64{w.Start, w.Finish}, err
	}
	w1, err := run(t0, 60000, 0, "x:1")
	if err != nil || w1[0] != t0 || w1[1] != t0+60000 {
		t.Fatalf("first claim %v %v", w1, err)
	}
	again, err := run(t0+5, 60000, 0, "x:1")
	if err != nil || again[0] != w1[0] || again[1] != w1[1] || storedHW(t, rdb, region, 0) != uint64(w1[1]) {
		t.Fatalf("retry %v %v, want %v and hw unchanged", again, err, w1)
	}
	w2, err := run(t0-600000, 60000, 0, "x:2") // clock set back
	if err != nil || w2[0] != w1[1]+1 {
		t.Fatalf("set-back claim %v %v, want start %d", w2, err, w1[1]+1)
	}
	w3, err := run(t0, 1000, w2[1]+500, "x:3")
	if err != nil || w3[0] != w2[1]+500 {
		t.Fatalf("floor claim %v %v", w3, err)
	}
	for _, bad := range [][3]int64{{0, 1000, 0}, {t0, 0, 0}, {t0, 1000, -1}, {1 << 48, 1000, 0}} {
		if _, err := run(bad[0], bad[1], bad[2], "x:9"); err == nil {
			t.Fatalf("bad input %v accepted", bad)
		}
	}
	if _, err := run(t0, 1000, 0, ""); err == nil {
		t.Fatal("empty claim id accepted")
	}
	if hw := storedHW(t, rdb, region, 0); hw != uint64(w3[1]) {
		t.Fatalf("rejected input changed hw to %d", hw)
	}
}
