package svc

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"time"

	"github.com/qim-dev/qim/gates/proc"
	"github.com/qim-dev/qim/gates/stack"
	"github.com/qim-dev/qim/services/archiver"
)

// startTimeout bounds Start's wait for /healthz.
const startTimeout = 60 * time.Second

// Start starts one service and waits until its /healthz answers 200 (or it exits): StartNoWait
// then WaitHealthy within 60 s.
func (s *Set) Start(ctx context.Context, name string, extraEnv ...string) error {
	if err := s.StartNoWait(name, extraEnv...); err != nil {
		return err
	}
	return s.WaitHealthy(ctx, name, startTimeout)
}

// StartNoWait starts one service in its own process group and returns at once, for a caller
// that wants to watch the start-up itself (a crash during recovery, a slow replay). extraEnv
// (KEY=VALUE) is added after the Set's environment. A service whose last process still runs
// (paused included) is not started twice: that is an error wrapping ErrRunning.
func (s *Set) StartNoWait(name string, extraEnv ...string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if p := s.procs[name]; p != nil && p.Alive() {
		return fmt.Errorf("%w: %s (pid %d)", ErrRunning, name, p.Pid())
	}
	service, _ := ServiceOf(name)
	// The environment is the deployment's, explicitly: the harness's own QIM_* variables never
	// reach a service (which refuses variables it does not know).
	p, err := proc.Start(proc.Spec{Name: name, Argv: []string{s.bin, service}, LogPath: filepath.Join(s.dir, name+".log"),
		Env: proc.BaseEnv(append(s.Env(name), extraEnv...)...)})
	if err != nil {
		return fmt.Errorf("svc: %w", err)
	}
	s.procs[name] = &child{Process: p, log: name}
	return nil
}

// healthClient bounds each /healthz probe: a paused or wedged service accepts the connection
// and never answers, and http.DefaultClient would wait for it forever.
var healthClient = &http.Client{Timeout: time.Second}

// WaitHealthy waits until the service's /healthz answers 200. It fails at once when the
// process exits (an error wrapping ErrExited, with its log tail), and after within or when ctx
// ends.
func (s *Set) WaitHealthy(ctx context.Context, name string, within time.Duration) error {
	p, err := s.last(name)
	if err != nil {
		return err
	}
	url := "http://" + s.Addrs.Metrics[name] + "/healthz"
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		select {
		case <-p.Done():
			return fmt.Errorf("%w: %s (%v); log tail:\n%s", ErrExited, name, p.Err(), s.LogTail(name, 30))
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
		if healthy(ctx, url) {
			return nil
		}
	}
	return fmt.Errorf("svc: %s not healthy within %s; log tail:\n%s", name, within, s.LogTail(name, 30))
}

func healthy(ctx context.Context, url string) bool {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return false
	}
	resp, err := healthClient.Do(req)
	if err != nil {
		return false
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// WaitExit waits up to within for the service's last process to end and reports whether it
// did, with its exit error (nil for status 0). It does not tell a crash from a Kill or Stop:
// a caller that signalled the process itself already knows. A service never started returns
// (false, an error wrapping ErrNotStarted).
func (s *Set) WaitExit(name string, within time.Duration) (exited bool, err error) {
	p, err := s.last(name)
	if err != nil {
		return false, err
	}
	if !p.Alive() { // first, so a zero bound never loses to the timer
		return true, p.Err()
	}
	t := time.NewTimer(within)
	defer t.Stop()
	select {
	case <-p.Done():
		return true, p.Err()
	case <-t.C:
		return false, nil
	}
}

// ExitErr returns the exit error of the service's last process once it ended (nil for status
// 0, "signal: killed" after Kill). While it runs the error wraps ErrRunning; for a service
// never started it wraps ErrNotStarted.
func (s *Set) ExitErr(name string) error {
	p, err := s.last(name)
	if err != nil {
		return err
	}
	if p.Alive() {
		return fmt.Errorf("%w: %s (pid %d)", ErrRunning, name, p.Pid())
	}
	return p.Err()
}

// StartAll starts every service of the deployment (Services), migrating the archive first when
// the stack has a CQL node.
func (s *Set) StartAll(ctx context.Context) error {
	if err := s.MigrateArchive(ctx); err != nil {
		return err
	}
	for _, n := range s.Services() {
		if err := s.Start(ctx, n); err != nil {
			return err
		}
	}
	return nil
}

// last returns the last process started for name.
func (s *Set) last(name string) (*child, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if p := s.procs[name]; p != nil {
		return p, nil
	}
	return nil, fmt.Errorf("%w: %s", ErrNotStarted, name)
}

// Running reports whether a service process is alive (a paused one is).
func (s *Set) Running(name string) bool {
	p, err := s.last(name)
	return err == nil && p.Alive()
}

// Pid returns the process id of a running service, or 0 when it is not running (loadgen reads
// its CPU time from /proc/<pid>/stat).
func (s *Set) Pid(name string) int {
	if p, err := s.last(name); err == nil && p.Alive() {
		return p.Pid()
	}
	return 0
}

// Process names the process a service runs in: the service's own name, or OneProcessName
// under StartOneProcess (several services, one pid: count its CPU once).
func (s *Set) Process(name string) string {
	if p, err := s.last(name); err == nil {
		return p.log
	}
	return name
}

// LogTail returns the last n lines of a service's log.
func (s *Set) LogTail(name string, n int) string { return proc.Tail(s.LogPath(name), n) }

// LogPath is the file a service's stdout and stderr are appended to (every start of it; under
// OneProcess, the shared all.log).
func (s *Set) LogPath(name string) string {
	if p, err := s.last(name); err == nil {
		name = p.log
	}
	return filepath.Join(s.dir, name+".log")
}

// MigrateArchive brings the stack's CQL keyspace to the archiver's schema (replication factor 1:
// one node), as `qimctl cql migrate` would; a stack without a CQL node has nothing to migrate.
func (s *Set) MigrateArchive(ctx context.Context) error {
	if s.ep.CQL == "" {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	cfg := archiver.MigrateConfig{Hosts: []string{s.ep.CQL}, ReplicationFactor: 1}
	if sec := s.ep.Secure; sec != nil {
		pw, err := stack.ReadPassword(sec.CQLPasswordFile)
		if err != nil {
			return fmt.Errorf("svc: %w", err)
		}
		cfg.Auth = archiver.CQLAuth{Username: sec.CQLUser, Password: []byte(pw), TLSCA: sec.CAFile}
	}
	if _, err := archiver.Migrate(ctx, cfg); err != nil {
		return fmt.Errorf("svc: migrate the archive keyspace at %s: %w", s.ep.CQL, err)
	}
	return nil
}
