package loadgen

import (
	"context"
	"time"
)

// Scheduler is the open-model arrival clock: arrival i is due at start + i/Rate, for every i
// with a due time inside Duration, whatever happened to arrivals before it.
//
// Invariants: the schedule is a pure function of (start, Rate, Duration) — a slow or stuck
// sink changes how many arrivals are rejected, never when the next one is due or how many are
// scheduled; Offer never blocks the clock (a sink that cannot take an arrival rejects it and
// the rejection is counted, so an impossible rate ends on time with honest numbers).
//
// How: one goroutine walks the due times; when the next one is in the future it sleeps until
// then, and after an oversleep it emits every arrival that became due at once (their intended
// times stay exact, so the lag they suffer is measured downstream as generator lag). Sinks are
// chosen round-robin, which with 1:1 pairs spreads the rate evenly over conversations.
//
// Rejected alternative: one ticker per connection that sends and then waits for the answer (a
// closed model, like gates/e2e's paced load). It lowers the offered rate exactly when the
// system slows down — the coordinated-omission trap — so a stall shows up as "fewer messages"
// instead of "late messages" and the arrival-rate gate could never fail.
type Scheduler struct {
	Rate     float64       // arrivals per second, > 0
	Duration time.Duration // schedule length
	Sinks    int           // round-robin targets, > 0

	clock clock // nil: the wall clock; tests substitute a virtual one
}

// clock is what the schedule reads time from and sleeps on. The wall clock in production; a
// virtual clock in tests, so the open-model properties are checked without timing slack.
type clock interface {
	Until(t time.Time) time.Duration
	// Sleep waits d and reports true, or reports false as soon as ctx ends.
	Sleep(ctx context.Context, d time.Duration) bool
}

type wallClock struct{ timer *time.Timer }

func (w *wallClock) Until(t time.Time) time.Duration { return time.Until(t) }

func (w *wallClock) Sleep(ctx context.Context, d time.Duration) bool {
	if w.timer == nil {
		w.timer = time.NewTimer(d)
	} else {
		w.timer.Reset(d)
	}
	select {
	case <-ctx.Done():
		w.timer.Stop()
		return false
	case <-w.timer.C:
		return true
	}
}

// Offer hands arrival number seq (due at intended) to sink. It must not block; false means the
// sink could not take it.
type Offer func(sink int, seq int64, intended time.Time) bool

// ScheduleResult counts what the clock did.
type ScheduleResult struct {
	Scheduled int64 // arrivals whose due time fell inside the window
	Rejected  int64 // of those, offers the sink refused (counted as unsent)
}

// Due is the intended time of arrival seq.
func (s Scheduler) Due(start time.Time, seq int64) time.Time {
	return start.Add(time.Duration(float64(seq) * float64(time.Second) / s.Rate))
}

// Total is how many arrivals the window holds.
func (s Scheduler) Total() int64 {
	n := int64(s.Rate * s.Duration.Seconds())
	if float64(n)/s.Rate < s.Duration.Seconds() {
		n++ // arrival n is due strictly inside the window
	}
	return n
}

// Run drives the schedule from start until every arrival inside the window was offered or ctx
// ends (then the result covers what was offered).
func (s Scheduler) Run(ctx context.Context, start time.Time, offer Offer) ScheduleResult {
	var res ScheduleResult
	clk := s.clock
	if clk == nil {
		clk = &wallClock{}
	}
	total := s.Total()
	for seq := int64(0); seq < total; seq++ {
		due := s.Due(start, seq)
		if wait := clk.Until(due); wait > 0 {
			if !clk.Sleep(ctx, wait) {
				return res
			}
		} else if seq&1023 == 0 && ctx.Err() != nil {
			return res // far behind: still notice cancellation
		}
		res.Scheduled++
		if !offer(int(seq%int64(s.Sinks)), seq, due) {
			res.Rejected++
		}
	}
	return res
}
