package loadgen

import (
	"context"
	"sync"
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

// TestSchedulerOpenModel: the arrival schedule must not depend on how fast the sink consumes.
// A sink that takes 20 ms per arrival (behind a small bounded queue) gets exactly the same
// number of arrivals at exactly the same intended times as an instant sink; the difference shows
// up only as rejections, and the clock still ends on time.
func TestSchedulerOpenModel(t *testing.T) {
	const rate, sinks = 2000.0, 4
	d := 500 * time.Millisecond
	run := func(slow bool) (ScheduleResult, []time.Time, time.Duration) {
		s := Scheduler{Rate: rate, Duration: d, Sinks: sinks}
		queues := make([]chan time.Time, sinks)
		var wg sync.WaitGroup
		ctx, cancel := context.WithCancel(context.Background())
		defer func() { cancel(); wg.Wait() }()
		for i := range queues {
			queues[i] = make(chan time.Time, 8)
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					select {
					case <-ctx.Done():
						return
					case <-queues[i]:
						if slow {
							time.Sleep(20 * time.Millisecond)
						}
					}
				}
			}()
		}
		var due []time.Time
		start := time.Now()
		res := s.Run(context.Background(), start, func(sink int, seq int64, intended time.Time) bool {
			if int64(len(due)) != seq || sink != int(seq%sinks) {
				t.Errorf("arrival %d offered out of order (sink %d)", seq, sink)
			}
			due = append(due, intended)
			select {
			case queues[sink] <- intended:
				return true
			default:
				return false
			}
		})
		return res, due, time.Since(start)
	}
	fast, fastDue, _ := run(false)
	slow, slowDue, took := run(true)
	if fast.Scheduled != 1000 || slow.Scheduled != 1000 {
		t.Fatalf("scheduled fast %d slow %d, want 1000 each", fast.Scheduled, slow.Scheduled)
	}
	if slow.Rejected < 500 {
		t.Errorf("a 20 ms/arrival sink at %v/s rejected only %d: the sink throttled the clock", rate, slow.Rejected)
	}
	if fast.Rejected != 0 {
		t.Errorf("instant sink rejected %d", fast.Rejected)
	}
	if took > d+200*time.Millisecond {
		t.Errorf("clock took %s for a %s schedule behind a slow sink", took, d)
	}
	for i := range fastDue {
		wantOff := time.Duration(float64(i) * float64(time.Second) / rate)
		if got := slowDue[i].Sub(slowDue[0]); got != wantOff || fastDue[i].Sub(fastDue[0]) != wantOff {
			t.Fatalf("arrival %d intended at +%s (slow) / +%s (fast), want +%s", i, got, fastDue[i].Sub(fastDue[0]), wantOff)
		}
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
