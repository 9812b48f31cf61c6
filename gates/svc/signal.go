package svc

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"
	"time"
)

// Every method here signals the service's whole process group (it was started with Setpgid),
// never a name. Signalling a service never started is an error wrapping ErrNotStarted; one
// whose process already ended, an error wrapping ErrNotRunning.

// Kill SIGKILLs one service (a crash: no cleanup) and waits for it to exit. A paused service
// can be killed.
func (s *Set) Kill(name string) error { return s.signal(name, syscall.SIGKILL) }

// Stop SIGTERMs one service and waits for it to exit (SIGKILL after 15 s). A paused service is
// woken to handle the SIGTERM.
func (s *Set) Stop(name string) error { return s.signal(name, syscall.SIGTERM) }

func (s *Set) signal(name string, sig syscall.Signal) error {
	p, err := s.running(name)
	if err != nil {
		return err
	}
	pgid := p.cmd.Process.Pid
	_ = syscall.Kill(-pgid, sig)
	// A stopped process keeps SIGTERM pending until it runs again; SIGCONT after the SIGTERM, so
	// it never runs a moment without it. A running process ignores SIGCONT.
	_ = syscall.Kill(-pgid, syscall.SIGCONT)
	s.setPaused(p, false)
	select {
	case <-p.exited:
		return nil
	case <-time.After(15 * time.Second):
		// SIGQUIT first: the Go runtime writes every goroutine's stack to the service's log and
		// exits, so the log shows where it hung instead of just that it did.
		_ = syscall.Kill(-pgid, syscall.SIGQUIT)
		select {
		case <-p.exited:
		case <-time.After(3 * time.Second):
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
			<-p.exited
		}
		return fmt.Errorf("svc: %s ignored %v for 15 s and was stopped with SIGQUIT (goroutine dump in its log)", name, sig)
	}
}

// Pause SIGSTOPs one service and returns once it is stopped: it keeps its sockets and leases
// but answers nothing (a GC pause, a frozen VM), until Resume. Pausing a paused service is an
// error.
func (s *Set) Pause(name string) error {
	p, err := s.running(name)
	if err != nil {
		return err
	}
	if s.isPaused(p) {
		return fmt.Errorf("svc: pause %s: already paused", name)
	}
	pid := p.cmd.Process.Pid
	if err := syscall.Kill(-pid, syscall.SIGSTOP); err != nil {
		return fmt.Errorf("svc: pause %s: SIGSTOP group %d: %w", name, pid, err)
	}
	s.setPaused(p, true)
	// SIGSTOP is delivered asynchronously: wait until the process shows state T, so what the
	// caller does next really meets a frozen service.
	deadline := time.Now().Add(2 * time.Second)
	for procState(pid) != 'T' {
		if !p.alive() {
			return fmt.Errorf("%w: %s exited while being paused (%v)", ErrNotRunning, name, p.err)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("svc: pause %s: pid %d not stopped 2 s after SIGSTOP", name, pid)
		}
		time.Sleep(5 * time.Millisecond)
	}
	return nil
}

// Resume SIGCONTs a paused service. Resuming one that is not paused is an error.
func (s *Set) Resume(name string) error {
	p, err := s.running(name)
	if err != nil {
		return err
	}
	if !s.isPaused(p) {
		return fmt.Errorf("svc: resume %s: not paused", name)
	}
	if err := syscall.Kill(-p.cmd.Process.Pid, syscall.SIGCONT); err != nil {
		return fmt.Errorf("svc: resume %s: SIGCONT group %d: %w", name, p.cmd.Process.Pid, err)
	}
	s.setPaused(p, false)
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

// running returns the live process of name.
func (s *Set) running(name string) (*proc, error) {
	p, err := s.last(name)
	if err != nil {
		return nil, err
	}
	if !p.alive() {
		return nil, fmt.Errorf("%w: %s (exited: %v)", ErrNotRunning, name, p.err)
	}
	return p, nil
}

func (s *Set) isPaused(p *proc) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return p.paused
}

func (s *Set) setPaused(p *proc, on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p.paused = on
}

// procState returns the state letter of /proc/<pid>/stat (0 when unreadable).
func procState(pid int) byte {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:]) // comm may contain spaces
	if len(f) == 0 {
		return 0
	}
	return f[0][0]
}

// Signal sends sig to one running service's process group and returns without waiting (the
// chaos matrix makes a dormant failpoint live with SIGUSR1).
func (s *Set) Signal(name string, sig syscall.Signal) error {
	p, err := s.running(name)
	if err != nil {
		return err
	}
	if err := syscall.Kill(-p.cmd.Process.Pid, sig); err != nil {
		return fmt.Errorf("svc: signal %s to %s: %w", sig, name, err)
	}
	return nil
}
