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
	"strconv"
	"strings"
	"sync"

	"github.com/qim-dev/qim/gates/moderationtest"
	"github.com/qim-dev/qim/gates/ports"
	"github.com/qim-dev/qim/gates/proc"
	"github.com/qim-dev/qim/gates/stack"
	"github.com/qim-dev/qim/services"
	"github.com/qim-dev/qim/services/authn/authntest"
)

// Names of the services, in start order (a backend starts before its callers).
const (
	Writer  = "writer"
	Mailbox = "mailbox"
	Fanout  = "fanout"
	Session = "session"
	Gateway = "gateway"
	// Room is the RoomWriter (ADR-0034); left out for a binary that predates it (Services).
	Room = "room"
	// Notify is the NotificationService; left out for a binary that predates it (Services).
	Notify = "notify"
	// Archiver is started only on a stack with a CQL node (Set.Services).
	Archiver = "archiver"
)

// Order is the start order of a full deployment on a stack without a CQL node.
var Order = []string{Writer, Mailbox, Fanout, Session, Room, Gateway, Notify}

// Services is the start order of this Set's deployment, by process name: Order with every
// instance of a scaled service (Instance), then the HistoryArchiver when the stack has a CQL
// node (its keyspace must be migrated first: MigrateArchive).
func (s *Set) Services() []string {
	var out []string
	for _, service := range Order {
		if !s.runs(service) {
			continue
		}
		out = append(out, s.Instance(service)...)
	}
	if s.ep.CQL != "" {
		out = append(out, Archiver)
	}
	return out
}

// Addrs are the loopback addresses the services of one Set listen on.
type Addrs struct {
	// GatewayTCP, GatewayWS and GatewayPush are the gateway's (instance 1's with several).
	GatewayTCP, GatewayWS, GatewayPush string
	// TCP and WS are every gateway's client listeners, by process name (gateway, gateway-2, …);
	// a gateway's Push address is its entry in RPC.
	TCP, WS map[string]string
	// Writer, Mailbox and Session are the internal RPC addresses of each service's instance 1.
	Writer, Mailbox, Session string
	// RPC is every instance's internal RPC address, by process name (writer, writer-2, …).
	RPC map[string]string
	// Metrics is every process's /metrics address, by process name.
	Metrics     map[string]string
	TokenSecret string
}

// Set is one deployment of the services on one stack.
type Set struct {
	bin   string
	dir   string
	ep    stack.Endpoints
	Addrs Addrs
	mu    sync.Mutex
	procs map[string]*child
	extra []string
	n     int                // instances of each Scaled service
	certs *services.DevCerts // nil: the binary predates the internal RPC boundary
	// idp signs the JWTs the gateways accept through issuersFile (identity.go).
	idp         *authntest.IdP
	issuersFile string
	// rateLimitsFile is the gateways' QIM_GATEWAY_RATE_LIMITS (ratelimits.go).
	rateLimitsFile string
	// moderation is the stand-in for the product's moderation endpoint (moderation.go).
	moderation *moderationtest.Server
	// push holds the stand-ins of the push providers the NotificationService calls (push.go).
	push *PushStandIns
	// routes replace variables of one process (Reroute), by process name.
	routes map[string]map[string]string
}

// child is the last process started for one service name. It stays in Set.procs after it
// exited, so WaitExit and ExitErr can still report how it ended; the next start replaces it.
type child struct {
	*proc.Process
	log string // the name its log file is under (OneProcess: every service's is "all")
}

// Sentinel errors of the process methods (wrapped with the service name).
var (
	ErrNotStarted = errors.New("svc: never started")
	ErrNotRunning = errors.New("svc: not running")
	ErrRunning    = errors.New("svc: still running")
	// ErrExited: the process ended while WaitHealthy waited for it to become ready.
	ErrExited = errors.New("svc: exited during start-up")
)

// Build compiles the qim binary into dir (with failpoints when tags contains "failpoints"), and
// qimctl beside it (Set.Qimctl), for scenarios that drive the operator's tool.
func Build(ctx context.Context, root, dir string, tags ...string) (string, error) {
	bin := filepath.Join(dir, "qim")
	args := []string{"build", "-o", bin}
	// The revision under test, for --version and qim_build_info when the toolchain stamps none.
	if rev, err := exec.CommandContext(ctx, "git", "-C", root, "rev-parse", "HEAD").Output(); err == nil {
		args = append(args, "-ldflags", "-X github.com/qim-dev/qim/services/buildinfo.revision="+strings.TrimSpace(string(rev)))
	}
	if len(tags) > 0 {
		args = append(args, "-tags", strings.Join(tags, ","))
	}
	cmd := exec.CommandContext(ctx, "go", append(args, "./cmd/qim")...)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("svc: build qim: %w\n%s", err, out)
	}
	cmd = exec.CommandContext(ctx, "go", "build", "-o", filepath.Join(dir, "qimctl"), "./cmd/qimctl")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("svc: build qimctl: %w\n%s", err, out)
	}
	return bin, nil
}

// Qimctl is the qimctl Build wrote beside the qim binary, "" when there is none (a binary
// built elsewhere).
func (s *Set) Qimctl() string {
	p := filepath.Join(filepath.Dir(s.bin), "qimctl")
	if _, err := os.Stat(p); err != nil {
		return ""
	}
	return p
}

// New prepares a Set of one instance per service: free ports are chosen now, nothing is
// started. extraEnv (KEY=VALUE) is added to every service's environment.
func New(bin string, ep stack.Endpoints, extraEnv ...string) (*Set, error) {
	return NewInstances(bin, ep, 1, extraEnv...)
}

// NewInstances is New for a deployment of n instances of each Scaled service (ADR-0026). A
// count the stack's shards cannot serve, or a binary that predates several instances, is an
// error wrapping ErrInstances.
func NewInstances(bin string, ep stack.Endpoints, n int, extraEnv ...string) (*Set, error) {
	if err := checkInstances(bin, n, ep.DispatchShards); err != nil {
		return nil, err
	}
	dir := filepath.Join(ep.Dir, "services")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("svc: %w", err)
	}
	ports, err := freePorts(15 + (2*len(Scaled)+2)*(n-1))
	if err != nil {
		return nil, err
	}
	a := Addrs{GatewayTCP: ports[0], GatewayWS: ports[1], GatewayPush: ports[2], Writer: ports[3], Mailbox: ports[4],
		Session: ports[9],
		TCP:     map[string]string{Gateway: ports[0]}, WS: map[string]string{Gateway: ports[1]},
		RPC: map[string]string{Writer: ports[3], Mailbox: ports[4], Session: ports[9], Gateway: ports[2], Room: ports[12]},
		Metrics: map[string]string{Gateway: ports[5], Writer: ports[6], Mailbox: ports[7], Fanout: ports[8],
			Session: ports[10], Archiver: ports[11], Room: ports[13], Notify: ports[14]},
		TokenSecret: "qim-gate-dev-secret-" + filepath.Base(ep.Dir)}
	next := ports[15:]
	for _, service := range Scaled {
		for k := 2; k <= n; k++ {
			name := InstanceName(service, k)
			a.RPC[name], a.Metrics[name], next = next[0], next[1], next[2:]
		}
	}
	for k := 2; k <= n; k++ {
		name := InstanceName(Gateway, k)
		a.TCP[name], a.WS[name], next = next[0], next[1], next[2:]
	}
	s := &Set{bin: bin, dir: dir, ep: ep, Addrs: a, procs: map[string]*child{}, extra: extraEnv, n: n}
	if err := s.writeCerts(); err != nil {
		return nil, err
	}
	if err := s.startIdentity(); err != nil {
		return nil, err
	}
	if err := s.writeRateLimits(); err != nil {
		_ = s.idp.Close()
		return nil, err
	}
	s.startModeration()
	if err := s.startPush(); err != nil {
		_ = s.Close()
		return nil, err
	}
	return s, nil
}

// freePorts picks n loopback addresses (gates/ports: below the ephemeral range, where the
// deployment's own outgoing connections cannot take one before its process binds it).
func freePorts(n int) ([]string, error) {
	ps, err := ports.Pick(n)
	if err != nil {
		return nil, fmt.Errorf("svc: %w", err)
	}
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = net.JoinHostPort("127.0.0.1", strconv.Itoa(p))
	}
	return out, nil
}
