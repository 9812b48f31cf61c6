package mailbox

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"golang.org/x/sync/errgroup"
	"google.golang.org/grpc"

	internalv1 "github.com/qim-dev/qim/proto/qiminternal/v1"
	"github.com/qim-dev/qim/services/internal/commitlog"
	"github.com/qim-dev/qim/services/internal/mailboxstore"
	"github.com/qim-dev/qim/services/internal/obs"
	"github.com/qim-dev/qim/services/internal/rpc"
)

// ErrStopped is the readiness error of a node that stopped materializing.
var ErrStopped = errors.New("mailbox: not materializing (stopped or shutting down)")

// Service is one MailboxNode process.
type Service struct {
	cfg      Config
	log      *slog.Logger
	reg      *obs.Registry
	m        *metrics
	rdb      *redis.Client
	store    *mailboxstore.Store
	consumer *commitlog.PartitionConsumer
	router   *router
	workers  []*shardWorker
	pusher   *pusher
	pushConn *grpc.ClientConn

	done        chan struct{}
	stop        atomic.Bool
	caughtUp    atomic.Bool
	pullFailing atomic.Bool // pulls are failing for a reason of ours (logged on the transitions)
	grpcAddr    atomic.Pointer[string]
	metricsAddr atomic.Pointer[string]
}

// New validates the configuration. Nothing is contacted until Run.
func New(cfg Config, log *slog.Logger) (*Service, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.Default()
	}
	reg := obs.NewRegistry("mailbox")
	return &Service{cfg: cfg, log: log.With("service", "mailbox"), reg: reg, m: newMetrics(reg),
		done: make(chan struct{})}, nil
}

// GRPCAddr is the bound Mailbox gRPC address once every owned shard caught up ("" before).
func (s *Service) GRPCAddr() string { return load(&s.grpcAddr) }

// MetricsAddr is the bound /metrics and /healthz address once Run started it ("" before).
func (s *Service) MetricsAddr() string { return load(&s.metricsAddr) }

// Registry is the node's metric registry (the invariant counters /healthz watches).
func (s *Service) Registry() *obs.Registry { return s.reg }

func load(p *atomic.Pointer[string]) string {
	if v := p.Load(); v != nil {
		return *v
	}
	return ""
}

// Run starts the node and blocks until ctx ends (nil) or materialization must stop (an error
// naming the shard and offset, e.g. *ShardError). Start-up fails closed: a mailbox Redis that
// may evict or loses more than a second, a qim.dispatch topic with another partition count than
// QIM_MAILBOX_SHARD_COUNT, or a shard whose watermark does not line up with its log refuse to
// start. The Mailbox gRPC listener opens only after every owned shard caught up with the log end
// seen at start-up, so a pull never reads a shard that is still replaying.
func (s *Service) Run(ctx context.Context) error {
	defer close(s.done)
	defer s.stop.Store(true)
	err := s.start(ctx)
	defer s.closeDeps()
	if err != nil {
		return err
	}
	health := obs.NewServer(s.cfg.MetricsAddr, s.reg, s.ready)
	if err := health.Start(); err != nil {
		return err
	}
	defer func() { _ = health.Shutdown(context.Background()) }()
	maddr := health.Addr()
	s.metricsAddr.Store(&maddr)

	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return s.router.run(gctx) })
	for _, w := range s.workers {
		g.Go(func() error { return w.run(gctx) })
	}
	if s.pusher != nil {
		g.Go(func() error { return s.pusher.run(gctx) })
	}
	gs := grpc.NewServer()
	internalv1.RegisterMailboxServer(gs, grpcServer{s: s})
	g.Go(func() error { return s.serve(gctx, gs) })
	g.Go(func() error {
		<-gctx.Done()
		s.stop.Store(true)
		rpc.Stop(gs, 5*time.Second)
		return nil
	})
	return g.Wait()
}

// serve waits for the catch-up, then opens the Mailbox listener.
func (s *Service) serve(ctx context.Context, gs *grpc.Server) error {
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for !s.allCaughtUp() {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
	s.caughtUp.Store(true)
	lis, err := net.Listen("tcp", s.cfg.ListenAddr)
	if err != nil {
		return fmt.Errorf("mailbox: listen %s: %w (is another mailbox running? set QIM_MAILBOX_LISTEN)", s.cfg.ListenAddr, err)
	}
	addr := lis.Addr().String()
	s.grpcAddr.Store(&addr)
	s.log.Info("mailbox: serving", "grpc", addr, "metrics", s.MetricsAddr(), "shards", len(s.workers))
	if err := gs.Serve(lis); err != nil && !errors.Is(err, grpc.ErrServerStopped) {
		return fmt.Errorf("mailbox: grpc: %w", err)
	}
	return nil
}

func (s *Service) allCaughtUp() bool {
	for _, w := range s.workers {
		if !w.caughtUp() {
			return false
		}
	}
	return true
}

// ready is the /healthz readiness: materializing, caught up, and the mailbox Redis answering.
func (s *Service) ready(ctx context.Context) error {
	if s.stop.Load() {
		return ErrStopped
	}
	if !s.caughtUp.Load() {
		return errors.New("mailbox: catching up with the dispatch log")
	}
	if err := s.rdb.Ping(ctx).Err(); err != nil {
		return fmt.Errorf("mailbox: redis: %w", err)
	}
	return nil
}

func (s *Service) closeDeps() {
	if s.consumer != nil {
		s.consumer.Close()
	}
	if s.pushConn != nil {
		_ = s.pushConn.Close()
	}
	if s.rdb != nil {
		_ = s.rdb.Close()
	}
}
