package chaos

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/qim-dev/qim/gates/svc"
)

// supervisor restarts services that exited on their own, as systemd or Kubernetes would in a
// real deployment. Services fail closed — a MailboxNode whose shard watermark moved under it
// stops rather than guess — and the recovery path the design relies on is "restart and replay
// from the durable position". Without a supervisor the cell would report that designed stop as
// a stall; with a silent one it would hide a crash loop. So every restart is recorded in the
// cell's result and the report.
//
// Invariants: while the cell's fault is open (from injection until its heal returned) the
// supervisor does nothing, so it never races the heal or restarts the process the fault is
// holding down; at most one restart attempt per service per tick.
type supervisor struct {
	set  *svc.Set
	open atomic.Bool // a fault is in progress
	mu   sync.Mutex
	log  []string
	t0   time.Time
	logf func(string, ...any)
}

const superviseEvery = 500 * time.Millisecond

func (s *supervisor) run(ctx context.Context) {
	t := time.NewTicker(superviseEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if s.open.Load() {
			continue
		}
		for _, name := range s.set.Services() {
			if s.set.Running(name) {
				continue
			}
			line := fmt.Sprintf("%s exited at %.1fs (%v); restarted", name, time.Since(s.t0).Seconds(), s.set.ExitErr(name))
			if err := s.set.Start(ctx, name); err != nil {
				line = fmt.Sprintf("%s exited at %.1fs; restart failed: %v", name, time.Since(s.t0).Seconds(), firstLine(err))
			}
			s.logf("supervisor: %s", line)
			s.mu.Lock()
			s.log = append(s.log, line)
			s.mu.Unlock()
		}
	}
}

func (s *supervisor) restarts() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.log...)
}
