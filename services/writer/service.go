package writer

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

	"github.com/qim-dev/qim/contract"
	internalv1 "github.com/qim-dev/qim/proto/qiminternal/v1"
	"github.com/qim-dev/qim/services/internal/commitlog"
	"github.com/qim-dev/qim/services/internal/identity"
	"github.com/qim-dev/qim/services/internal/msgstore"
	"github.com/qim-dev/qim/services/internal/obs"
	"github.com/qim-dev/qim/services/internal/rpc"
)

// ErrLeaseLost stops the writer: without its writer_id lease another writer may issue the same
// message ids, so it must not commit another message.
var ErrLeaseLost = errors.New("writer: writer_id lease lost; stopped committing")

// Service is one ConversationWriter process.
type Service struct {
	cfg       Config
	log       *slog.Logger
	rdb       *redis.Client
	store     *msgstore.Store
	out       *commitlog.OutboxProducer
	lease     *identity.Lease
	ids       *identity.Issuer
	reg       *obs.Registry
	m         *metrics
	committer *committer
	done      chan struct{}
	stop      atomic.Bool
	grpcAddr  atomic.Pointer[string]
}

// New validates the configuration. Nothing is contacted until Run.
func New(cfg Config, log *slog.Logger) (*Service, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.Default()
	}
	return &Service{cfg: cfg, log: log.With("service", "writer"), done: make(chan struct{})}, nil
}

func (s *Service) stopped() bool { return s.stop.Load() }

// GRPCAddr is the bound gRPC address once Run has started listening ("" before).
func (s *Service) GRPCAddr() string {
	if p := s.grpcAddr.Load(); p != nil {
		return *p
	}
	return ""
}

// Run starts the writer and blocks until ctx ends or the writer must stop. Start-up fails
// closed: a Redis that does not fsync every write, a missing or mis-partitioned Outbox topic, or
// no free writer_id refuse to start with an error naming the cause.
func (s *Service) Run(ctx context.Context) error {
	defer close(s.done)
	if err := s.connect(ctx); err != nil {
		return err
	}
	defer s.rdb.Close()
	defer s.out.Close()
	defer func() { _ = s.lease.Release(context.Background()) }()
	lis, err := net.Listen("tcp", s.cfg.ListenAddr)
	if err != nil {
		return fmt.Errorf("writer: listen %s: %w (is another writer running? set QIM_WRITER_LISTEN)", s.cfg.ListenAddr, err)
	}
	addr := lis.Addr().String()
	s.grpcAddr.Store(&addr)
	gs := grpc.NewServer()
	internalv1.RegisterWriterServer(gs, grpcServer{s: s})
	health := obs.NewServer(s.cfg.MetricsAddr, s.reg, s.ready)
	if err := health.Start(); err != nil {
		return err
	}
	defer func() { _ = health.Shutdown(context.Background()) }()
	s.log.Info("writer: serving", "grpc", addr, "metrics", s.cfg.MetricsAddr, "writer_id", s.lease.WriterID())

	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return s.committer.runReserve(gctx) })
	g.Go(func() error { return s.committer.runMarks(gctx) })
	g.Go(func() error { return s.committer.runRecovery(gctx, s.cfg.RecoveryInterval, s.cfg.RecoveryGrace) })
	g.Go(func() error { return untilCancel(gctx, s.lease.Run(gctx)) })
	g.Go(func() error { return untilCancel(gctx, s.ids.Run(gctx)) })
	g.Go(func() error {
		select {
		case <-s.lease.Lost():
			s.stop.Store(true)
			return ErrLeaseLost
		case <-gctx.Done():
			return nil
		}
	})
	g.Go(func() error { return gs.Serve(lis) })
	g.Go(func() error {
		<-gctx.Done()
		s.stop.Store(true)
		rpc.Stop(gs, 5*time.Second)
		return nil
	})
	return g.Wait()
}

// untilCancel treats an error caused by our own cancellation as a clean stop.
func untilCancel(ctx context.Context, err error) error {
	if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
		return nil
	}
	return err
}

// connect performs the start-up checks and builds the pipeline.
func (s *Service) connect(ctx context.Context) error {
	s.rdb = redis.NewClient(&redis.Options{Addr: s.cfg.RedisAddr, PoolSize: 32, MinIdleConns: 4})
	if err := msgstore.CheckCommitFactsDurability(ctx, s.rdb, s.cfg.AllowRelaxedRedis); err != nil {
		s.rdb.Close()
		return fmt.Errorf("writer: refusing to start: %w", err)
	}
	var err error
	if s.lease, err = s.claimLease(ctx); err != nil {
		s.rdb.Close()
		return err
	}
	s.ids, err = identity.NewIssuer(s.rdb, s.cfg.RegionID, s.lease.WriterID(), identity.WithLease(s.lease))
	if err != nil {
		s.rdb.Close()
		return fmt.Errorf("writer: hlc issuer: %w", err)
	}
	if err := s.ids.Start(ctx); err != nil {
		s.rdb.Close()
		return fmt.Errorf("writer: claim hlc window: %w", err)
	}
	s.reg = obs.NewRegistry("writer")
	s.out, err = commitlog.NewOutboxProducer(commitlog.OutboxConfig{Brokers: s.cfg.KafkaBrokers,
		Requests: commitlog.NewRequestMetrics(s.reg)})
	if err != nil {
		s.rdb.Close()
		return fmt.Errorf("writer: outbox producer: %w", err)
	}
	if err := s.out.Ready(ctx); err != nil {
		s.rdb.Close()
		s.out.Close()
		return fmt.Errorf("writer: outbox not ready: %w", err)
	}
	s.store = msgstore.New(s.rdb)
	s.m = newMetrics(s.reg)
	depth := 2 * contract.WriterInflightPerConnMax
	s.committer = newCommitter(s.store, s.out, s.ids, s.m, s.log, s.cfg.BatchMax, depth)
	return nil
}

func (s *Service) claimLease(ctx context.Context) (*identity.Lease, error) {
	var opts []identity.LeaseOption
	if s.cfg.WriterID >= 0 {
		opts = append(opts, identity.WithFixedWriterID(uint16(s.cfg.WriterID)))
	}
	l, err := identity.ClaimLease(ctx, s.rdb, s.cfg.RegionID, opts...)
	if err != nil {
		return nil, fmt.Errorf("writer: claim writer_id lease: %w", err)
	}
	return l, nil
}

// ready is the /healthz readiness: the commit-facts Redis and the Outbox partition must both be
// reachable now; a lazily created producer is not evidence.
func (s *Service) ready(ctx context.Context) error {
	if s.stopped() {
		return errors.New("writer: not committing")
	}
	if err := s.rdb.Ping(ctx).Err(); err != nil {
		return fmt.Errorf("writer: redis: %w", err)
	}
	return s.out.Ready(ctx)
}
