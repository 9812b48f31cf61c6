// Package lifecycle is the skeleton every Q-IM service process runs in: start dependencies in
// order (failing closed), serve /metrics and /healthz, run the service's loops and gRPC servers
// under one owner, drain gracefully when the context ends, and close dependencies in reverse.
package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/qim-dev/qim/services/internal/obs"
)

// shutdownGrace bounds the obs server's shutdown (a scrape in flight).
const shutdownGrace = 5 * time.Second

// Process runs one service.
//
// Invariants: every dependency registered with OnClose is closed exactly once, in the reverse
// order of registration, whether start-up failed half-way or the service ran and stopped; Run
// returns only after every loop and server it started has returned; /healthz is bound before
// start-up and answers 503 until start-up succeeded (naming the dependency Await is waiting
// for), and again from the moment the process begins to stop; a gRPC server
// listens only after its Gate passed (a MailboxNode never serves a shard that is still
// replaying); any loop's error stops the whole process (a service that lost one duty must not
// look healthy doing the others).
//
// How: Run binds the obs server, then calls the service's start function, which opens
// dependencies (waiting for unreachable ones with Await) and registers loops, servers and hooks
// on the Process; then OnStarted hooks run, and loops
// and servers run in one errgroup. When the context ends or a loop fails: Stopping turns true,
// OnStop hooks run (a gateway kicks its clients), gRPC servers drain for at most their Grace,
// and once everything returned the obs server stops and dependencies close in reverse.
//
// Rejected: each service writing its own Run with defers and an errgroup. Five copies had drifted
// (different cleanup styles, one closing a client before the loop using it had returned), and
// the sixth and seventh service would have copied one of them again.
type Process struct {
	name        string
	log         *slog.Logger
	reg         *obs.Registry
	metricsAddr string

	closers   []closer
	loops     []loop
	servers   []*GRPC
	onStarted []func()
	onStop    []func()

	stopping atomic.Bool
	started  atomic.Bool
	waiting  atomic.Pointer[string] // what Await waits for, shown by /healthz during start-up
	obsAddr  atomic.Pointer[string]
	ran      atomic.Bool
	await    awaitPolicy
}

type closer struct {
	what string
	fn   func() error
}

type loop struct {
	what string
	fn   func(ctx context.Context) error
}

// New prepares the skeleton of service name; its /metrics and /healthz will be served on
// metricsAddr from reg. Nothing happens until Run.
func New(name string, log *slog.Logger, reg *obs.Registry, metricsAddr string) *Process {
	if log == nil {
		log = slog.Default()
	}
	return &Process{name: name, log: log, reg: reg, metricsAddr: metricsAddr, await: defaultAwait}
}

// OnClose registers the closing of a dependency that was just opened. Call it right after the
// open succeeded, so a later start-up failure closes it too.
func (p *Process) OnClose(what string, fn func() error) {
	p.closers = append(p.closers, closer{what, fn})
}

// Go registers a loop that runs from after start-up until ctx ends. A loop returning an error
// (other than its context's cancellation) stops the process with that error.
func (p *Process) Go(what string, fn func(ctx context.Context) error) {
	p.loops = append(p.loops, loop{what, fn})
}

// OnStarted registers a hook that runs once /healthz is bound, before any loop starts.
func (p *Process) OnStarted(fn func()) { p.onStarted = append(p.onStarted, fn) }

// OnStop registers a hook that runs when the process begins to stop, before gRPC servers drain
// (for example kicking clients). Hooks run in registration order on one goroutine.
func (p *Process) OnStop(fn func()) { p.onStop = append(p.onStop, fn) }

// Stopping reports whether the process has begun to stop (readiness is then 503).
func (p *Process) Stopping() bool { return p.stopping.Load() }

// MetricsAddr is the bound /metrics and /healthz address once Run bound it ("" before).
func (p *Process) MetricsAddr() string {
	if a := p.obsAddr.Load(); a != nil {
		return *a
	}
	return ""
}

// Run starts the service and blocks until ctx ends (nil) or a loop or server fails (its error).
// start opens dependencies and registers loops, servers and hooks; a start error is returned
// after closing whatever start had opened. ready is the service's own readiness for /healthz.
func (p *Process) Run(ctx context.Context, start func(ctx context.Context) error, ready func(ctx context.Context) error) (err error) {
	if !p.ran.CompareAndSwap(false, true) {
		return fmt.Errorf("%s: lifecycle: Run called twice", p.name)
	}
	defer func() { err = errors.Join(err, p.closeAll()) }()
	defer p.stopping.Store(true)
	// Bound before start-up: a port clash is refused before any dependency opens, and a start-up
	// waiting for an unreachable dependency is visible (503 naming it) instead of silent.
	health := obs.NewServer(p.metricsAddr, p.reg, p.readiness(ready))
	if err := health.Start(); err != nil {
		return err
	}
	addr := health.Addr()
	p.obsAddr.Store(&addr)
	defer func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownGrace)
		defer cancel()
		if serr := health.Shutdown(sctx); serr != nil {
			p.log.Warn(p.name+": metrics server shutdown", "err", serr)
		}
	}()
	if err := start(ctx); err != nil {
		return err
	}
	p.started.Store(true)
	for _, fn := range p.onStarted {
		fn()
	}
	return p.runLoops(ctx)
}

// runLoops runs every loop and server in one errgroup, plus the stopper that drains them.
func (p *Process) runLoops(ctx context.Context) error {
	g, gctx := errgroup.WithContext(ctx)
	for _, l := range p.loops {
		g.Go(func() error {
			err := l.fn(gctx)
			if gctx.Err() != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)) {
				return nil // the process is stopping; the loop noticed
			}
			if err != nil {
				p.log.Error(p.name+": stopped", "loop", l.what, "err", err)
			}
			return err
		})
	}
	for _, s := range p.servers {
		g.Go(func() error { return p.serve(gctx, s) })
	}
	g.Go(func() error {
		<-gctx.Done()
		p.stopping.Store(true)
		for _, fn := range p.onStop {
			fn()
		}
		for _, s := range p.servers {
			s.stop()
		}
		return nil
	})
	return g.Wait()
}

func (p *Process) readiness(ready func(ctx context.Context) error) func(ctx context.Context) error {
	return func(ctx context.Context) error {
		if p.Stopping() {
			return fmt.Errorf("%s: stopping", p.name)
		}
		if !p.started.Load() {
			if w := p.waiting.Load(); w != nil {
				return fmt.Errorf("%s: starting: %s", p.name, *w)
			}
			return fmt.Errorf("%s: starting", p.name)
		}
		return ready(ctx)
	}
}

// closeAll closes the registered dependencies in reverse order and joins their errors (each is
// also logged: a failed close on the way out is worth an operator's look, never silence).
func (p *Process) closeAll() error {
	var errs []error
	for i := len(p.closers) - 1; i >= 0; i-- {
		c := p.closers[i]
		if err := c.fn(); err != nil {
			p.log.Error(p.name+": close failed", "dependency", c.what, "err", err)
			errs = append(errs, fmt.Errorf("%s: close %s: %w", p.name, c.what, err))
		}
	}
	p.closers = nil
	return errors.Join(errs...)
}

// Poll returns nil once cond holds, checking every interval, or ctx's error. It is the usual
// Gate of a server that opens after a catch-up.
func Poll(ctx context.Context, interval time.Duration, cond func() bool) error {
	t := time.NewTicker(interval)
	defer t.Stop()
	for !cond() {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
	return nil
}
