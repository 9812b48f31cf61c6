package lifecycle

import (
	"context"
	"fmt"
	"time"

	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/services/internal/backoff"
)

// awaitPolicy is how Await retries: the bound on the whole wait, the per-attempt bound (a
// paused broker accepts a connection and never answers), the backoff between attempts and the
// interval between "still waiting" log lines.
type awaitPolicy struct {
	max, attempt, minDelay, maxDelay, logEvery time.Duration
}

var defaultAwait = awaitPolicy{
	max:      contract.StartupDependencyWait,
	attempt:  10 * time.Second,
	minDelay: 100 * time.Millisecond,
	maxDelay: 2 * time.Second,
	logEvery: 10 * time.Second,
}

// WaitError: start-up gave up on a dependency that stayed unreachable for the whole bound.
type WaitError struct {
	What     string
	Waited   time.Duration
	Attempts int
	Err      error // the last attempt's error
}

func (e *WaitError) Error() string {
	return fmt.Sprintf("%s not ready after waiting %s (%d attempts): %v", e.What, e.Waited.Round(time.Millisecond), e.Attempts, e.Err)
}

func (e *WaitError) Unwrap() error { return e.Err }

// Await runs check until it succeeds, for use in start-up. A failure that refused calls a
// refusal (a configuration the deployment must fix) is returned at once, as is the context's
// end; any other (an unreachable Redis, a broker that does not answer or is still fenced) is
// retried with a capped backoff for at most contract.StartupDependencyWait, each attempt bounded
// on its own, and then returned as a *WaitError. While it waits, /healthz answers 503 naming
// what (and the last error once an attempt failed), and the log says so on the first failure,
// every ten seconds after, and once it succeeded.
//
// check must be safe to run again: it opens nothing that outlives the attempt, or reuses what
// it opened (a client created once before Await).
//
// Rejected: exiting on the first failure and leaving the restart to a supervisor. A service
// restarted while the broker was unreachable then exited within a second of the broker's
// return, whose first metadata answers list no brokers, and every deployment would need a
// supervisor that restarts exactly that exit (the chaos matrix's rolling restart found it).
func (p *Process) Await(ctx context.Context, what string, check func(ctx context.Context) error, refused func(error) bool) error {
	defer p.waiting.Store(nil)
	pol := p.await
	b := backoff.New(pol.minDelay, pol.maxDelay)
	begun := time.Now()
	lastLog := begun
	first := "waiting for " + what
	p.waiting.Store(&first) // a paused peer holds the first attempt for its whole bound
	for attempt := 1; ; attempt++ {
		actx, cancel := context.WithTimeout(ctx, pol.attempt)
		err := check(actx)
		cancel()
		waited := time.Since(begun)
		if err == nil {
			if attempt > 1 || waited >= pol.minDelay*10 {
				p.log.Info(p.name+": ready after waiting", "dependency", what, "waited", waited.Round(time.Millisecond).String(), "attempts", attempt)
			}
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("stopped waiting for %s: %w", what, ctx.Err())
		}
		if refused(err) {
			return err
		}
		if waited >= pol.max {
			return &WaitError{What: what, Waited: waited, Attempts: attempt, Err: err}
		}
		msg := fmt.Sprintf("waiting for %s (%s so far): %v", what, waited.Round(time.Millisecond), err)
		p.waiting.Store(&msg)
		if attempt == 1 || time.Since(lastLog) >= pol.logEvery {
			lastLog = time.Now()
			p.log.Warn(p.name+": waiting for a dependency", "dependency", what, "waited", waited.Round(time.Millisecond).String(),
				"attempts", attempt, "bound", pol.max.String(), "err", err)
		}
		if !b.Wait(ctx) {
			return fmt.Errorf("stopped waiting for %s: %w", what, ctx.Err())
		}
	}
}
