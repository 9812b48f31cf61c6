package writer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"google.golang.org/grpc"

	"github.com/qim-dev/qim/contract"
	internalv1 "github.com/qim-dev/qim/proto/qiminternal/v1"
	"github.com/qim-dev/qim/services/internal/commitlog"
	"github.com/qim-dev/qim/services/internal/failpoint"
	"github.com/qim-dev/qim/services/internal/lifecycle"
	"github.com/qim-dev/qim/services/internal/moderation"
	"github.com/qim-dev/qim/services/internal/msgstore"
	"github.com/qim-dev/qim/services/internal/obs"
	"github.com/qim-dev/qim/services/internal/redisdur"
	"github.com/qim-dev/qim/services/internal/rpcauth"
	"github.com/qim-dev/qim/services/writer/identity"
)

// ErrLeaseLost stops the writer: without its writer_id lease another writer may issue the same
// message ids, so it must not commit another message.
var ErrLeaseLost = errors.New("writer: writer_id lease lost; stopped committing")

// Service is one ConversationWriter process.
type Service struct {
	cfg       Config
	log       *slog.Logger
	proc      *lifecycle.Process
	reg       *obs.Registry
	m         *metrics
	rdb       *redis.Client
	store     *msgstore.Store
	out       *commitlog.OutboxProducer
	lease     *identity.Lease
	ids       *identity.Issuer
	committer *committer
	// hook is the pre-send moderation hook (nil without QIM_MODERATION_URL); premoderate.go.
	hook         *moderation.Hook
	hookFailOpen prometheus.Counter
	trim         *hotTrim      // nil with the redis backend
	done         chan struct{} // closed when the pipeline stops answering sends (see halt)
	halted       sync.Once
	stop         atomic.Bool // no new send is accepted (lease lost or stopping)
	grpcAddr     atomic.Pointer[string]
	rpc          *rpcauth.Transport
}

// New validates the configuration. Nothing is contacted until Run.
func New(cfg Config, log *slog.Logger) (*Service, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.Default()
	}
	log = log.With("service", "writer")
	reg := obs.NewRegistry("writer")
	return &Service{cfg: cfg, log: log, reg: reg, m: newMetrics(reg), proc: lifecycle.New("writer", log, reg, cfg.MetricsAddr),
		done: make(chan struct{})}, nil
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
	defer s.halt()
	return s.proc.Run(ctx, s.start, s.ready)
}

// halt closes done: the pipeline answers no more sends, so a send stream stops waiting for
// answers. It runs when the process begins to stop (before the gRPC servers drain), not when
// Run returns: Run waits for the servers, the servers wait for their stream handlers, and a
// handler waiting for answers the stopped pipeline will never give would hold the process
// forever — what the chaos matrix found (a writer that lost its lease, or got SIGTERM with the
// broker unreachable, never exited). Unanswered sends stay unknown to the client, whose retry
// resumes the same intent; the recovery loop finishes them otherwise.
func (s *Service) halt() { s.halted.Do(func() { close(s.done) }) }

// start performs the start-up checks in order, builds the commit pipeline and registers its
// loops and the gRPC server.
func (s *Service) start(ctx context.Context) error {
	var err error
	if s.rpc, err = s.cfg.RPC.Load(contract.RPCServiceWriter); err != nil {
		return fmt.Errorf("writer: refusing to start: %w", err)
	}
	s.openModeration()
	opts := &redis.Options{Addr: s.cfg.RedisAddr, PoolSize: 32, MinIdleConns: 4}
	if err := s.cfg.RedisAuth.Apply(opts); err != nil {
		return fmt.Errorf("writer: %w", err)
	}
	s.rdb = redis.NewClient(opts)
	s.proc.OnClose("redis", s.rdb.Close)
	if err := s.proc.Await(ctx, "commit-facts Redis", func(ctx context.Context) error {
		return msgstore.CheckCommitFactsDurability(ctx, s.rdb, s.cfg.AllowRelaxedRedis)
	}, redisdur.Refused); err != nil {
		return fmt.Errorf("writer: refusing to start: %w", err)
	}
	if s.lease, err = s.claimLease(ctx); err != nil {
		return err
	}
	s.proc.OnClose("writer_id lease", func() error { return s.lease.Release(context.Background()) })
	s.ids, err = identity.NewIssuer(s.rdb, s.cfg.RegionID, s.lease.WriterID(), identity.WithLease(s.lease),
		identity.WithClock(failpoint.Now)) // time.Now but in the chaos matrix's clock cells
	if err != nil {
		return fmt.Errorf("writer: hlc issuer: %w", err)
	}
	if err := s.ids.Start(ctx); err != nil {
		return fmt.Errorf("writer: claim hlc window: %w", err)
	}
	s.out, err = commitlog.NewOutboxProducer(commitlog.OutboxConfig{Brokers: s.cfg.KafkaBrokers, Security: s.cfg.kafkaSec,
		Requests: commitlog.NewRequestMetrics(s.reg)})
	if err != nil {
		return fmt.Errorf("writer: outbox producer: %w", err)
	}
	s.proc.OnClose("outbox producer", func() error { s.out.Close(); return nil })
	if err := s.proc.Await(ctx, "the broker ("+s.out.Topic()+")", s.out.Ready, commitlog.Refused); err != nil {
		return fmt.Errorf("writer: outbox not ready: %w", err)
	}
	if s.store, err = s.openStore(ctx); err != nil {
		return err
	}
	s.committer = newCommitter(s.store, s.out, s.ids, s.m, s.log, s.cfg.shards(), s.cfg.BatchMax, 2*contract.WriterInflightPerConnMax)
	s.register()
	return nil
}

// serveGrace bounds the gRPC drain at stop. The commit pipeline ends with the service's context
// (its loops return, their Redis and Kafka calls are cancelled, and the recovery loop of the next
// start finishes what they held), so once the stop began a send stream only refuses the SENDs
// its gateway still writes to it; the gateways keep their streams open for as long as they run,
// so the drain always ran to its bound. The lifecycle's default of 5 s kept the writer, and its
// lease, refusing sends for 5 s: 460 unknown SENDs at 100 msg/s in the chaos matrix's
// writer-term cells, against 10-25 when the writer is killed. What can still finish is a
// history page already being read, a matter of milliseconds.
const serveGrace = time.Second

// register hands the pipeline's loops and the gRPC server to the lifecycle.
func (s *Service) register() {
	s.proc.Go("reserve", s.committer.runReserve)
	s.proc.Go("marks", s.committer.runMarks)
	s.proc.Go("recovery", func(ctx context.Context) error {
		return s.committer.runRecovery(ctx, s.cfg.RecoveryInterval, s.cfg.RecoveryGrace)
	})
	if s.trim != nil {
		s.proc.Go("hot trim", s.trim.run)
	}
	s.proc.Go("writer_id lease", s.lease.Run)
	s.proc.Go("hlc windows", s.ids.Run)
	s.proc.Go("lease watch", func(ctx context.Context) error {
		select {
		case <-s.lease.Lost():
			s.stop.Store(true)
			return ErrLeaseLost
		case <-ctx.Done():
			return nil
		}
	})
	gs := grpc.NewServer(append(s.rpc.ServerOptions(s.reg, s.log), grpc.MaxRecvMsgSize(contract.RPCClientMessageMax))...)
	internalv1.RegisterWriterServer(gs, grpcServer{s: s})
	internalv1.RegisterGroupAdminServer(gs, adminServer{s: s})
	s.proc.Serve(lifecycle.GRPC{Server: gs, Addr: s.cfg.ListenAddr, AddrVar: "QIM_WRITER_LISTEN", Grace: serveGrace,
		OnListen: func(addr string) {
			s.grpcAddr.Store(&addr)
			s.log.Info("writer: serving", "grpc", addr, "rpc", s.rpc.Mode(), "metrics", s.proc.MetricsAddr(), "writer_id", s.lease.WriterID())
		}})
	s.proc.OnStop(func() {
		s.stop.Store(true)
		s.halt()
	})
}

func (s *Service) claimLease(ctx context.Context) (*identity.Lease, error) {
	var opts []identity.LeaseOption
	if s.cfg.WriterID != nil {
		opts = append(opts, identity.WithFixedWriterID(*s.cfg.WriterID))
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
