package stack

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"
)

type processStack struct {
	cfg  *config
	name string
	dir  string

	mu       sync.Mutex
	ep       Endpoints
	children map[string]*child
	order    []string
	readyIn  map[string]time.Duration
	launched map[string]launched // what Restart needs, set once a server passed readiness
	faults   map[string]faultState
	started  bool
	ownsDir  bool             // Up created dir, so Down may remove it
	sec      *SecureEndpoints // WithSecureStores: set by Up before the servers start
	down     bool
	downErr  error
	mounted  []string // small-disk mount points Up made, unmounted by Down (disk.go)

	outMu sync.Mutex
}

// serverSpec is how the process provider starts and probes one server. Starting is split in
// two so a restart reuses the data dir as it is: prepare runs once per port set (config files,
// Kafka's StorageTool format), run only starts the process from what prepare left behind.
type serverSpec struct {
	name    string
	ports   int                                          // loopback ports to pick; ports[0] is the client port
	prepare func(ports []int) error                      // write config, create or format the data dir
	run     func(ports []int) (*child, error)            // start the process; Restart calls only this
	probe   func(ctx context.Context, ports []int) error // readiness, shared with containers (readiness.go)
	ready   func(ports []int)                            // record the endpoint
}

// launched is a server that passed readiness once: Restart starts it again from here.
type launched struct {
	spec  serverSpec
	ports []int
}

// NewProcess returns a Stack that runs every server as a child process of this one (Redis from
// the Debian package, Kafka and Cassandra from the jars of scripts/fetch-infra.sh). Defaults:
// project dir <os.TempDir()>/qim-it-<random>, no CQL, 64 dispatch shards, jar cache
// DefaultInfraCache(), JDK DefaultJavaHome, progress discarded, 10s stop grace, servers die
// with this process (see WithDetached).
func NewProcess(opts ...Option) Stack {
	cfg := newConfig(opts)
	name := projectPrefix + cfg.id
	dir := filepath.Join(cfg.root, name)
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	return &processStack{
		cfg: cfg, name: name, dir: dir,
		ep:       Endpoints{Project: name, Dir: dir, Provider: "process", DispatchShards: cfg.shards},
		children: map[string]*child{},
		launched: map[string]launched{},
		faults:   map[string]faultState{},
		readyIn:  map[string]time.Duration{},
	}
}

func (s *processStack) progressf(format string, args ...any) {
	s.outMu.Lock()
	defer s.outMu.Unlock()
	fmt.Fprintf(s.cfg.progress, "stack %s: "+format+"\n", append([]any{s.name}, args...)...)
}

func (s *processStack) Up(ctx context.Context) error {
	s.mu.Lock()
	if s.started || s.down {
		s.mu.Unlock()
		return errors.New("stack: Up may be called once, before Down")
	}
	s.started = true
	s.mu.Unlock()

	specs, err := s.specs()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(s.cfg.root, 0o755); err != nil {
		return err
	}
	if err := os.Mkdir(s.dir, 0o755); err != nil {
		return fmt.Errorf("stack: create project dir: %w", err) // never reuse another stack's dir
	}
	s.mu.Lock()
	s.ownsDir = true
	s.mu.Unlock()
	for _, sub := range []string{"pids", "logs", "conf", "data"} {
		if err := os.Mkdir(filepath.Join(s.dir, sub), 0o755); err != nil {
			return err
		}
	}
	if err := s.mountSmallDisks(); err != nil {
		return err
	}
	if s.cfg.secure {
		sec, err := writeSecureMaterial(s.dir)
		if err != nil {
			return err
		}
		s.mu.Lock()
		s.sec, s.ep.Secure = sec, sec // before any server starts; never changed after
		s.mu.Unlock()
	}
	s.progressf("starting %d servers in %s", len(specs), s.dir)
	t0 := time.Now()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		wg    sync.WaitGroup
		once  sync.Once
		first error
	)
	for _, sp := range specs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := s.launch(ctx, sp); err != nil {
				once.Do(func() { first = err; cancel() }) // a dying server fails Up at once
			}
		}()
	}
	wg.Wait()
	if first != nil {
		s.progressf("FAILED after %.1fs: %v", time.Since(t0).Seconds(), firstLine(first))
		return first
	}
	s.mu.Lock()
	ep := s.ep
	s.mu.Unlock()
	if err := writeEndpoints(s.dir, ep); err != nil {
		return err
	}
	s.progressf("ready in %.1fs", time.Since(t0).Seconds())
	return nil
}

func (s *processStack) specs() ([]serverSpec, error) {
	var specs []serverSpec
	for _, r := range []struct{ name, fsync string }{{ServerRedisCore, "always"}, {ServerRedisMailbox, "everysec"}} {
		sp, err := s.redisSpec(r.name, r.fsync)
		if err != nil {
			return nil, err
		}
		specs = append(specs, sp)
	}
	sp, err := s.kafkaSpec()
	if err != nil {
		return nil, err
	}
	specs = append(specs, sp)
	if s.cfg.cql {
		sp, err := s.cassandraSpec()
		if err != nil {
			return nil, err
		}
		specs = append(specs, sp)
	}
	return specs, nil
}

func (s *processStack) Down(ctx context.Context) error {
	s.mu.Lock()
	if s.down {
		err := s.downErr
		s.mu.Unlock()
		return err
	}
	s.down = true
	ownsDir := s.ownsDir
	kids := make([]*child, 0, len(s.children))
	for _, n := range s.order {
		kids = append(kids, s.children[n])
	}
	s.mu.Unlock()

	grace := s.cfg.grace
	if dl, ok := ctx.Deadline(); ok {
		grace = min(grace, max(time.Until(dl), 0))
	}
	errs := make([]error, len(kids))
	var wg sync.WaitGroup
	for i, c := range kids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = stopGroup(c.pid, grace, func() bool { d, _ := c.exited(); return d })
		}()
	}
	wg.Wait()
	errs = append(errs, s.unmountSmallDisks())
	if ownsDir { // never remove a directory Up did not create
		if err := os.RemoveAll(s.dir); err != nil {
			errs = append(errs, fmt.Errorf("stack: remove %s: %w", s.dir, err))
		}
	}
	err := errors.Join(errs...)
	s.mu.Lock()
	s.downErr = err
	s.mu.Unlock()
	if len(kids) > 0 {
		s.progressf("down")
	}
	return err
}

func (s *processStack) Check(ctx context.Context) error {
	s.mu.Lock()
	if s.down {
		s.mu.Unlock()
		return ErrNotRunning
	}
	kids := make([]*child, 0, len(s.order))
	for _, n := range s.order {
		kids = append(kids, s.children[n])
	}
	s.mu.Unlock()
	for _, c := range kids {
		if dead, detail := c.exited(); dead {
			return c.diedError(detail)
		}
	}
	return ctx.Err()
}
