package chaos

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/qim-dev/qim/gates/stack"
	"github.com/qim-dev/qim/gates/svc"
)

// Target is what a fault acts on: the cell's deployment and the matrix's stack.
type Target struct {
	Stack  stack.Stack
	Faults stack.Faults
	Set    *svc.Set
	Net    *netLinks // the cell's proxied links (nil: it has none)
	logf   func(format string, args ...any)
}

// Fault breaks something and returns the moment the break took effect (a failpoint fires when
// the pipeline reaches it, so that moment is observed, not chosen).
type Fault func(ctx context.Context, t *Target) (time.Time, error)

// Heal repairs what the fault broke and returns once it is serving again.
type Heal func(ctx context.Context, t *Target) error

// Bounds of the fault actions: how long a service may take to die at a live failpoint, to
// fence itself after its lease expired, and to become healthy again.
const (
	failpointWithin = 30 * time.Second
	fenceWithin     = 20 * time.Second
	healthyWithin   = 90 * time.Second
)

// ErrFaultMissed is wrapped when a fault did not happen: the cell then fails, because a cell
// whose fault never happened proves nothing.
var ErrFaultMissed = errors.New("chaos: the fault did not happen")

// killService SIGKILLs a service.
func killService(name string) Fault {
	return func(_ context.Context, t *Target) (time.Time, error) {
		if err := t.Set.Kill(name); err != nil {
			return time.Time{}, err
		}
		return time.Now(), nil
	}
}

// fireFailpoint makes the dormant failpoint of a service live (SIGUSR1) and waits until the
// pipeline reaches it and the process dies.
func fireFailpoint(name string) Fault {
	return func(_ context.Context, t *Target) (time.Time, error) {
		err, ferr := fireAndWaitExit(t, name)
		if ferr != nil {
			return time.Time{}, ferr
		}
		if !killedBySignal(err, syscall.SIGKILL) {
			return time.Time{}, fmt.Errorf("%w: %s exited (%v), not by its failpoint's SIGKILL", ErrFaultMissed, name, err)
		}
		return time.Now(), nil
	}
}

// fireAndWaitExit makes the dormant failpoint of a service live (SIGUSR1) and waits until the
// process ends; exitErr is how it ended. A process still running after failpointWithin is a
// missed fault (err wraps ErrFaultMissed).
func fireAndWaitExit(t *Target, name string) (exitErr, err error) {
	if err := t.Set.Signal(name, syscall.SIGUSR1); err != nil {
		return nil, err
	}
	exited, exitErr := t.Set.WaitExit(name, failpointWithin)
	if !exited {
		return nil, fmt.Errorf("%w: %s still running %s after its failpoint went live", ErrFaultMissed, name, failpointWithin)
	}
	return exitErr, nil
}

// restartService starts a service again (unarmed) and waits for its health.
func restartService(name string) Heal {
	return func(ctx context.Context, t *Target) error {
		return t.Set.Start(ctx, name)
	}
}

// killServer SIGKILLs one stack server.
func killServer(server string) Fault {
	return func(_ context.Context, t *Target) (time.Time, error) {
		if err := t.Faults.Kill(server); err != nil {
			return time.Time{}, err
		}
		return time.Now(), nil
	}
}

// restartServer starts a killed server on its ports and data and waits for its readiness.
func restartServer(server string) Heal {
	return func(ctx context.Context, t *Target) error {
		return t.Faults.Restart(ctx, server)
	}
}

// pauseService SIGSTOPs a service (it keeps its sockets and its lease key, but answers nothing).
func pauseService(name string) Fault {
	return func(_ context.Context, t *Target) (time.Time, error) {
		if err := t.Set.Pause(name); err != nil {
			return time.Time{}, err
		}
		return time.Now(), nil
	}
}

// resumeFenced SIGCONTs a service paused past its lease and requires it to fence itself (exit
// on its own) before it is started again: a writer that woke up and kept committing under a
// lease another writer may hold is the hazard this cell exists for.
func resumeFenced(name string) Heal {
	return func(ctx context.Context, t *Target) error {
		if err := t.Set.Resume(name); err != nil {
			return err
		}
		exited, err := t.Set.WaitExit(name, fenceWithin)
		if !exited {
			_ = t.Set.Signal(name, syscall.SIGQUIT) // a goroutine dump in its log shows where it hangs
			return fmt.Errorf("%w: %s kept running %s after waking up past its lease (it must fence itself)", ErrFaultMissed, name, fenceWithin)
		}
		t.logf("%s fenced itself after SIGCONT (%v)", name, err)
		return t.Set.Start(ctx, name)
	}
}

// rollingRestartBrokerDown makes the broker unreachable (SIGSTOP: connections hang rather than
// fail, the worse case) and then restarts every service gracefully, one after the other, as a
// deploy during the incident would. A service that cannot become ready without the broker may
// exit; the heal restarts those.
func rollingRestartBrokerDown() Fault {
	return func(ctx context.Context, t *Target) (time.Time, error) {
		if err := t.Faults.Pause(stack.ServerKafka); err != nil {
			return time.Time{}, err
		}
		at := time.Now()
		for _, name := range t.Set.Services() {
			if err := t.Set.Stop(name); err != nil {
				return at, err
			}
			if exited, err := t.Set.WaitExit(name, 30*time.Second); !exited {
				return at, fmt.Errorf("chaos: %s did not stop within 30 s of SIGTERM: %v", name, err)
			}
			if err := t.Set.StartNoWait(name); err != nil {
				return at, err
			}
			t.logf("rolling restart: %s restarted while the broker is unreachable", name)
		}
		return at, nil
	}
}

// resumeBrokerAndServices resumes the broker and waits until every service is healthy,
// restarting the ones that gave up while it was unreachable or give up while they are waited
// for (bringBack).
func resumeBrokerAndServices() Heal {
	return func(ctx context.Context, t *Target) error {
		if err := t.Faults.Resume(stack.ServerKafka); err != nil {
			return err
		}
		for _, name := range t.Set.Services() {
			if err := bringBack(ctx, t.Set, t.logf, name); err != nil {
				return err
			}
		}
		return nil
	}
}

// processes is what bringBack needs of a deployment (*svc.Set).
type processes interface {
	Running(name string) bool
	ExitErr(name string) error
	StartNoWait(name string, extraEnv ...string) error
	WaitHealthy(ctx context.Context, name string, within time.Duration) error
}

// healRestarts bounds how often bringBack starts one service again. A service rides out an
// unreachable broker for contract.StartupDependencyWait before it exits (ADR-0030), so an exit
// here means an outage past that bound or a defect; either way the cell must not restart it
// forever.
const healRestarts = 3

// bringBack waits until name is healthy within healthyWithin, starting it again (at most
// healRestarts times) whenever its process is found ended, also while WaitHealthy waits. Before,
// Running was checked once and an exit during the wait failed the cell at once. Every restart is
// in the cell's log; a service that cannot come back fails the heal with its log tail.
func bringBack(ctx context.Context, set processes, logf func(string, ...any), name string) error {
	deadline := time.Now().Add(healthyWithin)
	for restarts := 0; ; {
		if !set.Running(name) {
			if restarts == healRestarts {
				return fmt.Errorf("chaos: %s exited again after %d restarts during the heal: %v", name, restarts, set.ExitErr(name))
			}
			logf("%s exited while the broker was unreachable or coming back (%v); starting it again", name, set.ExitErr(name))
			if err := set.StartNoWait(name); err != nil {
				return err
			}
			restarts++
		}
		err := set.WaitHealthy(ctx, name, time.Until(deadline))
		if err == nil || !errors.Is(err, svc.ErrExited) || time.Now().After(deadline) {
			return err
		}
	}
}

// killedBySignal reports whether a process wait error says the process died of sig.
func killedBySignal(err error, sig syscall.Signal) bool {
	var ee interface{ Sys() any }
	if !errors.As(err, &ee) {
		return false
	}
	ws, ok := ee.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled() && ws.Signal() == sig
}

// aofTailLoss is how much of redis-mailbox's append-only file a simulated host crash drops:
// about a second of materialization at the matrix's load (a 1:1 message writes two entries,
// a few hundred bytes each, plus the watermark), which is what appendfsync everysec may lose.
const aofTailLoss = 64 << 10

// killServerLosingTail SIGKILLs a Redis server and cuts the tail off its newest AOF segment, as
// a host crash under appendfsync everysec would: a process kill alone loses nothing (the writes
// are already in the page cache), so without the cut the cell would never exercise the
// rebuild-from-the-dispatch-log path that the mailbox's weaker persistence relies on.
func killServerLosingTail(server string, loss int64) Fault {
	return func(ctx context.Context, t *Target) (time.Time, error) {
		at, err := killServer(server)(ctx, t)
		if err != nil {
			return at, err
		}
		cut, err := truncateAOFTail(filepath.Join(t.Stack.Endpoints().Dir, "data", server), loss)
		if err != nil {
			return at, err
		}
		t.logf("%s: cut %d bytes off the end of its AOF", server, cut)
		return at, nil
	}
}

// truncateAOFTail shortens the newest incremental AOF file under dir by up to loss bytes and
// returns how many it removed. Redis loads a file whose last command is cut short
// (aof-load-truncated, on by default).
func truncateAOFTail(dir string, loss int64) (int64, error) {
	files, err := filepath.Glob(filepath.Join(dir, "appendonlydir", "*.incr.aof"))
	if err != nil || len(files) == 0 {
		return 0, fmt.Errorf("%w: no incremental AOF under %s (%v)", ErrFaultMissed, dir, err)
	}
	newest, st, err := newestFile(files) // a rewrite starts a new segment: the live one is the newest
	if err != nil {
		return 0, err
	}
	cut := min(loss, st.Size())
	if cut == 0 {
		return 0, fmt.Errorf("%w: %s is empty", ErrFaultMissed, newest)
	}
	if err := os.Truncate(newest, st.Size()-cut); err != nil {
		return 0, fmt.Errorf("chaos: truncate %s: %w", newest, err)
	}
	return cut, nil
}

func newestFile(paths []string) (string, os.FileInfo, error) {
	var best string
	var bestInfo os.FileInfo
	for _, p := range paths {
		st, err := os.Stat(p)
		if err != nil {
			return "", nil, fmt.Errorf("chaos: %w", err)
		}
		if bestInfo == nil || st.ModTime().After(bestInfo.ModTime()) {
			best, bestInfo = p, st
		}
	}
	return best, bestInfo, nil
}
