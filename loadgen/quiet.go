package loadgen

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// QuietOptions say when the machine counts as quiet enough for a performance run. The lesson
// (docs/adr/0013-perf-runs-warm-up-and-quiet-machine.md): right after a build, the same binaries
// measured end-to-end P99 twice as high (302–416 ms against 179–246 ms idle). The thresholds are
// not relaxed for a busy machine; the run waits for a quiet one instead, boundedly, and reports
// what it saw.
type QuietOptions struct {
	MaxLoad1   float64       // quiet when the 1-minute load average is below this (default 1.5)
	MinIdlePct float64       // ... or when the CPU was at least this idle over Sample (default 70)
	Sample     time.Duration // idle measurement interval (default 5 s)
	Within     time.Duration // give up after this long and run anyway (default 120 s)
}

// Quiet is what the wait saw. Reached false means the run went ahead on a busy machine.
type Quiet struct {
	Reached bool    `json:"reached"`
	WaitedS float64 `json:"waited_s"`
	Load1   float64 `json:"load1"`
	IdlePct float64 `json:"idle_pct"`
	Samples int     `json:"samples"`
	Detail  string  `json:"detail"`
}

func (o *QuietOptions) defaults() {
	if o.MaxLoad1 == 0 {
		o.MaxLoad1 = 1.5
	}
	if o.MinIdlePct == 0 {
		o.MinIdlePct = 70
	}
	if o.Sample <= 0 {
		o.Sample = 5 * time.Second
	}
	if o.Within <= 0 {
		o.Within = 120 * time.Second
	}
}

// WaitQuiet samples the machine until it is quiet or Within has passed; progress (may be nil)
// gets one line per sample that was not quiet.
func WaitQuiet(ctx context.Context, o QuietOptions, progress func(string)) Quiet {
	o.defaults()
	start := time.Now()
	var q Quiet
	for {
		before := readMachineTimes()
		select {
		case <-ctx.Done():
			q.Detail = "interrupted"
			q.WaitedS = time.Since(start).Seconds()
			return q
		case <-time.After(o.Sample):
		}
		after := readMachineTimes()
		q.Samples++
		q.Load1 = load1()
		q.IdlePct = -1
		if before.err == nil && after.err == nil && after.total > before.total {
			q.IdlePct = 100 * (1 - float64(after.busy-before.busy)/float64(after.total-before.total))
		}
		q.WaitedS = time.Since(start).Seconds()
		if (q.Load1 >= 0 && q.Load1 < o.MaxLoad1) || q.IdlePct >= o.MinIdlePct {
			q.Reached = true
			q.Detail = fmt.Sprintf("quiet after %.0f s: load1 %.2f (< %.2f) or idle %.0f %% (≥ %.0f %%)",
				q.WaitedS, q.Load1, o.MaxLoad1, q.IdlePct, o.MinIdlePct)
			return q
		}
		if time.Since(start) >= o.Within {
			q.Detail = fmt.Sprintf("NOT quiet after %.0f s (load1 %.2f, idle %.0f %%): running anyway; latency includes neighbours' load",
				q.WaitedS, q.Load1, q.IdlePct)
			return q
		}
		if progress != nil {
			progress(fmt.Sprintf("waiting for a quiet machine: load1 %.2f, idle %.0f %% (%.0f s)", q.Load1, q.IdlePct, q.WaitedS))
		}
	}
}

// load1 is the 1-minute load average, -1 when unreadable.
func load1() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return -1
	}
	f, _, _ := strings.Cut(string(b), " ")
	v, err := strconv.ParseFloat(f, 64)
	if err != nil {
		return -1
	}
	return v
}
