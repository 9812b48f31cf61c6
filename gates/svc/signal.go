package svc

import (
	"errors"
	"fmt"
	"syscall"
	"time"
)

// Kill SIGKILLs one service (a crash: no cleanup) and waits for it to exit.
func (s *Set) Kill(name string) error { return s.signal(name, syscall.SIGKILL) }

// Stop SIGTERMs one service and waits for it to exit.
func (s *Set) Stop(name string) error { return s.signal(name, syscall.SIGTERM) }

func (s *Set) signal(name string, sig syscall.Signal) error {
	s.mu.Lock()
	p := s.procs[name]
	delete(s.procs, name)
	s.mu.Unlock()
	if p == nil {
		return fmt.Errorf("svc: %s is not running", name)
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, sig)
	select {
	case <-p.exited:
		return nil
	case <-time.After(15 * time.Second):
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.exited
		return fmt.Errorf("svc: %s ignored %v for 15 s and was killed", name, sig)
	}
}

// StopAll stops every running service (callers first).
func (s *Set) StopAll() error {
	var errs []error
	for i := len(Order) - 1; i >= 0; i-- {
		s.mu.Lock()
		_, ok := s.procs[Order[i]]
		s.mu.Unlock()
		if ok {
			errs = append(errs, s.Stop(Order[i]))
		}
	}
	return errors.Join(errs...)
}
