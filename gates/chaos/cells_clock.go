package chaos

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"syscall"
	"time"

	"github.com/qim-dev/qim/gates/svc"
)

// The clock cells (issue 42, item 3): the writer's wall clock is stepped mid-load, as NTP or an
// operator's date(1) steps a machine's clock. The failpoint build reads the writer's wall clock
// through failpoint.Now (the HLC issuer, committed_at, the hot-tier trim), and each SIGUSR2 applies
// the next step of QIM_FAILPOINT_CLOCK_STEPS. The history checker judges what a broken HLC would
// do: a message_id issued twice is REUSED, a conversation_seq out of order ORDER or GAP; the lease
// lives in Redis with a server-side TTL, so no step of the writer's clock can stretch it.
//
// Nightly until they have passed three runs in a row: `qim-gate run chaos --cells nightly`.

const (
	clockStepLine   = "failpoint: clock stepped"
	clockStepWithin = 10 * time.Second
)

func clockCells() []Cell {
	return []Cell{
		{Name: "writer-clock-back-10s", Title: "the writer's wall clock stepped back 10 s under load (and left there)",
			Class: "clock step", Nightly: true, Env: map[string][]string{svc.Writer: {"QIM_FAILPOINT_CLOCK_STEPS=-10s"}},
			Fault: stepClock(svc.Writer), Hold: 10 * time.Second, Heal: clockLeftStepped},
		{Name: "writer-clock-forward-10m-then-back", Title: "the writer's wall clock stepped forward 10 minutes under load, then corrected back",
			Class: "clock step", Nightly: true, Env: map[string][]string{svc.Writer: {"QIM_FAILPOINT_CLOCK_STEPS=+10m,-10m"}},
			Fault: stepClock(svc.Writer), Hold: 5 * time.Second, Heal: func(ctx context.Context, t *Target) error {
				_, err := stepClock(svc.Writer)(ctx, t)
				return err
			}},
	}
}

// stepClock sends the service SIGUSR2 and waits until its log says the step applied: a step the
// process never took (no failpoint build, no steps configured) is a missed fault, not a pass.
func stepClock(name string) Fault {
	return func(ctx context.Context, t *Target) (time.Time, error) {
		path := t.Set.LogPath(name)
		before := countInFile(path, clockStepLine)
		if err := t.Set.Signal(name, syscall.SIGUSR2); err != nil {
			return time.Time{}, err
		}
		deadline := time.Now().Add(clockStepWithin)
		for countInFile(path, clockStepLine) <= before {
			if time.Now().After(deadline) || ctx.Err() != nil {
				return time.Time{}, fmt.Errorf("%w: %s logged no clock step within %v of SIGUSR2", ErrFaultMissed, name, clockStepWithin)
			}
			time.Sleep(50 * time.Millisecond)
		}
		return time.Now(), nil
	}
}

// clockLeftStepped is the heal of a step nobody undoes: the clock stays where it was set.
func clockLeftStepped(context.Context, *Target) error { return nil }

// countInFile counts the lines of path that contain s (0 when unreadable).
func countInFile(path, s string) int {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	return bytes.Count(b, []byte(s))
}
