package obs

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"sync"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Server timeouts. WriteTimeout leaves room for a 60 s CPU profile.
const (
	defaultReadyTimeout = 5 * time.Second
	readHeaderTimeout   = 5 * time.Second
	writeTimeout        = 90 * time.Second
	idleTimeout         = 60 * time.Second
)

// ServerOption tunes a Server.
type ServerOption func(*Server)

// WithReadyTimeout bounds one readiness call made by /healthz, default 5 s. A dependency slower
// than this reports not ready rather than hanging the probe.
func WithReadyTimeout(d time.Duration) ServerOption {
	return func(s *Server) {
		if d > 0 {
			s.readyTimeout = d
		}
	}
}

// ListenError: the observability address could not be bound.
type ListenError struct {
	Addr string
	Err  error
}

func (e *ListenError) Error() string {
	if errors.Is(e.Err, syscall.EADDRINUSE) {
		return fmt.Sprintf("obs: listen on %s: address already in use: another process (another Q-IM service, "+
			"or an earlier instance still running) holds the port; stop it or configure a different metrics address", e.Addr)
	}
	return fmt.Sprintf("obs: listen on %s: %v (check the metrics address setting)", e.Addr, e.Err)
}

func (e *ListenError) Unwrap() error { return e.Err }

// Server serves one service's /metrics, /healthz and /debug/pprof/.
//
// Invariants: /healthz answers 200 only when ready() returned nil within the ready timeout AND
// every invariant counter of the Registry is zero, otherwise 503 with one line per problem (the
// counter's name and value, or the readiness error with credentials masked); the serve goroutine
// is owned by the Server and Shutdown waits for it.
//
// How: net/http with a private mux (not http.DefaultServeMux, which any imported package can add
// handlers to); Start binds synchronously so a port clash fails startup with the address in the
// error, then serves in one goroutine.
//
// Rejected: a /healthz that only reports liveness. A writer of the predecessor implementation once
// opened its listener on a lazily created producer that had never reached a broker; readiness must
// exercise the real dependencies, and a broken invariant must take the instance out of rotation,
// not just a graph (docs/adr/0009-readiness-exercises-real-dependencies.md).
// /debug/pprof/cmdline is not served: command lines can carry credentials.
type Server struct {
	addr         string
	reg          *Registry
	ready        func(context.Context) error
	readyTimeout time.Duration
	srv          *http.Server

	mu       sync.Mutex
	ln       net.Listener
	done     chan struct{}
	serveErr error
}

// NewServer prepares the server; nothing is bound until Start. reg and ready are required (a
// process with no dependencies passes func(context.Context) error { return nil } explicitly);
// nil panics, because a /healthz without a readiness check would be green by omission.
func NewServer(addr string, reg *Registry, ready func(ctx context.Context) error, opts ...ServerOption) *Server {
	if reg == nil || ready == nil {
		panic("obs: NewServer needs a Registry and a readiness check")
	}
	s := &Server{addr: addr, reg: reg, ready: ready, readyTimeout: defaultReadyTimeout}
	for _, o := range opts {
		o(s)
	}
	s.srv = &http.Server{
		Handler:           s.Handler(),
		ReadHeaderTimeout: readHeaderTimeout,
		WriteTimeout:      writeTimeout,
		IdleTimeout:       idleTimeout,
	}
	return s
}

// Handler is the server's mux, for tests and for embedding into another listener.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(s.reg.Gatherer(), promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError}))
	mux.HandleFunc("/healthz", s.healthz)
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	mux.HandleFunc("/debug/pprof/cmdline", http.NotFound)
	return mux
}

// Start binds the address and serves in the background. A port clash returns a *ListenError
// that names the address and what to do.
func (s *Server) Start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ln != nil {
		return fmt.Errorf("obs: server on %s already started", s.addr)
	}
	ln, err := net.Listen("tcp", s.addr)
	if err != nil {
		return &ListenError{Addr: s.addr, Err: err}
	}
	s.ln, s.done = ln, make(chan struct{})
	go func() {
		defer close(s.done)
		if err := s.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.mu.Lock()
			s.serveErr = err
			s.mu.Unlock()
		}
	}()
	return nil
}

// Addr is the bound address (useful with port 0), or the configured one before Start.
func (s *Server) Addr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ln != nil {
		return s.ln.Addr().String()
	}
	return s.addr
}

// Shutdown stops accepting, waits for in-flight requests (bounded by ctx) and for the serve
// goroutine, and returns what went wrong, if anything.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	done := s.done
	s.mu.Unlock()
	if done == nil {
		return nil
	}
	err := s.srv.Shutdown(ctx)
	select {
	case <-done:
	case <-ctx.Done():
		return errors.Join(err, fmt.Errorf("obs: shutdown of %s: %w", s.addr, ctx.Err()))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.serveErr != nil {
		err = errors.Join(err, fmt.Errorf("obs: serve on %s: %w", s.addr, s.serveErr))
	}
	return err
}
