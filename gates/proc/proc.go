// Package proc starts and controls the harness's child processes: the servers of the process
// stack provider (gates/stack) and the Q-IM services of a deployment (gates/svc) alike.
//
// Invariants: every child runs in a process group of its own, and every signal goes to that
// group, never to a name, so a server and anything it forked (a Redis AOF rewrite, a JVM's
// helpers) are stopped together and nothing else is touched. Unless Detached, the kernel
// SIGKILLs the child when the harness dies (PR_SET_PDEATHSIG), and for that the child is forked
// from one goroutine locked to its OS thread for the life of the process: the signal fires when
// the *thread* that forked the child exits, and any other Go thread may exit at any time. A
// child's environment is exactly Spec.Env: nothing is inherited implicitly, so the harness's own
// variables never reach a service that refuses unknown QIM_* variables.
//
// Rejected: one supervisor per caller. gates/stack locked the forking thread and gates/svc did
// not, so a service could outlive a killed harness when its forking thread had exited.
package proc

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Spec describes one child process.
type Spec struct {
	Name     string   // in errors
	Argv     []string // Argv[0] is looked up in PATH when it has no slash
	Dir      string   // working directory; "" is the harness's
	Env      []string // the whole environment (KEY=VALUE); see BaseEnv
	LogPath  string   // stdout and stderr are appended here
	Detached bool     // outlive the harness: no parent-death signal
}

// Process is one started child. Its methods are safe for concurrent use.
type Process struct {
	name   string
	cmd    *exec.Cmd
	pid    int
	done   chan struct{} // closed once the process was reaped
	err    error         // its exit error, valid once done is closed
	paused atomic.Bool
}

// ErrNotRunning: the process already exited.
var ErrNotRunning = errors.New("proc: not running")

// Start starts spec's process in its own process group and reaps it in a goroutine.
func Start(spec Spec) (*Process, error) {
	if len(spec.Argv) == 0 {
		return nil, fmt.Errorf("proc: start %s: no command", spec.Name)
	}
	lf, err := os.OpenFile(spec.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("proc: start %s: %w", spec.Name, err)
	}
	defer lf.Close() // the child holds its own descriptor
	cmd := exec.Command(spec.Argv[0], spec.Argv[1:]...)
	cmd.Dir = spec.Dir
	cmd.Env = append([]string{}, spec.Env...)
	cmd.Stdout, cmd.Stderr = lf, lf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := start(cmd, spec.Detached); err != nil {
		return nil, fmt.Errorf("proc: start %s (%s): %w", spec.Name, spec.Argv[0], err)
	}
	p := &Process{name: spec.Name, cmd: cmd, pid: cmd.Process.Pid, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

var (
	spawnOnce sync.Once
	spawnCh   chan spawnReq
)

type spawnReq struct {
	cmd *exec.Cmd
	err chan error
}

// start forks cmd; unless detached, from the one locked thread and with PR_SET_PDEATHSIG.
func start(cmd *exec.Cmd, detached bool) error {
	if detached {
		return cmd.Start()
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	spawnOnce.Do(func() {
		spawnCh = make(chan spawnReq)
		go func() {
			runtime.LockOSThread() // never unlocked: the thread lives as long as the process
			for r := range spawnCh {
				r.err <- r.cmd.Start()
			}
		}()
	})
	r := spawnReq{cmd: cmd, err: make(chan error, 1)}
	spawnCh <- r
	return <-r.err
}

// Pid is the child's pid, which is also its process group id.
func (p *Process) Pid() int { return p.pid }

// Done is closed once the process exited and was reaped.
func (p *Process) Done() <-chan struct{} { return p.done }

// Alive reports whether the process has not exited (a paused one is alive).
func (p *Process) Alive() bool {
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// Err is the exit error once the process exited (nil for status 0), and nil before.
func (p *Process) Err() error {
	if p.Alive() {
		return nil
	}
	return p.err
}

// Paused reports whether Pause stopped the process and nothing resumed it since.
func (p *Process) Paused() bool { return p.paused.Load() }

// Signal sends sig to the process group and returns without waiting.
func (p *Process) Signal(sig syscall.Signal) error {
	if !p.Alive() {
		return fmt.Errorf("%w: %s (pid %d: %v)", ErrNotRunning, p.name, p.pid, p.err)
	}
	if err := syscall.Kill(-p.pid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("proc: %v to %s (group %d): %w", sig, p.name, p.pid, err)
	}
	return nil
}

// Kill SIGKILLs the group (a paused process too) and waits up to within for the reap.
func (p *Process) Kill(within time.Duration) error {
	if err := p.Signal(syscall.SIGKILL); err != nil {
		return err
	}
	p.paused.Store(false)
	select {
	case <-p.done:
		return nil
	case <-time.After(within):
		return fmt.Errorf("proc: %s (pid %d) not reaped %s after SIGKILL", p.name, p.pid, within)
	}
}
