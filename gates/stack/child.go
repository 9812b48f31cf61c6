package stack

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/qim-dev/qim/gates/proc"
)

// child is one server process started by the process provider (gates/proc: its own process
// group, the parent-death signal unless detached, an explicit environment).
type child struct {
	*proc.Process
	server  string
	pid     int // Process.Pid, the process group too
	logPath string
	done    <-chan struct{} // Process.Done: closed once it was reaped
}

// exited reports whether the process ended and how.
func (c *child) exited() (bool, string) {
	select {
	case <-c.done:
		if c.Err() == nil {
			return true, "exited with status 0"
		}
		return true, c.Err().Error()
	default:
		return false, ""
	}
}

// diedError builds the *ServerDiedError for a child that exited.
func (c *child) diedError(detail string) *ServerDiedError {
	return &ServerDiedError{Server: c.server, Detail: fmt.Sprintf("pid %d %s", c.pid, detail), LogTail: tailFileOr(c.logPath, 50)}
}

// spawn starts argv as server's process with stdout and stderr appended to logPath, in dir
// (DownProject recognises our processes by cwd or command line under dir), records its pid file
// and reaps it in a goroutine. env is added to proc.BaseEnv: the servers get nothing else of the
// harness's environment.
func spawn(server, dir, logPath string, detached bool, env []string, argv ...string) (*child, error) {
	p, err := proc.Start(proc.Spec{Name: server, Argv: argv, Dir: dir, Env: proc.BaseEnv(env...), LogPath: logPath, Detached: detached})
	if err != nil {
		return nil, fmt.Errorf("stack: %w", err)
	}
	c := &child{Process: p, server: server, pid: p.Pid(), logPath: logPath, done: p.Done()}
	if err := writePid(dir, server, c.pid); err != nil {
		// Most likely the process already exited (bad flag, missing library): report that.
		_ = syscall.Kill(-c.pid, syscall.SIGKILL)
		<-c.done
		return nil, c.diedError(fmt.Sprintf("%v (%v)", c.Err(), err))
	}
	return c, nil
}

// runTool runs a short-lived helper (e.g. Kafka's StorageTool) to completion with its output
// appended to logPath; a failure carries the log tail.
func runTool(server, what, dir, logPath string, detached bool, timeout time.Duration, argv ...string) error {
	c, err := spawn(server+"-tool", dir, logPath, detached, nil, argv...)
	if err != nil {
		return err
	}
	defer os.Remove(filepath.Join(dir, "pids", server+"-tool.pid"))
	select {
	case <-c.done:
	case <-time.After(timeout):
		_ = syscall.Kill(-c.pid, syscall.SIGKILL)
		<-c.done
	}
	if c.Err() != nil {
		return &ServerDiedError{Server: server, Detail: fmt.Sprintf("%s: %v", what, c.Err()), LogTail: tailFileOr(logPath, 50)}
	}
	return nil
}

// stopGroup sends SIGTERM to process group pgid, waits up to grace for gone() to turn true,
// then SIGKILLs the group and waits a little more. It never signals by name.
func stopGroup(pgid int, grace time.Duration, gone func() bool) error {
	if pgid <= 1 {
		return fmt.Errorf("stack: refusing to signal process group %d", pgid)
	}
	if err := syscall.Kill(-pgid, syscall.SIGTERM); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("stack: SIGTERM group %d: %w", pgid, err)
	}
	// A server paused by Faults.Pause keeps SIGTERM pending until it runs again: wake it, or
	// Down would sit out the whole grace and SIGKILL it. SIGCONT after SIGTERM, so it never
	// runs a moment without the SIGTERM already pending; a running process ignores SIGCONT.
	_ = syscall.Kill(-pgid, syscall.SIGCONT)
	if waitUntil(grace, gone) {
		// The leader is gone; sweep anything it forked (e.g. a redis AOF rewrite child).
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		return nil
	}
	if err := syscall.Kill(-pgid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("stack: SIGKILL group %d: %w", pgid, err)
	}
	if !waitUntil(5*time.Second, gone) {
		return fmt.Errorf("stack: process group %d still alive after SIGKILL", pgid)
	}
	return nil
}

func waitUntil(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func randomID() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
