package loadgen

import (
	"context"
	"testing"
	"time"
)

func TestSchedulerTotal(t *testing.T) {
	for _, tc := range []struct {
		rate float64
		d    time.Duration
		want int64
	}{
		{1000, time.Second, 1000},
		{500, 60 * time.Second, 30000},
		{3, time.Second, 3},
		{2.5, time.Second, 3}, // arrivals at 0, 0.4, 0.8 s
		{0.5, time.Second, 1},
	} {
		if got := (Scheduler{Rate: tc.rate, Duration: tc.d, Sinks: 1}).Total(); got != tc.want {
			t.Errorf("rate %.1f for %s: %d arrivals, want %d", tc.rate, tc.d, got, tc.want)
		}
	}
}

// virtualClock is a deterministic clock: Sleep advances it by the requested wait plus
// oversleep(n) for the n-th sleep, so the tests below are independent of how busy the machine is.
type virtualClock struct {
	now       time.Time
	sleeps    int
	oversleep func(n int) time.Duration
}

func (v *virtualClock) Until(t time.Time) time.Duration { return t.Sub(v.now) }

func (v *virtualClock) Sleep(ctx context.Context, d time.Duration) bool {
	v.sleeps++
	v.now = v.now.Add(d)
	if v.oversleep != nil {
		v.now = v.now.Add(v.oversleep(v.sleeps))
	}
	return ctx.Err() == nil
}

// TestSchedulerOpenModel: the arrival schedule must not depend on how fast the sink consumes.
// A sink that can take one arrival per 20 ms gets exactly the same number of arrivals at exactly
// the same intended times as an instant sink; the difference shows up only as rejections, and
// the clock ends when the last arrival is due, whatever the sink did.
func TestSchedulerOpenModel(t *testing.T) {
	const rate, sinks = 2000.0, 4
	d := 500 * time.Millisecond
	start := time.Unix(1_700_000_000, 0)
	run := func(accept func(now time.Time) bool) (ScheduleResult, []time.Time, time.Time) {
		clk := &virtualClock{now: start}
		s := Scheduler{Rate: rate, Duration: d, Sinks: sinks, clock: clk}
		var due []time.Time
		res := s.Run(context.Background(), start, func(sink int, seq int64, intended time.Time) bool {
			if int64(len(due)) != seq || sink != int(seq%sinks) {
				t.Errorf("arrival %d offered out of order (sink %d)", seq, sink)
			}
			due = append(due, intended)
			return accept(clk.now)
		})
		return res, due, clk.now
	}
	fast, fastDue, fastEnd := run(func(time.Time) bool { return true })
	var busyUntil time.Time
	slow, slowDue, slowEnd := run(func(now time.Time) bool { // one arrival per 20 ms, then busy
		if now.Before(busyUntil) {
			return false
		}
		busyUntil = now.Add(20 * time.Millisecond)
		return true
	})
	if fast.Scheduled != 1000 || slow.Scheduled != 1000 {
		t.Fatalf("scheduled fast %d slow %d, want 1000 each", fast.Scheduled, slow.Scheduled)
	}
	if fast.Rejected != 0 {
		t.Errorf("instant sink rejected %d", fast.Rejected)
	}
	if slow.Rejected != 1000-25 { // 500 ms at one per 20 ms: 25 taken
		t.Errorf("a 20 ms/arrival sink rejected %d of 1000, want 975: the sink throttled the clock", slow.Rejected)
	}
	lastDue := start.Add(999 * time.Second / 2000)
	if !fastEnd.Equal(lastDue) || !slowEnd.Equal(lastDue) {
		t.Errorf("clock ended at +%s (fast) / +%s (slow), want +%s", fastEnd.Sub(start), slowEnd.Sub(start), lastDue.Sub(start))
	}
	for i := range fastDue {
		want := start.Add(time.Duration(float64(i) * float64(time.Second) / rate))
		if !slowDue[i].Equal(want) || !fastDue[i].Equal(want) {
			t.Fatalf("arrival %d intended at +%s (slow) / +%s (fast), want +%s", i, slowDue[i].Sub(start),
				fastDue[i].Sub(start), want.Sub(start))
		}
	}
}

// TestSchedulerCatchesUpAfterOversleep: when a sleep overshoots (a busy machine), every arrival
// that became due meanwhile is offered at once, without a sleep, and keeps its exact intended
// time, so the lag is measured downstream instead of being absorbed into a shorter schedule.
func TestSchedulerCatchesUpAfterOversleep(t *testing.T) {
	start := time.Unix(1_700_000_000, 0)
	clk := &virtualClock{now: start, oversleep: func(n int) time.Duration {
		if n == 3 {
			return 100 * time.Millisecond // the third sleep overshoots by ten arrivals
		}
		return 0
	}}
	var offeredAt []time.Duration
	res := Scheduler{Rate: 100, Duration: time.Second, Sinks: 1, clock: clk}.Run(context.Background(), start,
		func(_ int, seq int64, intended time.Time) bool {
			if want := start.Add(time.Duration(seq) * 10 * time.Millisecond); !intended.Equal(want) {
				t.Errorf("arrival %d intended at +%s, want +%s", seq, intended.Sub(start), want.Sub(start))
			}
			offeredAt = append(offeredAt, clk.now.Sub(start))
			return true
		})
	if res.Scheduled != 100 || res.Rejected != 0 {
		t.Fatalf("result %+v, want 100 scheduled, none rejected", res)
	}
	// Arrivals 0..2 on time; the sleep for arrival 3 (due +30 ms) lands at +130 ms, so arrivals
	// 3..13 are offered then, and only arrivals 1..3 and 14..99 needed a sleep.
	for seq := 3; seq <= 13; seq++ {
		if offeredAt[seq] != 130*time.Millisecond {
			t.Errorf("arrival %d offered at +%s, want +130ms (caught up at once)", seq, offeredAt[seq])
		}
	}
	if offeredAt[2] != 20*time.Millisecond || offeredAt[14] != 140*time.Millisecond || clk.sleeps != 3+86 {
		t.Errorf("arrivals 2 and 14 at +%s and +%s after %d sleeps; want +20ms, +140ms and 89 sleeps",
			offeredAt[2], offeredAt[14], clk.sleeps)
	}
}

func TestSchedulerStopsOnCancel(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	res := Scheduler{Rate: 10, Duration: time.Hour, Sinks: 1}.Run(ctx, start, func(int, int64, time.Time) bool { return true })
	if time.Since(start) > time.Second || res.Scheduled > 2 {
		t.Fatalf("cancelled schedule ran %s and offered %d", time.Since(start), res.Scheduled)
	}
}
