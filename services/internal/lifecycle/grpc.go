package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"net"
	"syscall"
	"time"

	"google.golang.org/grpc"

	"github.com/qim-dev/qim/services/internal/rpc"
)

// defaultGrace is how long in-flight RPCs may drain before they are cut.
const defaultGrace = 5 * time.Second

// GRPC is one gRPC server run by a Process.
type GRPC struct {
	Server *grpc.Server
	// Addr is bound once Gate passed. Ignored when Listener is set.
	Addr string
	// AddrVar names the variable that sets Addr, for the error when the port is taken.
	AddrVar string
	// Listener, when set, is already bound (the caller needed the address before Run).
	Listener net.Listener
	// Gate, when set, must return nil before the server listens (a catch-up).
	Gate func(ctx context.Context) error
	// OnListen receives the bound address.
	OnListen func(addr string)
	// Grace bounds the drain of in-flight RPCs at stop. Default 5 s.
	Grace time.Duration
}

// Serve registers a gRPC server.
func (p *Process) Serve(s GRPC) { p.servers = append(p.servers, &s) }

// ListenError: a service's listen address could not be bound.
type ListenError struct {
	Service, Addr, Var string
	Err                error
}

func (e *ListenError) Error() string {
	hint := ""
	if e.Var != "" {
		hint = "; set " + e.Var + " to another address"
	}
	if errors.Is(e.Err, syscall.EADDRINUSE) {
		return fmt.Sprintf("%s: listen on %s: address already in use (another %s, or an earlier instance, still runs%s)",
			e.Service, e.Addr, e.Service, hint)
	}
	return fmt.Sprintf("%s: listen on %s: %v%s", e.Service, e.Addr, e.Err, hint)
}

func (e *ListenError) Unwrap() error { return e.Err }

func (p *Process) serve(ctx context.Context, s *GRPC) error {
	if s.Gate != nil {
		if err := s.Gate(ctx); err != nil {
			return unlessStopping(ctx, err)
		}
	}
	ln := s.Listener
	if ln == nil {
		var err error
		if ln, err = net.Listen("tcp", s.Addr); err != nil {
			return &ListenError{Service: p.name, Addr: s.Addr, Var: s.AddrVar, Err: err}
		}
	}
	if s.OnListen != nil {
		s.OnListen(ln.Addr().String())
	}
	if err := s.Server.Serve(ln); err != nil && !errors.Is(err, grpc.ErrServerStopped) {
		return fmt.Errorf("%s: grpc on %s: %w", p.name, ln.Addr(), err)
	}
	return nil
}

func (s *GRPC) stop() {
	grace := s.Grace
	if grace <= 0 {
		grace = defaultGrace
	}
	rpc.Stop(s.Server, grace)
}

// unlessStopping drops err when ctx ended: a gate interrupted by the stop has nothing to serve.
func unlessStopping(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return nil //nolint:nilerr // the stop interrupted the gate: the normal end, nothing to serve
	}
	return err
}
