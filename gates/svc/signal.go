package svc

import (
	"errors"
	"fmt"
	"syscall"
	"time"
)

// Every method here signals the service's whole process group (gates/proc starts each service
// in its own), never a name. Signalling a service never started is an error wrapping
// ErrNotStarted; one whose process already ended, an error wrapping ErrNotRunning.

// stopGrace is how long Stop waits for a service to exit after SIGTERM before it dumps its
// goroutines with SIGQUIT.
const stopGrace = 15 * time.Second

// Kill SIGKILLs one service (a crash: no cleanup) and waits for it to exit. A paused service can
// be killed.
func (s *Set) Kill(name string) error {
	p, err := s.running(name)
	if err != nil {
		return err
	}
	return p.Kill(time.Minute)
}

// Stop SIGTERMs one service and waits for it to exit; one that ignores SIGTERM for 15 s gets
// SIGQUIT (the Go runtime writes every goroutine's stack to the service's log, so the log shows
// where it hung) and an error. A paused service is woken to handle the SIGTERM.
func (s *Set) Stop(name string) error {
	p, err := s.running(name)
	if err != nil {
		return err
	}
	if err := p.Stop(syscall.SIGTERM, stopGrace); err != nil {
		return fmt.Errorf("svc: %s: %w", name, err)
	}
	return nil
}

// Pause SIGSTOPs one service and returns once it is stopped: it keeps its sockets and leases
// but answers nothing (a GC pause, a frozen VM), until Resume. Pausing a paused service is an
// error.
func (s *Set) Pause(name string) error {
	p, err := s.running(name)
	if err != nil {
		return err
	}
	if err := p.Pause(); err != nil {
		return fmt.Errorf("svc: %s: %w", name, err)
	}
	return nil
}

// Resume SIGCONTs a paused service. Resuming one that is not paused is an error.
func (s *Set) Resume(name string) error {
	p, err := s.running(name)
	if err != nil {
		return err
	}
	if err := p.Resume(); err != nil {
		return fmt.Errorf("svc: %s: %w", name, err)
	}
	return nil
}

// StopAll stops every running service of the deployment (Services: the HistoryArchiver too),
// paused ones included, in reverse start order (callers first).
func (s *Set) StopAll() error {
	var errs []error
	names := s.Services()
	for i := len(names) - 1; i >= 0; i-- {
		if s.Running(names[i]) {
			errs = append(errs, s.Stop(names[i]))
		}
	}
	return errors.Join(errs...)
}

// Close stops every service and releases what the Set holds beside them: the stand-in IdP's
// moderation and push stand-ins' loopback HTTP servers (identity.go, moderation.go, push.go), which a Set that is only stopped keeps serving, one per
// Set, for the life of the harness process. A closed Set starts nothing again.
func (s *Set) Close() error {
	err := s.StopAll()
	if s.idp != nil {
		err = errors.Join(err, s.idp.Close())
		s.idp = nil
	}
	if s.moderation != nil {
		s.moderation.Close()
		s.moderation = nil
	}
	if s.push != nil {
		s.push.close()
		s.push = nil
	}
	return err
}

// running returns the live process of name.
func (s *Set) running(name string) (*child, error) {
	p, err := s.last(name)
	if err != nil {
		return nil, err
	}
	if !p.Alive() {
		return nil, fmt.Errorf("%w: %s (exited: %v)", ErrNotRunning, name, p.Err())
	}
	return p, nil
}

// Signal sends sig to one running service's process group and returns without waiting (the
// chaos matrix makes a dormant failpoint live with SIGUSR1).
func (s *Set) Signal(name string, sig syscall.Signal) error {
	p, err := s.running(name)
	if err != nil {
		return err
	}
	if err := p.Signal(sig); err != nil {
		return fmt.Errorf("svc: %s: %w", name, err)
	}
	return nil
}
