//go:build failpoints

package failpoint

import (
	"fmt"
	"os"
	"os/signal"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
)

// The failpoint build's wall clock. QIM_FAILPOINT_CLOCK_STEPS lists steps ("-10s,+10m,-10m");
// each SIGUSR2 the process receives applies the next one to Now, as an NTP step or an operator's
// date(1) would set the machine's clock: the chaos matrix steps a running writer's clock
// mid-load. Only the wall clock moves; durations the code measures with time.Since keep Go's
// monotonic clock, as they do on a real machine.
var clockOffset atomic.Int64 // nanoseconds added to the wall clock

func init() {
	spec := os.Getenv("QIM_FAILPOINT_CLOCK_STEPS")
	if spec == "" {
		return
	}
	steps, err := parseClockSteps(spec)
	if err != nil {
		fmt.Fprintf(os.Stderr, "failpoint: QIM_FAILPOINT_CLOCK_STEPS: %v\n", err)
		os.Exit(2) // a cell whose steps cannot apply must not run as if they had
	}
	ch := make(chan os.Signal, len(steps))
	signal.Notify(ch, syscall.SIGUSR2)
	go func() {
		for _, d := range steps {
			<-ch
			off := time.Duration(clockOffset.Add(int64(d)))
			fmt.Fprintf(os.Stderr, "failpoint: clock stepped %v (now %v off the real clock)\n", d, off)
		}
		signal.Stop(ch)
	}()
}

func parseClockSteps(spec string) ([]time.Duration, error) {
	var steps []time.Duration
	for _, s := range strings.Split(spec, ",") {
		d, err := time.ParseDuration(strings.TrimSpace(s))
		if err != nil {
			return nil, err
		}
		steps = append(steps, d)
	}
	return steps, nil
}

// Now is the wall clock with the steps applied so far. Only the wall reading moves: the
// result has no monotonic reading, so the code sees the step wherever it compares wall times.
func Now() time.Time {
	off := clockOffset.Load()
	if off == 0 {
		return time.Now()
	}
	return time.Now().Round(0).Add(time.Duration(off))
}
