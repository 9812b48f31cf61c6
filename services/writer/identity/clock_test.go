package identity

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// clockStep is one operation on a Clock and what it must produce.
type clockStep struct {
	op     string // install, next, renew (NeedsRenewal), advance, remaining, force (set last pair)
	now    int64  // wall clock of next/renew/advance/remaining
	w      Window // install
	t      uint64 // next: expected time_ms; force: last time
	l      uint32 // next: expected logical; force: last logical
	err    error  // install/next: expected error (errors.Is), nil for success
	want   bool   // renew
	dur    time.Duration
	exhEnd uint64 // next with ErrWindowExhausted: expected WindowEnd
}

func TestClockTable(t *testing.T) {
	inst := func(s, e uint64) clockStep { return clockStep{op: "install", w: Window{s, e}} }
	bad := func(s, e uint64) clockStep { return clockStep{op: "install", w: Window{s, e}, err: ErrWindowOrder} }
	next := func(now int64, t uint64, l uint32) clockStep { return clockStep{op: "next", now: now, t: t, l: l} }
	exhausted := func(now int64, end uint64) clockStep {
		return clockStep{op: "next", now: now, err: ErrWindowExhausted, exhEnd: end}
	}
	renew := func(now int64, want bool) clockStep { return clockStep{op: "renew", now: now, want: want} }
	remaining := func(now int64, d time.Duration) clockStep { return clockStep{op: "remaining", now: now, dur: d} }
	cases := []struct {
		name  string
		steps []clockStep
	}{
		{"no window refuses and asks for one", []clockStep{
			{op: "next", now: 1000, err: ErrNoWindow}, renew(1000, true), remaining(1000, 0)}},
		{"burst within one ms increments logical", []clockStep{
			inst(1000, 2000), next(1500, 1500, 0), next(1500, 1500, 1), next(1500, 1500, 2), next(1501, 1501, 0)}},
		{"clock rollback keeps ids increasing", []clockStep{
			inst(1000, 61000), next(5000, 5000, 0), next(100, 5000, 1), next(-5, 5000, 2),
			next(4999, 5000, 3), next(5001, 5001, 0)}},
		{"clock below the window start issues from the start", []clockStep{
			inst(10000, 20000), next(5000, 10000, 0), next(5000, 10000, 1), next(10000, 10000, 2), next(10001, 10001, 0)}},
		{"exhaustion refuses and changes nothing", []clockStep{
			inst(1000, 2000), next(1999, 1999, 0), exhausted(2000, 2000), exhausted(9999, 2000),
			next(1500, 1999, 1)}},
		{"renewal hand-over skips the gap between windows", []clockStep{
			inst(1000, 2000), renew(1600, false), renew(1700, true), inst(2001, 3000), renew(1700, false),
			next(1999, 1999, 0), next(2000, 2001, 0), next(2000, 2001, 1), next(2500, 2500, 0),
			renew(2699, false), renew(2700, true), exhausted(3000, 3000)}},
		{"renewal is measured from the HLC, not a set-back wall clock", []clockStep{
			inst(1000, 2000), clockStep{op: "force", t: 1800}, renew(100, true)}},
		{"window below the current end is rejected", []clockStep{
			inst(1000, 2000), bad(1500, 2500), bad(500, 900), inst(2000, 3000),
			next(2000, 2000, 0)}},
		{"a third window while one is pending is rejected", []clockStep{
			inst(1000, 2000), inst(2000, 3000), bad(3000, 4000), next(2500, 2500, 0), inst(3000, 4000)}},
		{"empty or out-of-range windows are rejected", []clockStep{
			bad(0, 10), bad(5, 5), bad(7, 6), bad(1, 1<<48+1), inst(1, 1<<48), next(1<<48-1, 1<<48-1, 0),
			exhausted(1<<48, 1<<48)}},
		{"logical overflow borrows the next millisecond", []clockStep{
			inst(1000, 2000), clockStep{op: "force", t: 1500, l: math.MaxUint32}, next(1500, 1501, 0), next(1000, 1501, 1)}},
		{"logical overflow at the window end switches or refuses", []clockStep{
			inst(1000, 2000), clockStep{op: "force", t: 1999, l: math.MaxUint32}, exhausted(1999, 2000),
			inst(2000, 3000), next(1999, 2000, 0)}},
		{"advance retires a dead window so an idle writer renews", []clockStep{
			inst(1000, 2000), inst(2000, 3000), renew(2800, false),
			{op: "advance", now: 1999}, renew(1999, false),
			{op: "advance", now: 2800}, renew(2800, true), inst(3000, 4000), next(3500, 3500, 0)}},
		{"past both windows refuses", []clockStep{
			inst(1000, 2000), inst(2000, 3000), exhausted(3000, 3000), next(1000, 2000, 0)}},
		{"remaining counts to the last installed end", []clockStep{
			inst(1000, 2000), remaining(1500, 500*time.Millisecond), remaining(500, 1500*time.Millisecond),
			inst(2000, 3000), remaining(1500, 1500*time.Millisecond), remaining(3500, 0)}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := NewClock(300 * time.Millisecond)
			for i, s := range tc.steps {
				runClockStep(t, c, i, s)
			}
		})
	}
}

func runClockStep(t *testing.T, c *Clock, i int, s clockStep) {
	t.Helper()
	switch s.op {
	case "install":
		if err := c.Install(s.w); !errors.Is(err, s.err) || (s.err == nil && err != nil) {
			t.Fatalf("step %d: Install(%v) = %v, want %v", i, s.w, err, s.err)
		}
	case "next":
		gotT, gotL, err := c.Next(s.now)
		if s.err != nil {
			if !errors.Is(err, s.err) {
				t.Fatalf("step %d: Next(%d) = %d,%d,%v, want %v", i, s.now, gotT, gotL, err, s.err)
			}
			var ex *WindowExhaustedError
			if errors.As(err, &ex) && ex.WindowEnd != s.exhEnd {
				t.Fatalf("step %d: exhausted at window end %d, want %d", i, ex.WindowEnd, s.exhEnd)
			}
			return
		}
		if err != nil || gotT != s.t || gotL != s.l {
			t.Fatalf("step %d: Next(%d) = (%d, %d, %v), want (%d, %d)", i, s.now, gotT, gotL, err, s.t, s.l)
		}
	case "renew":
		if got := c.NeedsRenewal(s.now); got != s.want {
			t.Fatalf("step %d: NeedsRenewal(%d) = %v, want %v", i, s.now, got, s.want)
		}
	case "advance":
		c.Advance(s.now)
	case "remaining":
		if got := c.Remaining(s.now); got != s.dur {
			t.Fatalf("step %d: Remaining(%d) = %v, want %v", i, s.now, got, s.dur)
		}
	case "force":
		c.lastTime, c.lastLogical = s.t, s.l
	default:
		t.Fatalf("step %d: unknown op %q", i, s.op)
	}
}

// TestClockRandomWalk drives the Clock with random clocks (jumps forward and back), bursts and
// windows and checks the invariants on every step: pairs strictly increase, every pair lies in
// an accepted window, accepted windows never overlap, and the Clock refuses only when no
// accepted window covers the HLC.
func TestClockRandomWalk(t *testing.T) {
	var issued, refused int
	for seed := uint64(1); seed <= 50; seed++ {
		rng := rand.New(rand.NewPCG(seed, 7))
		c := NewClock(20 * time.Millisecond)
		var accepted []Window
		var lastT uint64
		var lastL uint32
		now := int64(1_000_000)
		for step := 0; step < 2000; step++ {
			switch r := rng.IntN(100); {
			case r < 5: // clock set back or jumped forward
				now += int64(rng.IntN(400)) - 250
			case r < 60:
				now += int64(rng.IntN(3))
			}
			c.Advance(now)
			if c.NeedsRenewal(now) && rng.IntN(8) == 0 { // renewals often late: exercise refusal
				start := max(uint64(max(now, 1)), c.Horizon()) + uint64(rng.IntN(3))
				w := Window{start, start + 1 + uint64(rng.IntN(80))}
				if err := c.Install(w); err == nil {
					accepted = append(accepted, w)
				}
			}
			tm, l, err := c.Next(now)
			var ex *WindowExhaustedError
			switch {
			case errors.As(err, &ex):
				refused++
				if ex.HLCMs < c.Horizon() {
					t.Fatalf("seed %d step %d: refused at %d below the horizon %d", seed, step, ex.HLCMs, c.Horizon())
				}
				continue
			case errors.Is(err, ErrNoWindow):
				continue
			case err != nil:
				t.Fatalf("seed %d step %d: %v", seed, step, err)
			}
			issued++
			if tm < lastT || (tm == lastT && l <= lastL) {
				t.Fatalf("seed %d step %d: (%d,%d) not above (%d,%d)", seed, step, tm, l, lastT, lastL)
			}
			lastT, lastL = tm, l
			if !inWindows(accepted, tm) {
				t.Fatalf("seed %d step %d: time %d outside accepted windows %v", seed, step, tm, accepted)
			}
		}
		for i := 1; i < len(accepted); i++ {
			if accepted[i].Start < accepted[i-1].End {
				t.Fatalf("seed %d: windows %v and %v overlap", seed, accepted[i-1], accepted[i])
			}
		}
	}
	if issued < 10000 || refused < 100 {
		t.Fatalf("walk did not exercise both paths: %d issued, %d refused", issued, refused)
	}
}

func inWindows(ws []Window, t uint64) bool {
	for _, w := range ws {
		if t >= w.Start && t < w.End {
			return true
		}
	}
	return false
}
