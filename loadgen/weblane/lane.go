// Package weblane is the browser-SDK share of loadgen's SDK lane: paired clients of the
// TypeScript SDK (clients/web, @qim/client) run under node, send to each other on an open-model
// schedule and verify per pair what the SDK surfaced, like sdklane does for the Go SDK
// (docs/adr/0011-sdk-lane-drives-the-real-sdk.md). The clients live in one node process
// (clients/web/lane/lane.ts); this package starts it, hands it the configuration and tokens on
// stdin and reads its verdict from stdout.
//
// Invariants: a lane is one run's ledger (Start at most once); Report is called once and blocks
// until node has printed its verdict or exited; a node that cannot start, log in or verify fails
// the lane with a detail that names why, never silently passes.
//
// Rejected: driving the TS SDK in a browser per client (Chromium's memory per page would cost
// the stack the CPU the perf gate measures; the SDK code is the same under node).
package weblane

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/contract/devtoken"
	"github.com/qim-dev/qim/loadgen"
)

// Config tunes a lane; the load itself comes from loadgen.LaneEnv.
type Config struct {
	// Dir is clients/web: its dist/lane/lane.js is run (npm run build makes it). Required.
	Dir string
	// URL is the gateway's WebSocket endpoint (ws://host:port/ws). Required.
	URL string
	// ConnectTimeout bounds the wait for every client to be online. Default 30 s.
	ConnectTimeout time.Duration
	// Settle bounds the wait after the window when LaneEnv.Settle is zero. Default 60 s.
	Settle time.Duration
}

// Lane runs the TS SDK clients of one loadgen run.
type Lane struct {
	cfg     Config
	mu      sync.Mutex
	started bool
	cmd     *exec.Cmd
	lines   chan string
	errBuf  *strings.Builder
}

// New returns a lane for cfg (checked at Start).
func New(cfg Config) *Lane { return &Lane{cfg: cfg} }

// ErrReused: a lane is one run's ledger.
var ErrReused = errors.New("weblane: lane already started (build one lane per run)")

// laneConfig is what lane.ts reads on stdin.
type laneConfig struct {
	URL              string       `json:"url"`
	RunID            string       `json:"runId"`
	Rate             float64      `json:"rate"`
	DurationMs       int64        `json:"durationMs"`
	SettleMs         int64        `json:"settleMs"`
	ConnectTimeoutMs int64        `json:"connectTimeoutMs"`
	Clients          []laneClient `json:"clients"`
}

type laneClient struct {
	User  string `json:"user"`
	Token string `json:"token"`
}

// laneLine is one line lane.ts prints.
type laneLine struct {
	Event    string `json:"event"`
	Detail   string `json:"detail"`
	Sent     int64  `json:"sent"`
	Acked    int64  `json:"acked"`
	Received int64  `json:"received"`
	Missing  int64  `json:"missing"`
	Repeated int64  `json:"repeated"`
	Failed   int64  `json:"failed"`
	Stray    int64  `json:"stray"`
	Passed   bool   `json:"passed"`
	Verified bool   `json:"verified"`
}

// Start launches node with env's clients and returns once every client is online.
func (l *Lane) Start(ctx context.Context, env loadgen.LaneEnv) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.started {
		return ErrReused
	}
	l.started = true
	in, err := l.input(env)
	if err != nil {
		return err
	}
	script := filepath.Join(l.cfg.Dir, "dist", "lane", "lane.js")
	if _, err := os.Stat(script); err != nil {
		return fmt.Errorf("weblane: %s is missing: run npm ci && npm run build in %s", script, l.cfg.Dir)
	}
	unlock, err := LockBuild(l.cfg.Dir, false) // until node has loaded the built files (ready)
	if err != nil {
		return err
	}
	defer unlock()
	l.cmd = exec.CommandContext(ctx, "node", "--experimental-websocket", "--no-warnings", script)
	l.cmd.Stdin = strings.NewReader(string(in))
	l.errBuf = &strings.Builder{}
	l.cmd.Stderr = l.errBuf
	stdout, err := l.cmd.StdoutPipe()
	if err != nil {
		return fmt.Errorf("weblane: %w", err)
	}
	if err := l.cmd.Start(); err != nil {
		return fmt.Errorf("weblane: start node (Debian: apt-get install nodejs): %w", err)
	}
	l.lines = make(chan string, 4)
	go l.read(stdout)
	return l.awaitReady()
}

// input is lane.ts's configuration: a dev token per client of env's users.
func (l *Lane) input(env loadgen.LaneEnv) ([]byte, error) {
	if l.cfg.Dir == "" || l.cfg.URL == "" {
		return nil, errors.New("weblane: Dir and URL are required")
	}
	if env.Clients < 2 || env.Clients%2 != 0 {
		return nil, fmt.Errorf("weblane: an even number of clients, not %d", env.Clients)
	}
	connect, settle := l.cfg.ConnectTimeout, env.Settle
	if connect <= 0 {
		connect = 30 * time.Second
	}
	if settle <= 0 {
		settle = l.cfg.Settle
	}
	if settle <= 0 {
		settle = 60 * time.Second
	}
	cfg := laneConfig{URL: l.cfg.URL, RunID: strconv.FormatUint(env.RunID, 16), Rate: env.Rate, DurationMs: env.Duration.Milliseconds(),
		SettleMs: settle.Milliseconds(), ConnectTimeoutMs: connect.Milliseconds()}
	expires := time.Now().Add(env.Duration + settle + connect + time.Hour).UnixMilli()
	for i := range env.Clients {
		user := env.FirstUser + contract.UserID(i)
		tok, err := devtoken.Issue(env.TokenSecret, devtoken.Claims{Tenant: env.Tenant, User: user,
			Device: "web-lane-" + strconv.FormatUint(uint64(user), 10), ExpiresAtMs: expires})
		if err != nil {
			return nil, fmt.Errorf("weblane: token: %w", err)
		}
		cfg.Clients = append(cfg.Clients, laneClient{User: strconv.FormatUint(uint64(user), 10), Token: tok})
	}
	return json.Marshal(cfg)
}

func (l *Lane) read(r io.Reader) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		l.lines <- sc.Text()
	}
	close(l.lines)
}

// awaitReady waits for the ready line; anything else first fails the start.
func (l *Lane) awaitReady() error {
	for line := range l.lines {
		var ev laneLine
		if json.Unmarshal([]byte(line), &ev) != nil {
			continue
		}
		if ev.Event == "ready" {
			return nil
		}
		if ev.Event == "error" {
			_ = l.cmd.Wait()
			return fmt.Errorf("weblane: %s", ev.Detail)
		}
	}
	err := l.cmd.Wait()
	return fmt.Errorf("weblane: node ended before its clients were online (%v): %s", err, tail(l.errBuf.String()))
}

// Report waits for node's verdict.
func (l *Lane) Report() loadgen.LaneReport {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.cmd == nil {
		return loadgen.LaneReport{Detail: "weblane: not started"}
	}
	rep := loadgen.LaneReport{Detail: "weblane: node printed no report"}
	for line := range l.lines {
		var ev laneLine
		if json.Unmarshal([]byte(line), &ev) != nil {
			continue
		}
		switch ev.Event {
		case "report":
			rep = loadgen.LaneReport{Sent: ev.Sent, Acked: ev.Acked, Received: ev.Received, Missing: ev.Missing, Repeated: ev.Repeated,
				Failed: ev.Failed, Passed: ev.Passed, Verified: ev.Verified,
				Detail: fmt.Sprintf("TS SDK under node: %d sent, %d acked, %d received, %d missing, %d repeated, %d failed, %d stray",
					ev.Sent, ev.Acked, ev.Received, ev.Missing, ev.Repeated, ev.Failed, ev.Stray)}
		case "error":
			rep.Detail = "weblane: " + ev.Detail
		}
	}
	if err := l.cmd.Wait(); err != nil && rep.Verified {
		rep.Passed, rep.Detail = false, fmt.Sprintf("%s; node exited: %v", rep.Detail, err)
	}
	return rep
}

func tail(s string) string {
	if len(s) > 2000 {
		return s[len(s)-2000:]
	}
	return s
}

// Build makes dir's dist/lane/lane.js current: npm ci when its dependencies are not installed,
// then npm run build (tsc). It is what a run needs before Start on a fresh checkout.
func Build(ctx context.Context, dir string) error {
	unlock, err := LockBuild(dir, true)
	if err != nil {
		return err
	}
	defer unlock()
	if _, err := os.Stat(filepath.Join(dir, "node_modules", ".package-lock.json")); err != nil {
		if err := npm(ctx, dir, "ci", "--no-audit", "--no-fund"); err != nil {
			return err
		}
	}
	return npm(ctx, dir, "run", "build")
}

func npm(ctx context.Context, dir string, args ...string) error {
	cmd := exec.CommandContext(ctx, "npm", args...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("weblane: npm %s in %s (Debian: apt-get install nodejs npm): %w\n%s", strings.Join(args, " "), dir, err, tail(string(out)))
	}
	return nil
}

// LockBuild takes dir's build lock: exclusive (a build: npm ci, tsc) or shared (node loading the
// built files), so tests and gates in parallel processes never read dist/ or node_modules/
// while another process rewrites them. The returned function releases it.
func LockBuild(dir string, exclusive bool) (func(), error) {
	f, err := os.OpenFile(filepath.Join(dir, ".build.lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("weblane: build lock: %w", err)
	}
	how := syscall.LOCK_SH
	if exclusive {
		how = syscall.LOCK_EX
	}
	if err := syscall.Flock(int(f.Fd()), how); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("weblane: build lock: %w", err)
	}
	return func() { _ = f.Close() }, nil // closing releases the lock
}
