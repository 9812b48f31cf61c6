package proc

import (
	"fmt"
	"os"
	"strings"
	"syscall"
	"time"
)

// Pause SIGSTOPs the group and returns once no member can run again before Resume (see frozen):
// SIGSTOP is delivered asynchronously, and the caller's next request must meet a frozen process.
// The 10 s bound is a hang guard: on a loaded 2-core machine the stop was once seen to take over
// 2 s.
func (p *Process) Pause() error {
	if p.paused.Load() {
		return fmt.Errorf("proc: pause %s: already paused", p.name)
	}
	if err := p.Signal(syscall.SIGSTOP); err != nil {
		return err
	}
	p.paused.Store(true)
	deadline := time.Now().Add(10 * time.Second)
	for ms := groupMembers(p.pid); !frozen(ms, p.pid); ms = groupMembers(p.pid) {
		if !p.Alive() {
			return fmt.Errorf("%w: %s exited while being paused (%v)", ErrNotRunning, p.name, p.err)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("proc: pause %s: group %d not stopped 10 s after SIGSTOP (%s)", p.name, p.pid, describe(ms))
		}
		time.Sleep(5 * time.Millisecond)
	}
	return nil
}

// Resume SIGCONTs a paused group.
func (p *Process) Resume() error {
	if !p.paused.Load() {
		return fmt.Errorf("proc: resume %s: not paused", p.name)
	}
	if err := p.Signal(syscall.SIGCONT); err != nil {
		return err
	}
	p.paused.Store(false)
	return nil
}

// Stop sends sig (SIGTERM for a clean stop) to the group, wakes it if it is paused, and waits up
// to grace for the exit. A process that ignores it gets SIGQUIT — a Go program then writes every
// goroutine's stack to its log and exits — and SIGKILL 3 s later; Stop then returns an error
// saying so. After the leader exited, the group is swept with SIGKILL (anything it forked).
func (p *Process) Stop(sig syscall.Signal, grace time.Duration) error {
	if err := p.Signal(sig); err != nil {
		return err
	}
	// A stopped process keeps SIGTERM pending until it runs again: SIGCONT after the signal, so
	// it never runs a moment without it pending. A running process ignores SIGCONT.
	_ = syscall.Kill(-p.pid, syscall.SIGCONT)
	p.paused.Store(false)
	select {
	case <-p.done:
		_ = syscall.Kill(-p.pid, syscall.SIGKILL)
		return nil
	case <-time.After(grace):
	}
	_ = syscall.Kill(-p.pid, syscall.SIGQUIT)
	select {
	case <-p.done:
	case <-time.After(3 * time.Second):
		_ = syscall.Kill(-p.pid, syscall.SIGKILL)
		<-p.done
	}
	return fmt.Errorf("proc: %s ignored %v for %s and was stopped with SIGQUIT (a Go program's goroutine dump is in its log)", p.name, sig, grace)
}

// State returns the state letter of /proc/<pid>/stat (R, S, T, Z, …), 0 when unreadable.
func State(pid int) byte {
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

// Tail returns the last n lines of the file at path ("" when unreadable).
func Tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
