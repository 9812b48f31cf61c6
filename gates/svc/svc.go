// Package svc starts the Q-IM services as real child processes against a stack: the `qim`
// binary built from this checkout, one process per service, each on free loopback ports, with
// logs in the stack's project directory. Gates and end-to-end tests use it to run, kill and
// restart services exactly as an operator would.
package svc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/qim-dev/qim/gates/stack"
)

// Names of the services, in start order (a backend starts before its callers).
const (
	Writer  = "writer"
	Mailbox = "mailbox"
	Fanout  = "fanout"
	Session = "session"
	Gateway = "gateway"
)

// Order is the start order of a full deployment.
var Order = []string{Writer, Mailbox, Fanout, Session, Gateway}

// Addrs are the loopback addresses the services of one Set listen on.
type Addrs struct {
	GatewayTCP, GatewayWS, GatewayPush string
	Writer, Mailbox, Session           string
	Metrics                            map[string]string
	TokenSecret                        string
}

// Set is one deployment of the services on one stack.
type Set struct {
	bin   string
	dir   string
	ep    stack.Endpoints
	Addrs Addrs
	mu    sync.Mutex
	procs map[string]*proc
	extra []string
}

type proc struct {
	cmd    *exec.Cmd
	exited chan struct{}
	err    error
}

// Build compiles the qim binary into dir (with failpoints when tags contains "failpoints").
func Build(ctx context.Context, root, dir string, tags ...string) (string, error) {
	bin := filepath.Join(dir, "qim")
	args := []string{"build", "-o", bin}
	if len(tags) > 0 {
		args = append(args, "-tags", strings.Join(tags, ","))
	}
	cmd := exec.CommandContext(ctx, "go", append(args, "./cmd/qim")...)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("svc: build qim: %w\n%s", err, out)
	}
	return bin, nil
}

// New prepares a Set: free ports are chosen now, nothing is started. extraEnv (KEY=VALUE) is
// added to every service's environment.
func New(bin string, ep stack.Endpoints, extraEnv ...string) (*Set, error) {
	dir := filepath.Join(ep.Dir, "services")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("svc: %w", err)
	}
	ports, err := freePorts(11)
	if err != nil {
		return nil, err
	}
	a := Addrs{GatewayTCP: ports[0], GatewayWS: ports[1], GatewayPush: ports[2], Writer: ports[3], Mailbox: ports[4],
		Session: ports[9],
		Metrics: map[string]string{Gateway: ports[5], Writer: ports[6], Mailbox: ports[7], Fanout: ports[8],
			Session: ports[10]},
		TokenSecret: "qim-gate-dev-secret-" + filepath.Base(ep.Dir)}
	return &Set{bin: bin, dir: dir, ep: ep, Addrs: a, procs: map[string]*proc{}, extra: extraEnv}, nil
}

func freePorts(n int) ([]string, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	out := make([]string, 0, n)
	for i := 0; i < n; i++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("svc: free port: %w", err)
		}
		ls = append(ls, l)
		out = append(out, l.Addr().String())
	}
	return out, nil
}

// Env is the environment of one service (also what `qim-gate` prints for people).
func (s *Set) Env(name string) []string {
	a := s.Addrs
	env := []string{
		"QIM_REDIS_ADDR=" + s.ep.RedisCore, "QIM_MAILBOX_REDIS_ADDR=" + s.ep.RedisMailbox,
		"QIM_KAFKA_BROKERS=" + strings.Join(s.ep.KafkaBrokers, ","),
		fmt.Sprintf("QIM_MAILBOX_SHARD_COUNT=%d", s.ep.DispatchShards),
		"QIM_WRITER_LISTEN=" + a.Writer, "QIM_WRITER_ADDR=" + a.Writer,
		"QIM_MAILBOX_LISTEN=" + a.Mailbox, "QIM_MAILBOX_ADDR=" + a.Mailbox,
		"QIM_SESSION_LISTEN=" + a.Session, "QIM_SESSION_ADDR=" + a.Session,
		"QIM_GATEWAY_LISTEN=" + a.GatewayTCP, "QIM_GATEWAY_WS_LISTEN=" + a.GatewayWS,
		"QIM_GATEWAY_PUSH_LISTEN=" + a.GatewayPush, "QIM_GATEWAY_PUSH_ADDR=" + a.GatewayPush,
		"QIM_TOKEN_SECRET=" + a.TokenSecret,
		"QIM_WRITER_METRICS=" + a.Metrics[Writer], "QIM_MAILBOX_METRICS=" + a.Metrics[Mailbox],
		"QIM_FANOUT_METRICS=" + a.Metrics[Fanout], "QIM_GATEWAY_METRICS=" + a.Metrics[Gateway],
		"QIM_SESSION_METRICS=" + a.Metrics[Session],
	}
	return append(env, s.extra...)
}

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
