package stack

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"syscall"
	"time"
)

// child is one server process started by the process provider, in its own process group.
type child struct {
	server  string
	cmd     *exec.Cmd
	pid     int
	logPath string
	done    chan struct{} // closed once cmd.Wait returned
	exitErr error         // valid after done is closed
}

// exited reports whether the process ended and how.
func (c *child) exited() (bool, string) {
	select {
	case <-c.done:
		if c.exitErr == nil {
			return true, "exited with status 0"
		}
		return true, c.exitErr.Error()
	default:
		return false, ""
	}
}

// diedError builds the *ServerDiedError for a child that exited.
func (c *child) diedError(detail string) *ServerDiedError {
	return &ServerDiedError{Server: c.server, Detail: fmt.Sprintf("pid %d %s", c.pid, detail), LogTail: tailFileOr(c.logPath, 50)}
}

// Every non-detached child is started from one goroutine locked to its OS thread for the life
// of the process: PR_SET_PDEATHSIG fires when the *thread* that forked the child exits, and a
// Go thread may otherwise exit at any time.
var (
	spawnOnce sync.Once
	spawnCh   chan spawnReq
)

type spawnReq struct {
	cmd *exec.Cmd
	err chan error
}

// startCmd starts cmd in its own process group (so Down can signal the server and anything it
// forked with kill(-pgid)); unless detached, the kernel SIGKILLs it when this process dies.
func startCmd(cmd *exec.Cmd, detached bool) error {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
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

// spawn starts argv as server's process with stdout and stderr appended to logPath, records
// its pid file in dir and reaps it in a goroutine.
func spawn(server, dir, logPath string, detached bool, env []string, argv ...string) (*child, error) {
	lf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	defer lf.Close()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = dir // DownProject recognises our processes by cwd or command line under dir
	cmd.Stdout, cmd.Stderr = lf, lf
	cmd.Env = append(os.Environ(), env...)
	if err := startCmd(cmd, detached); err != nil {
		return nil, fmt.Errorf("stack: start %s (%s): %w", server, argv[0], err)
	}
	c := &child{server: server, cmd: cmd, pid: cmd.Process.Pid, logPath: logPath, done: make(chan struct{})}
	go func() {
		c.exitErr = cmd.Wait()
		close(c.done)
	}()
	if err := writePid(dir, server, c.pid); err != nil {
		// Most likely the process already exited (bad flag, missing library): report that.
		_ = syscall.Kill(-c.pid, syscall.SIGKILL)
		<-c.done
		return nil, c.diedError(fmt.Sprintf("%v (%v)", c.exitErr, err))
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
	if c.exitErr != nil {
		return &ServerDiedError{Server: server, Detail: fmt.Sprintf("%s: %v", what, c.exitErr), LogTail: tailFileOr(logPath, 50)}
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
