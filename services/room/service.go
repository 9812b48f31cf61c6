package room

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"google.golang.org/grpc"
	"google.golang.org/grpc/keepalive"

	"github.com/qim-dev/qim/contract"
	internalv1 "github.com/qim-dev/qim/proto/qiminternal/v1"
	"github.com/qim-dev/qim/services/internal/lifecycle"
	sendhook "github.com/qim-dev/qim/services/internal/moderation"
	"github.com/qim-dev/qim/services/internal/msgstore"
	"github.com/qim-dev/qim/services/internal/obs"
	"github.com/qim-dev/qim/services/internal/redisdur"
	"github.com/qim-dev/qim/services/internal/rpcauth"
	"github.com/qim-dev/qim/services/room/modstore"
)

// Service is one RoomWriter process.
type Service struct {
	cfg   Config
	log   *slog.Logger
	proc  *lifecycle.Process
	reg   *obs.Registry
	m     *metrics
	rooms *registry
	mods  modStore // the rooms' stored moderation (modload.go), set by start
	tally tally
	now   func() time.Time // the only clock read; rooms and rings are given its readings
	// hook is the pre-send moderation hook (nil without QIM_MODERATION_URL); premoderate.go.
	hook     *sendhook.Hook
	failOpen func()

	queued   atomic.Int64  // items on every link's queue
	nextLink atomic.Uint64 // link ids, for logs
	recvs    sync.WaitGroup
	stopping chan struct{} // closed when the process begins to stop: links end at once

	serving  atomic.Bool // the gRPC listener is open
	grpcAddr atomic.Pointer[string]
	rpc      *rpcauth.Transport
}

// New validates the configuration. Nothing is opened until Run.
func New(cfg Config, log *slog.Logger) (*Service, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.Default()
	}
	log = log.With("service", "room")
	reg := obs.NewRegistry("room")
	s := &Service{cfg: cfg, log: log, reg: reg, m: newMetrics(reg), now: time.Now, stopping: make(chan struct{}),
		proc: lifecycle.New("room", log, reg, cfg.MetricsAddr)}
	s.rooms = newRegistry(cfg.BufferEvents, cfg.BufferAge, &s.tally)
	s.gauges()
	s.openModeration()
	return s, nil
}

// GRPCAddr is the bound RoomWriter gRPC address once the listener is open ("" before).
func (s *Service) GRPCAddr() string {
	if p := s.grpcAddr.Load(); p != nil {
		return *p
	}
	return ""
}

// MetricsAddr is the bound /metrics and /healthz address once Run started it ("" before).
func (s *Service) MetricsAddr() string { return s.proc.MetricsAddr() }

// Registry is the service's metric registry.
func (s *Service) Registry() *obs.Registry { return s.reg }

// Run serves Link and Publish until ctx ends (nil) or the listener fails. A RoomWriter starts
// with no room by design, and its rooms begin new epochs as gateways rejoin them; only their
// moderation is stored, and it is loaded room by room as they are instantiated. /healthz is
// ready once the core Redis passed its checks and the gRPC listener is open.
func (s *Service) Run(ctx context.Context) error {
	return s.proc.Run(ctx, s.start, s.ready)
}

// start loads the RPC boundary, opens the core Redis (refusing an unfit one), and registers the
// sweep and the gRPC server. At stop, links end
// first (their handlers return UNAVAILABLE, so a graceful stop does not wait out its grace for
// streams that last a gateway's life), then the process waits for their receivers.
func (s *Service) start(ctx context.Context) error {
	var err error
	if s.rpc, err = s.cfg.RPC.Load(contract.RPCServiceRoom); err != nil {
		return fmt.Errorf("room: refusing to start: %w", err)
	}
	if err := s.openStore(ctx); err != nil {
		return err
	}
	s.proc.OnClose("link receivers", func() error { s.recvs.Wait(); return nil })
	s.proc.OnStop(func() { close(s.stopping) })
	s.proc.Go("idle-room sweep", s.sweepLoop)
	opts := append(s.rpc.ServerOptions(s.reg, s.log),
		grpc.MaxRecvMsgSize(contract.RPCClientMessageMax),
		grpc.KeepaliveParams(keepalive.ServerParameters{Time: linkKeepalive, Timeout: linkKeepaliveTimeout}))
	gs := grpc.NewServer(opts...)
	internalv1.RegisterRoomWriterServer(gs, grpcServer{s: s})
	s.proc.Serve(lifecycle.GRPC{Server: gs, Addr: s.cfg.ListenAddr, AddrVar: "QIM_ROOM_LISTEN",
		Gate: func(ctx context.Context) error { return sleepCtx(ctx, untilNextSecond(s.now())) },
		OnListen: func(addr string) {
			s.grpcAddr.Store(&addr)
			s.serving.Store(true)
			s.log.Info("room: serving", "grpc", addr, "rpc", s.rpc.Mode(), "metrics", s.proc.MetricsAddr(),
				"buffer_events", s.cfg.BufferEvents, "buffer_age", s.cfg.BufferAge)
		}})
	return nil
}

// openStore opens the core Redis that stores room moderation, proves it durable enough (the
// commit-facts profile: the same instance) and loads the script.
func (s *Service) openStore(ctx context.Context) error {
	opts := &redis.Options{Addr: s.cfg.RedisAddr, PoolSize: 16, MinIdleConns: 1}
	if err := s.cfg.RedisAuth.Apply(opts); err != nil {
		return fmt.Errorf("room: %w", err)
	}
	rdb := redis.NewClient(opts)
	s.proc.OnClose("redis", rdb.Close)
	if err := s.proc.Await(ctx, "core Redis", func(ctx context.Context) error {
		return msgstore.CheckCommitFactsDurability(ctx, rdb, s.cfg.AllowRelaxedRedis)
	}, redisdur.Refused); err != nil {
		return fmt.Errorf("room: refusing to start: %w", err)
	}
	st := modstore.New(rdb)
	if err := st.Preload(ctx); err != nil {
		return fmt.Errorf("room: %w", err)
	}
	s.mods = st
	return nil
}

// untilNextSecond is how long the listener waits before it opens: into the next whole second.
// A room's room_seq starts at contract.RoomSeqBase of the second this process instantiates it;
// the previous owner of every room died before this process started, so serving only from the
// second after the start keeps a restarted room's room_seq above every value it issued before,
// even when the restart took less than a second.
func untilNextSecond(now time.Time) time.Duration {
	return now.Truncate(time.Second).Add(time.Second).Sub(now)
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// ready is the /healthz readiness (the lifecycle answers 503 once the process stops).
func (s *Service) ready(context.Context) error {
	if !s.serving.Load() {
		return errors.New("room: gRPC listener not open yet")
	}
	return nil
}

// sweepLoop drops idle rooms every sweepEvery until ctx ends.
func (s *Service) sweepLoop(ctx context.Context) error {
	t := time.NewTicker(sweepEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
			s.m.roomsDropped.Add(float64(s.rooms.sweep(s.now())))
		}
	}
}
