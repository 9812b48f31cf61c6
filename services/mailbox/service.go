package mailbox

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
	"github.com/qim-dev/qim/services/internal/presence"
	"github.com/qim-dev/qim/services/internal/rpcauth"
	"github.com/qim-dev/qim/services/mailbox/mailboxstore"
)

// ErrStopped is the readiness error of a node that stopped materializing.
var ErrStopped = errors.New("mailbox: not materializing (stopped or shutting down)")

// catchUpPoll is how often the Mailbox listener's gate checks whether every owned shard caught
// up; it only delays the first pull of a start-up by at most this much.
const catchUpPoll = 10 * time.Millisecond

// Service is one MailboxNode process.
type Service struct {
	cfg      Config
	log      *slog.Logger
	proc     *lifecycle.Process
	reg      *obs.Registry
	m        *metrics
	rdb      *redis.Client
	store    *mailboxstore.Store
	consumer *commitlog.PartitionConsumer
	router   *router
	workers  []*shardWorker
	pusher   *pusher // QIM_GATEWAY_PUSH_ADDR's; nil when pushing by the directory
	pushdir  *pushDirectory
	presence *presence.Follower // nil with QIM_GATEWAY_PUSH_ADDR
	push     func([]*internalv1.PushTarget)
	rpc      *rpcauth.Transport

	caughtUp    atomic.Bool // every owned shard reached the log end seen at start-up
	pullFailing atomic.Bool // pulls are failing for a reason of ours (logged on the transitions)
	grpcAddr    atomic.Pointer[string]
}

// New validates the configuration. Nothing is contacted until Run.
func New(cfg Config, log *slog.Logger) (*Service, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.Default()
	}
	log = log.With("service", "mailbox")
	reg := obs.NewRegistry("mailbox")
	return &Service{cfg: cfg, log: log, reg: reg, m: newMetrics(reg), proc: lifecycle.New("mailbox", log, reg, cfg.MetricsAddr)}, nil
}

// GRPCAddr is the bound Mailbox gRPC address once every owned shard caught up ("" before).
func (s *Service) GRPCAddr() string {
	if v := s.grpcAddr.Load(); v != nil {
		return *v
	}
	return ""
}

// MetricsAddr is the bound /metrics and /healthz address once Run started it ("" before).
func (s *Service) MetricsAddr() string { return s.proc.MetricsAddr() }

// Registry is the node's metric registry (the invariant counters /healthz watches).
func (s *Service) Registry() *obs.Registry { return s.reg }

// Run starts the node and blocks until ctx ends (nil) or materialization must stop (an error
// naming the shard and offset, e.g. *ShardError). Start-up fails closed: a mailbox Redis that
// may evict or loses more than a second, a qim.dispatch topic with another partition count than
// QIM_MAILBOX_SHARD_COUNT, or a shard whose watermark does not line up with its log refuse to
// start. The Mailbox gRPC listener opens only after every owned shard caught up with the log end
// seen at start-up, so a pull never reads a shard that is still replaying.
func (s *Service) Run(ctx context.Context) error {
	return s.proc.Run(ctx, s.start, s.ready)
}

// register hands the router, one worker per owned shard, the pusher and the gated Mailbox
// server to the lifecycle.
func (s *Service) register() {
	s.proc.Go("dispatch router", s.router.run)
	for _, w := range s.workers {
		s.proc.Go("shard "+shardLabel(w.lane.shard), w.run)
	}
	if s.pusher != nil {
		s.proc.Go("gateway push", s.pusher.run)
	}
	if s.pushdir != nil {
		s.proc.Go("presence directory", func(ctx context.Context) error { return s.pushdir.run(ctx, s.presence) })
	}
	gs := grpc.NewServer(s.rpc.ServerOptions(s.reg, s.log)...)
	internalv1.RegisterMailboxServer(gs, grpcServer{s: s})
	s.proc.Serve(lifecycle.GRPC{Server: gs, Addr: s.cfg.ListenAddr, AddrVar: "QIM_MAILBOX_LISTEN", Gate: s.catchUp,
		OnListen: func(addr string) {
			s.grpcAddr.Store(&addr)
			s.log.Info("mailbox: serving", "grpc", addr, "rpc", s.rpc.Mode(), "metrics", s.proc.MetricsAddr(), "shards", len(s.workers))
		}})
}

// catchUp is the Mailbox listener's gate: it passes once every owned shard applied the records
// that were in its log at start-up, and the PresenceDirectory holds the owned partitions' entries
// of then (a node that served pulls before knowing who is online would not push to them).
func (s *Service) catchUp(ctx context.Context) error {
	if err := lifecycle.Poll(ctx, catchUpPoll, s.allCaughtUp); err != nil {
		return err
	}
	s.caughtUp.Store(true)
	return nil
}

func (s *Service) allCaughtUp() bool {
	if s.presence != nil && !s.presence.Loaded() {
		return false
	}
	for _, w := range s.workers {
		if !w.caughtUp() {
			return false
		}
	}
	return true
}

// ready is the /healthz readiness: materializing, caught up, and the mailbox Redis answering.
func (s *Service) ready(ctx context.Context) error {
	if s.proc.Stopping() {
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
