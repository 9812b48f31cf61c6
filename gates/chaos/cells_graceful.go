package chaos

import (
	"context"
	"fmt"
	"time"

	"github.com/qim-dev/qim/gates/svc"
)

// The graceful cells (issue 42, item 6): SIGTERM instead of SIGKILL, with every server
// reachable. A kill tests what the durable state alone recovers; a graceful stop tests the
// shutdown paths themselves — drains, half-closed streams, cancelled contexts in the middle of a
// Redis or Kafka call — which a kill never runs. The failpoint cells stop the service with a
// batch in flight: built with failpoints and QIM_FAILPOINT_ACTION=term, the service SIGTERMs
// itself at the failpoint and the rest of the batch runs while it stops. Each is judged like a
// kill cell (history checker, orphan audit, invariants), and the stop itself must be clean:
// exit status 0 within svc's stop grace, no SIGQUIT, no crash.

// rollingServiceHealthy bounds how long the rolling restart waits for each restarted service.
const rollingServiceHealthy = 60 * time.Second

func gracefulCells() []Cell {
	return []Cell{
		termCell("writer-term-after-outbox", "SIGTERM the writer with a batch produced to the Outbox, not yet marked COMMITTED",
			svc.Writer, fpWriterAfterOutbox),
		termCell("writer-term-after-reserve", "SIGTERM the writer with a batch RESERVED, its history not written",
			svc.Writer, fpWriterAfterReserve),
		termCell("fanout-term-mid-batch", "SIGTERM the FanoutCoordinator with a batch's dispatches produced, its Outbox position not committed",
			svc.Fanout, fpFanoutBeforeCommit),
		termCell("mailbox-term-mid-materialize", "SIGTERM the MailboxNode with a batch materialized, its pushes not sent",
			svc.Mailbox, fpMailboxAfterWrite),
		{Name: "session-term", Class: "SIGTERM", Title: "SIGTERM the SessionProjection under load, restart",
			Fault: stopCleanly(svc.Session), Heal: restartService(svc.Session)},
		{Name: "gateway-term", Class: "SIGTERM", Title: "SIGTERM the gateway under load: it drains (KICKED SERVER_DRAIN), clients reconnect and reconcile",
			Fault: stopCleanly(svc.Gateway), Heal: restartService(svc.Gateway)},
		{Name: "rolling-restart", Class: "rolling SIGTERM", Title: "graceful rolling restart of every service under load, the broker up: each stopped, restarted and healthy before the next",
			Fault: rollingRestart(), Heal: allHealthy(), Window: 60 * time.Second},
	}
}

func termCell(name, title, service, fp string) Cell {
	return Cell{Name: name, Title: title, Class: "SIGTERM", Service: service, Failpoint: fp,
		Env:   map[string][]string{service: {"QIM_FAILPOINT_ACTION=term"}},
		Fault: termAtFailpoint(service), Heal: restartService(service)}
}

// termAtFailpoint makes the service's dormant failpoint live (SIGUSR1); armed with
// QIM_FAILPOINT_ACTION=term it SIGTERMs itself there. The fault took effect when the process
// exited with status 0; still running after failpointWithin is a missed fault, any other exit
// (a signal, an error status) fails the cell: a graceful stop must not crash.
func termAtFailpoint(name string) Fault {
	return func(_ context.Context, t *Target) (time.Time, error) {
		err, ferr := fireAndWaitExit(t, name)
		if ferr != nil {
			return time.Time{}, ferr
		}
		if err != nil {
			return time.Time{}, fmt.Errorf("chaos: %s did not stop cleanly after the SIGTERM at its failpoint: %w", name, err)
		}
		return time.Now(), nil
	}
}

// stopCleanly SIGTERMs a service and requires a clean exit (svc.Set.Stop sends SIGQUIT after
// its grace and reports that as an error).
func stopCleanly(name string) Fault {
	return func(_ context.Context, t *Target) (time.Time, error) {
		if err := t.Set.Stop(name); err != nil {
			return time.Time{}, err
		}
		if err := t.Set.ExitErr(name); err != nil {
			return time.Time{}, fmt.Errorf("chaos: %s exited with %w after SIGTERM, want status 0", name, err)
		}
		return time.Now(), nil
	}
}

// rollingRestart stops every service gracefully and starts it again, one after the other, each
// healthy before the next goes, as a deploy does; the fault's moment is the first stop.
func rollingRestart() Fault {
	return func(ctx context.Context, t *Target) (time.Time, error) {
		at := time.Now()
		for _, name := range t.Set.Services() {
			if _, err := stopCleanly(name)(ctx, t); err != nil {
				return at, err
			}
			if err := t.Set.StartNoWait(name); err != nil {
				return at, err
			}
			if err := t.Set.WaitHealthy(ctx, name, rollingServiceHealthy); err != nil {
				return at, fmt.Errorf("chaos: rolling restart: %s not healthy again: %w", name, err)
			}
			t.logf("rolling restart: %s stopped cleanly and is healthy again", name)
		}
		return at, nil
	}
}

// allHealthy is the rolling restart's heal: every service answers (bringBack restarts one
// that has ended since).
func allHealthy() Heal {
	return func(ctx context.Context, t *Target) error {
		for _, name := range t.Set.Services() {
			if err := bringBack(ctx, t.Set, t.logf, name); err != nil {
				return err
			}
		}
		return nil
	}
}
