package session

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
	"github.com/qim-dev/qim/services/internal/obs"
	"github.com/qim-dev/qim/services/internal/rpc"
)

// Service is one SessionProjection process.
type Service struct {
	cfg      Config
	log      *slog.Logger
	reg      *obs.Registry
	m        *metrics
	rdb      *redis.Client
	st       *store
	src      redisSource
	cache    *cache
	consumer *commitlog.PartitionConsumer
	proj     *projector

	stop        atomic.Bool
	serving     atomic.Bool
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
	reg := obs.NewRegistry("session")
	return &Service{cfg: cfg, log: log.With("service", "session"), reg: reg, m: newMetrics(reg)}, nil
}

// GRPCAddr is the bound Session gRPC address once the projection caught up ("" before).
func (s *Service) GRPCAddr() string { return load(&s.grpcAddr) }

// MetricsAddr is the bound /metrics and /healthz address once Run started it ("" before).
func (s *Service) MetricsAddr() string { return load(&s.metricsAddr) }

// Registry is the service's metric registry (the invariant counters /healthz watches).
func (s *Service) Registry() *obs.Registry { return s.reg }

func load(p *atomic.Pointer[string]) string {
	if v := p.Load(); v != nil {
		return *v
	}
	return ""
}

// Run starts the service and blocks until ctx ends (nil) or the projection must stop (an error
// naming the partition and offset). Start-up fails closed: a core Redis that does not fsync every
// write, a dispatch topic without a usable topic id or with another partition count than
// QIM_MAILBOX_SHARD_COUNT, checkpoints bound to another cluster or topic, or a checkpoint outside
// its log refuse to start with an error naming the cause. The Session listener opens only after
// the projection caught up with the log end seen at start-up, so a first page never shows a list
// that is still replaying.
func (s *Service) Run(ctx context.Context) error {
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
	g.Go(func() error { return s.proj.run(gctx) })
	gs := grpc.NewServer()
	internalv1.RegisterSessionServer(gs, grpcServer{s: s})
	g.Go(func() error { return s.serve(gctx, gs) })
	g.Go(func() error {
		<-gctx.Done()
		s.stop.Store(true)
		rpc.Stop(gs, 5*time.Second)
		return nil
	})
	return g.Wait()
}

// serve waits for the catch-up, then opens the Session listener.
func (s *Service) serve(ctx context.Context, gs *grpc.Server) error {
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for !s.proj.caught.Load() {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
	lis, err := net.Listen("tcp", s.cfg.ListenAddr)
	if err != nil {
		return fmt.Errorf("session: listen %s: %w (is another session service running? set QIM_SESSION_LISTEN)", s.cfg.ListenAddr, err)
	}
	addr := lis.Addr().String()
	s.grpcAddr.Store(&addr)
	s.serving.Store(true)
	s.log.Info("session: serving", "grpc", addr, "metrics", s.MetricsAddr(), "topic", s.cfg.Topic)
	if err := gs.Serve(lis); err != nil && !errors.Is(err, grpc.ErrServerStopped) {
		return fmt.Errorf("session: grpc: %w", err)
	}
	return nil
}

// ready is the /healthz readiness: projecting, caught up and serving, and the core Redis
// answering.
func (s *Service) ready(ctx context.Context) error {
	if s.stop.Load() {
		return ErrStopped
	}
	if !s.serving.Load() {
		return errors.New("session: catching up with the dispatch log")
	}
	if err := s.rdb.Ping(ctx).Err(); err != nil {
		return fmt.Errorf("session: redis: %w", err)
	}
	return nil
}

func (s *Service) closeDeps() {
	if s.consumer != nil {
		s.consumer.Close()
	}
	if s.rdb != nil {
		_ = s.rdb.Close()
	}
}
