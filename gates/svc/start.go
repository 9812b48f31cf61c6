package svc

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// Start starts one service and waits until its /healthz answers 200 (or it exits).
func (s *Set) Start(ctx context.Context, name string, extraEnv ...string) error {
	logf, err := os.OpenFile(filepath.Join(s.dir, name+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("svc: %w", err)
	}
	cmd := exec.Command(s.bin, name)
	cmd.Env = append(append(os.Environ(), s.Env(name)...), extraEnv...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return fmt.Errorf("svc: start %s: %w", name, err)
	}
	p := &proc{cmd: cmd, exited: make(chan struct{})}
	go func() { p.err = cmd.Wait(); logf.Close(); close(p.exited) }()
	s.mu.Lock()
	s.procs[name] = p
	s.mu.Unlock()
	return s.waitHealthy(ctx, name, p, 60*time.Second)
}

func (s *Set) waitHealthy(ctx context.Context, name string, p *proc, within time.Duration) error {
	url := "http://" + s.Addrs.Metrics[name] + "/healthz"
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		select {
		case <-p.exited:
			return fmt.Errorf("svc: %s exited during start-up (%v); log tail:\n%s", name, p.err, s.LogTail(name, 30))
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
		if resp, err := http.Get(url); err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
	}
	return fmt.Errorf("svc: %s not healthy within %s; log tail:\n%s", name, within, s.LogTail(name, 30))
}

// StartAll starts every service in Order.
func (s *Set) StartAll(ctx context.Context) error {
	for _, n := range Order {
		if err := s.Start(ctx, n); err != nil {
			return err
		}
	}
	return nil
}

// Running reports whether a service process is alive.
func (s *Set) Running(name string) bool {
	s.mu.Lock()
	p := s.procs[name]
	s.mu.Unlock()
	if p == nil {
		return false
	}
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// Pid returns the process id of a running service, or 0 when it is not running (loadgen reads
// its CPU time from /proc/<pid>/stat).
func (s *Set) Pid(name string) int {
	if !s.Running(name) {
		return 0
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if p := s.procs[name]; p != nil {
		return p.cmd.Process.Pid
	}
	return 0
}

// LogTail returns the last n lines of a service's log.
func (s *Set) LogTail(name string, n int) string {
	b, _ := os.ReadFile(filepath.Join(s.dir, name+".log"))
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
