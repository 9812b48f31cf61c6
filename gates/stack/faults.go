package stack

import (
	"context"
	"fmt"
	"time"
)

// Faults is what the chaos matrix does to the servers of a stack. The process provider
// implements it; the containers provider does not (callers type-assert, as for Introspector).
//
// Every method names one server (ServerRedisCore, ServerRedisMailbox, ServerKafka, ServerCQL)
// of a stack whose Up succeeded. The methods act on the server's whole process group, so
// anything the server forked (a redis AOF rewrite child) shares its fate.
//
// A server moves between three states: running, paused (Pause; Resume returns it to running)
// and dead (Kill, or it died by itself; Restart returns it to running). Every other transition
// is an error: Pause or Kill of a dead server, Resume of a running one, Restart of a running
// or paused one (Resume first: a restart never races a frozen twin for its ports).
type Faults interface {
	// Kill SIGKILLs the server's process group and returns once the server was reaped. Check
	// then reports it as a *ServerDiedError until Restart. Killing a paused server is allowed.
	Kill(server string) error
	// Pause SIGSTOPs the group and returns once the server is stopped: it no longer answers,
	// but its sockets stay open and connects still succeed — "unreachable", not "down".
	Pause(server string) error
	// Resume SIGCONTs a paused server.
	Resume(server string) error
	// Restart starts a dead server again on the SAME ports and the SAME data dir and returns
	// once the readiness probe of Up passed (within the server's readiness timeout). Redis gets
	// the same argv and replays its AOF (appendfsync always on core; everysec on mailbox, where
	// the last second may be lost on a machine crash, by design); Kafka gets the same
	// properties and log dirs and is NOT formatted again. If the new process started but is not
	// ready (ctx, timeout, port taken meanwhile), it stays the server's process: Check watches
	// it, Down stops it, Kill and Restart may follow.
	//
	// A killed Kafka takes ~13 s to come back on 2 cores (3-4 s of JVM start, then its controller
	// rejects the new broker registration with DuplicateBrokerRegistrationException until the
	// killed incarnation's session expires, broker.session.timeout.ms = 9 s); with
	// WithKafkaProperty("broker.session.timeout.ms", "3000") it was ~7 s. The single replica
	// is then re-elected as an "UNCLEAN partition change" (ISR [] -> [1]): with RF 1 there is no
	// other copy, and nothing acknowledged was lost in TestFaults.
	Restart(ctx context.Context, server string) error
}

var _ Faults = (*processStack)(nil)

// faultState is what Faults knows about one server beyond its child process.
type faultState struct {
	paused     bool
	restarting bool // Restart owns the server until it returns
}

// faultTarget returns the current child of server and its launch record, refusing when the
// stack is down or the server is being restarted. s.mu must be held.
func (s *processStack) faultTarget(server string) (*child, launched, error) {
	if s.down {
		return nil, launched{}, ErrNotRunning
	}
	l, ok := s.launched[server]
	c := s.children[server]
	if !ok || c == nil {
		return nil, launched{}, fmt.Errorf("stack: %s: no such server in this stack, or Up did not start it", server)
	}
	if s.faults[server].restarting {
		return nil, launched{}, fmt.Errorf("stack: %s: a Restart is in progress", server)
	}
	return c, l, nil
}

func (s *processStack) Kill(server string) error {
	s.mu.Lock()
	c, _, err := s.faultTarget(server)
	if err == nil {
		if dead, detail := c.exited(); dead {
			err = fmt.Errorf("stack: kill %s: not running (pid %d %s)", server, c.pid, detail)
		}
	}
	s.mu.Unlock()
	if err != nil {
		return err
	}
	// SIGKILL also ends a stopped process, so a paused server needs no SIGCONT first.
	if err := c.Kill(10 * time.Second); err != nil {
		return fmt.Errorf("stack: kill %s: %w", server, err)
	}
	s.setPaused(server, false)
	s.progressf("%s killed (pid %d)", server, c.pid)
	return nil
}

func (s *processStack) Pause(server string) error {
	c, err := s.signalTarget(server, false)
	if err != nil {
		return err
	}
	s.setPaused(server, true)
	// proc's Pause returns once the leader shows state T, so the caller's next request really
	// meets a frozen server.
	if err := c.Pause(); err != nil {
		return fmt.Errorf("stack: pause %s: %w", server, err)
	}
	s.progressf("%s paused (pid %d)", server, c.pid)
	return nil
}

func (s *processStack) Resume(server string) error {
	c, err := s.signalTarget(server, true)
	if err != nil {
		return err
	}
	if err := c.Resume(); err != nil {
		return fmt.Errorf("stack: resume %s: %w", server, err)
	}
	s.setPaused(server, false)
	s.progressf("%s resumed (pid %d)", server, c.pid)
	return nil
}

// signalTarget returns the child of a live server whose paused state is wantPaused.
func (s *processStack) signalTarget(server string, wantPaused bool) (*child, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, _, err := s.faultTarget(server)
	if err != nil {
		return nil, err
	}
	if dead, detail := c.exited(); dead {
		return nil, fmt.Errorf("stack: %s is not running (pid %d %s)", server, c.pid, detail)
	}
	if paused := s.faults[server].paused; paused != wantPaused {
		if paused {
			return nil, fmt.Errorf("stack: %s is already paused", server)
		}
		return nil, fmt.Errorf("stack: %s is not paused", server)
	}
	return c, nil
}

func (s *processStack) setPaused(server string, on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f := s.faults[server]
	f.paused = on
	s.faults[server] = f
}

func (s *processStack) Restart(ctx context.Context, server string) error {
	l, err := s.beginRestart(server)
	if err != nil {
		return err
	}
	defer func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.faults[server] = faultState{}
	}()
	t0 := time.Now()
	c, err := l.spec.run(l.ports)
	if err != nil {
		return err
	}
	// register replaces the dead child, so Check and Down watch the new one (its pid file
	// was rewritten by spawn); after Down it stops the new process instead.
	if err := s.register(c); err != nil {
		return err
	}
	if err := s.waitReady(ctx, c, l.ports, l.spec.probe); err != nil {
		return err
	}
	s.progressf("%s restarted, ready in %.1fs (pid %d, 127.0.0.1:%d)", server, time.Since(t0).Seconds(), c.pid, l.ports[0])
	return nil
}

// beginRestart checks that server may be restarted and marks it as restarting.
func (s *processStack) beginRestart(server string) (launched, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, l, err := s.faultTarget(server)
	if err != nil {
		return launched{}, err
	}
	f := s.faults[server]
	if f.paused {
		return launched{}, fmt.Errorf("stack: restart %s: it is paused, not dead (Resume it, or Kill it first)", server)
	}
	if dead, _ := c.exited(); !dead {
		return launched{}, fmt.Errorf("stack: restart %s: pid %d is still running (Kill it first)", server, c.pid)
	}
	f.restarting = true
	s.faults[server] = f
	return l, nil
}
