package sdklane

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/qim-dev/qim/loadgen"
)

// Config tunes a lane. Validate fills the defaults; the load itself (clients, rate, window)
// comes from loadgen.LaneEnv.
type Config struct {
	// Dir is the parent of the lane's temporary directory, which holds one SQLite store
	// directory per client. Default /dev/shm when it is a writable directory (tmpfs on Linux),
	// else os.TempDir(). The stores still commit with synchronous=FULL, so the SDK's SQLite work
	// is all exercised; on tmpfs their fsyncs just do not reach the disk that the stack's Redis
	// AOF fsyncs on, when loadgen shares the machine with the stack. Measured at 1,000 msg/s
	// with the default 5 % lane: load generator CPU 17.4/17.7 s on /tmp against 13.9/14.1 s on
	// /dev/shm per 60 s run. A run's report or scratch directory keeps the stores of a failing run
	// next to its report.
	Dir string
	// ConnectTimeout bounds Start's wait for every client to be online and reconciled (first
	// SyncDone). Default 30 s: a client that cannot log in within it fails the lane instead of
	// shortening its window.
	ConnectTimeout time.Duration
	// Settle bounds the wait after the window when LaneEnv.Settle is zero. Default 60 s. Longer
	// only delays the verdict of a lossy run; a healthy stack settles within a second.
	Settle time.Duration
	// KeepData keeps the client stores of a passing run too. Default false: they are removed
	// after a pass and always kept after a failure (the path is in the detail).
	KeepData bool
}

// Validate checks c and fills defaults.
func (c *Config) Validate() error {
	if c.ConnectTimeout < 0 || c.Settle < 0 {
		return errors.New("sdklane: timeouts must not be negative")
	}
	if c.Dir == "" {
		c.Dir = defaultDir()
	}
	if c.ConnectTimeout == 0 {
		c.ConnectTimeout = 30 * time.Second
	}
	if c.Settle == 0 {
		c.Settle = 60 * time.Second
	}
	return nil
}

// shmDir is the usual tmpfs mount on Linux.
const shmDir = "/dev/shm"

// defaultDir is shmDir when a directory can be created there, else os.TempDir().
func defaultDir() string {
	probe, err := os.MkdirTemp(shmDir, "qim-sdklane-probe-")
	if err != nil {
		return os.TempDir()
	}
	if os.Remove(probe) != nil {
		return os.TempDir()
	}
	return shmDir
}

// ErrReused is returned by Start on a lane that was started before: a lane is one run's ledger.
var ErrReused = errors.New("sdklane: lane already started (build one lane per run)")

// Lane is loadgen's SDK regression lane: paired clients of the real SDK send to each other on
// an open-model schedule, and the lane verifies per pair what the SDK surfaced.
//
// Invariants: every client has its own file store (never the in-memory one: the SQLite commit
// before each event is part of what is exercised); a send never waits for the previous one's
// outcome (sdk.Client.Send only records the pending row, so the schedule stays open); the
// verdict is a join of facts after the lane stopped (flowLog), and a lane that did not run to
// its verification never passes.
//
// How: Start opens, connects and waits for the first reconciliation of every client, then one
// goroutine per client walks its loadgen.Scheduler calling Send, one per client pumps its
// events into the flow logs, and the run goroutine settles, verifies and closes everything.
//
// Rejected alternative: counting SEND_ACKs on the SDK's socket. That would be a second client
// state machine next to the SDK's — the drift docs/adr/0011-sdk-lane-drives-the-real-sdk.md rules
// out — and would trust the wire instead of what the SDK tells its app.
type Lane struct {
	cfg     Config
	started atomic.Bool
	done    chan struct{} // closed when rep is final
	rep     loadgen.LaneReport
}

// New is a lane with the default Config (the signature gate 5 and qim-loadgen wire).
func New() loadgen.Lane {
	l, err := NewWith(Config{})
	if err != nil {
		panic(err) // the zero Config is valid by construction
	}
	return l
}

// NewWith is a lane with cfg.
func NewWith(cfg Config) (*Lane, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Lane{cfg: cfg, done: make(chan struct{})}, nil
}

// Start connects env.Clients clients and starts the lane (see loadgen.Lane). The lane's
// goroutines end by themselves after the verification, or soon after ctx ends.
func (l *Lane) Start(ctx context.Context, env loadgen.LaneEnv) error {
	if l.started.Swap(true) {
		return ErrReused
	}
	err := l.start(ctx, env)
	if err != nil {
		l.rep = loadgen.LaneReport{Clients: env.Clients, Detail: err.Error()}
		close(l.done)
	}
	return err
}

func (l *Lane) start(ctx context.Context, env loadgen.LaneEnv) error {
	switch {
	case env.Clients < 2 || env.Clients%2 != 0:
		return fmt.Errorf("sdklane: %d clients: need an even number ≥ 2", env.Clients)
	case env.Rate <= 0 || env.Duration <= 0:
		return fmt.Errorf("sdklane: rate %.2f and duration %s must be > 0", env.Rate, env.Duration)
	}
	if env.RunID == 0 {
		env.RunID = randomRunID()
	}
	if env.Settle <= 0 {
		env.Settle = l.cfg.Settle
	}
	dir, err := os.MkdirTemp(l.cfg.Dir, "qim-sdklane-")
	if err != nil {
		return fmt.Errorf("sdklane: data dir: %w", err)
	}
	cs, err := openClients(ctx, env, dir)
	if err == nil {
		err = waitSynced(ctx, cs, l.cfg.ConnectTimeout)
	}
	if err != nil {
		closeClients(cs)
		_ = os.RemoveAll(dir) // nothing was sent: the stores hold no evidence
		return err
	}
	go l.run(ctx, env, cs, dir)
	return nil
}

// Report waits for the verification and returns the lane's numbers and verdict.
func (l *Lane) Report() loadgen.LaneReport {
	<-l.done
	return l.rep
}

// run is the lane's owner goroutine: window, settle, verify, close.
func (l *Lane) run(ctx context.Context, env loadgen.LaneEnv, cs []*client, dir string) {
	defer close(l.done)
	start := time.Now()
	var wg sync.WaitGroup
	for _, c := range cs {
		wg.Add(1)
		go func() { defer wg.Done(); c.sendLoop(ctx, env, start) }()
	}
	wg.Wait()
	settleStart := time.Now()
	complete := settle(ctx, cs, env.Settle)
	waited := time.Since(settleStart)
	counts := make([]flowCounts, len(cs))
	for i, c := range cs {
		counts[i] = c.out.verify()
	}
	st := sumStats(cs)
	closeClients(cs)
	l.rep = buildReport(counts, reportInfo{clients: len(cs), verified: ctx.Err() == nil, complete: complete,
		waited: waited, stats: st, dir: dir})
	if l.rep.Passed && !l.cfg.KeepData {
		_ = os.RemoveAll(dir) // a pass needs no forensics; a failure keeps its stores
	}
}

// settle waits until every direction is complete (every send has an outcome and every
// committed ordinal surfaced), the bound passes or ctx ends. The bound is what turns "late"
// into "missing".
func settle(ctx context.Context, cs []*client, bound time.Duration) bool {
	deadline := time.Now().Add(bound)
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for {
		if allComplete(cs) {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		select {
		case <-ctx.Done():
			return false
		case <-t.C:
		}
	}
}

func allComplete(cs []*client) bool {
	for _, c := range cs {
		if !c.out.verify().complete() {
			return false
		}
	}
	return true
}

func randomRunID() uint64 {
	var b [8]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on supported platforms
	return binary.BigEndian.Uint64(b[:]) | 1
}
