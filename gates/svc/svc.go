// Package svc starts the Q-IM services as real child processes against a stack: the `qim`
// binary built from this checkout, one process per service, each on free loopback ports, with
// logs in the stack's project directory. Gates and end-to-end tests use it to run, kill and
// restart services exactly as an operator would.
package svc

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"

	"github.com/qim-dev/qim/gates/stack"
	"github.com/qim-dev/qim/services"
)

// Names of the services, in start order (a backend starts before its callers).
const (
	Writer  = "writer"
	Mailbox = "mailbox"
	Fanout  = "fanout"
	Session = "session"
	Gateway = "gateway"
	// Archiver is started only on a stack with a CQL node (Set.Services).
	Archiver = "archiver"
)

// Order is the start order of a full deployment on a stack without a CQL node.
var Order = []string{Writer, Mailbox, Fanout, Session, Gateway}

// Services is the start order of this Set's deployment: Order, then the HistoryArchiver when the
// stack has a CQL node (its keyspace must be migrated first: MigrateArchive).
func (s *Set) Services() []string {
	if s.ep.CQL == "" {
		return Order
	}
	return append(append([]string(nil), Order...), Archiver)
}

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
	certs *services.DevCerts // nil: the binary predates the internal RPC boundary
}

// proc is the last process started for one service name. It stays in Set.procs after it
// exited, so WaitExit and ExitErr can still report how it ended; the next start replaces it.
type proc struct {
	cmd    *exec.Cmd
	log    string        // the name its log file is under (OneProcess: every service's is "all")
	exited chan struct{} // closed once cmd.Wait returned
	err    error         // exit error, valid once exited is closed
	paused bool          // SIGSTOPped by Pause; guarded by Set.mu
}

// Sentinel errors of the process methods (wrapped with the service name).
var (
	ErrNotStarted = errors.New("svc: never started")
	ErrNotRunning = errors.New("svc: not running")
	ErrRunning    = errors.New("svc: still running")
)

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
	ports, err := freePorts(12)
	if err != nil {
		return nil, err
	}
	a := Addrs{GatewayTCP: ports[0], GatewayWS: ports[1], GatewayPush: ports[2], Writer: ports[3], Mailbox: ports[4],
		Session: ports[9],
		Metrics: map[string]string{Gateway: ports[5], Writer: ports[6], Mailbox: ports[7], Fanout: ports[8],
			Session: ports[10], Archiver: ports[11]},
		TokenSecret: "qim-gate-dev-secret-" + filepath.Base(ep.Dir)}
	s := &Set{bin: bin, dir: dir, ep: ep, Addrs: a, procs: map[string]*proc{}, extra: extraEnv}
	if err := s.writeCerts(); err != nil {
		return nil, err
	}
	return s, nil
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
		"QIM_WRITER_LISTEN=" + a.Writer, "QIM_MAILBOX_LISTEN=" + a.Mailbox, "QIM_SESSION_LISTEN=" + a.Session,
		"QIM_GATEWAY_LISTEN=" + a.GatewayTCP, "QIM_GATEWAY_WS_LISTEN=" + a.GatewayWS,
		"QIM_GATEWAY_PUSH_LISTEN=" + a.GatewayPush, "QIM_GATEWAY_PUSH_ADDR=" + a.GatewayPush,
		"QIM_TOKEN_SECRET=" + a.TokenSecret,
		"QIM_WRITER_METRICS=" + a.Metrics[Writer], "QIM_MAILBOX_METRICS=" + a.Metrics[Mailbox],
		"QIM_FANOUT_METRICS=" + a.Metrics[Fanout], "QIM_GATEWAY_METRICS=" + a.Metrics[Gateway],
		"QIM_SESSION_METRICS=" + a.Metrics[Session],
	}
	if s.ep.CQL != "" {
		env = append(env, "QIM_CQL_HOSTS="+s.ep.CQL, "QIM_ARCHIVER_METRICS="+a.Metrics[Archiver])
	}
	env = append(env, s.backendAddrEnv()...)
	env = append(env, s.rpcEnv(name)...)
	return append(env, s.extra...)
}
