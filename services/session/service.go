package session

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"google.golang.org/grpc"

	internalv1 "github.com/qim-dev/qim/proto/qiminternal/v1"
	"github.com/qim-dev/qim/services/internal/commitlog"
	"github.com/qim-dev/qim/services/internal/lifecycle"
	"github.com/qim-dev/qim/services/internal/obs"
	"github.com/qim-dev/qim/services/internal/rpcauth"
)

// catchUpPoll is how often the Session listener's gate checks whether the projection caught up.
const catchUpPoll = 10 * time.Millisecond

// Service is one SessionProjection process.
type Service struct {
	cfg      Config
	log      *slog.Logger
	proc     *lifecycle.Process
	reg      *obs.Registry
	m        *metrics
	rdb      *redis.Client
	st       *store
	src      redisSource
	cache    *cache
	consumer *commitlog.PartitionConsumer
	proj     *projector

	serving  atomic.Bool // the Session listener is open: the projection caught up
	grpcAddr atomic.Pointer[string]
	rpc      *rpcauth.Transport
}

// New validates the configuration. Nothing is contacted until Run.
func New(cfg Config, log *slog.Logger) (*Service, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.Default()
	}
	log = log.With("service", "session")
	reg := obs.NewRegistry("session")
	return &Service{cfg: cfg, log: log, reg: reg, m: newMetrics(reg), proc: lifecycle.New("session", log, reg, cfg.MetricsAddr)}, nil
}

// GRPCAddr is the bound Session gRPC address once the projection caught up ("" before).
func (s *Service) GRPCAddr() string {
	if p := s.grpcAddr.Load(); p != nil {
		return *p
	}
	return ""
}

// MetricsAddr is the bound /metrics and /healthz address once Run started it ("" before).
func (s *Service) MetricsAddr() string { return s.proc.MetricsAddr() }

// Registry is the service's metric registry (the invariant counters /healthz watches).
func (s *Service) Registry() *obs.Registry { return s.reg }

// Run starts the service and blocks until ctx ends (nil) or the projection must stop (an error
// naming the partition and offset). Start-up fails closed: a core Redis that does not fsync every
// write, a dispatch topic without a usable topic id or with another partition count than
// QIM_MAILBOX_SHARD_COUNT, checkpoints bound to another cluster or topic, or a checkpoint outside
// an owned partition's log refuse to start with an error naming the cause. The Session listener
// opens only after the owned partitions caught up with the log end seen at start-up, so a first
// page never shows a list that is still replaying.
func (s *Service) Run(ctx context.Context) error {
	return s.proc.Run(ctx, s.start, s.ready)
}

// register hands the projector and the Session server to the lifecycle. The server's gate is
// the catch-up: it listens once every owned partition reached the log end seen at start-up.
func (s *Service) register() {
	s.proc.Go("projector", s.proj.run)
	gs := grpc.NewServer(s.rpc.ServerOptions(s.reg, s.log)...)
	internalv1.RegisterSessionServer(gs, grpcServer{s: s})
	s.proc.Serve(lifecycle.GRPC{Server: gs, Addr: s.cfg.ListenAddr, AddrVar: "QIM_SESSION_LISTEN",
		Gate: func(ctx context.Context) error { return lifecycle.Poll(ctx, catchUpPoll, s.proj.caught.Load) },
		OnListen: func(addr string) {
			s.grpcAddr.Store(&addr)
			s.serving.Store(true)
			s.log.Info("session: serving", "grpc", addr, "rpc", s.rpc.Mode(), "metrics", s.proc.MetricsAddr(), "topic", s.cfg.Topic)
		}})
}

// ready is the /healthz readiness (the lifecycle answers 503 once the process stops): caught up
// and serving and the core Redis answering. The invariant counters (among them group rows hidden
// for want of intervals) turn /healthz 503 through obs.
func (s *Service) ready(ctx context.Context) error {
	if !s.serving.Load() {
		return errors.New("session: catching up with the dispatch log")
	}
	if err := s.rdb.Ping(ctx).Err(); err != nil {
		return fmt.Errorf("session: redis: %w", err)
	}
	return nil
}
