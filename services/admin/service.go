package admin

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/services/internal/commitlog"
	"github.com/qim-dev/qim/services/internal/lifecycle"
	"github.com/qim-dev/qim/services/internal/obs"
)

// storeTimeout bounds one request's store calls; a store slower than this is answered 503.
const storeTimeout = 5 * time.Second

type redisCmdable = redis.Cmdable

type metrics struct {
	requests *prometheus.CounterVec // route, status
}

// Service is the admin API process.
type Service struct {
	cfg  Config
	log  *slog.Logger
	reg  *obs.Registry
	proc *lifecycle.Process
	api  *api
}

// New validates the configuration (the keys file is read now). Nothing is contacted until Run.
func New(cfg Config, log *slog.Logger) (*Service, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.Default()
	}
	log = log.With("service", "admin")
	reg := obs.NewRegistry("admin")
	m := &metrics{requests: reg.CounterVec("qim_admin_requests_total", "Admin API requests, by route and HTTP status.", "route", "status")}
	s := &Service{cfg: cfg, log: log, reg: reg, proc: lifecycle.New("admin", log, reg, cfg.MetricsAddr)}
	s.api = &api{keys: cfg.keys, secret: cfg.TokenSecret, log: log, m: m, timeout: storeTimeout}
	return s, nil
}

// Handler is the API's HTTP handler (the routes, and GET /v1/openapi.json without a key).
func (s *Service) Handler() http.Handler {
	mux := http.NewServeMux()
	for _, rt := range routes() {
		mux.HandleFunc(rt.method+" "+rt.path, s.api.handler(rt))
	}
	mux.HandleFunc("GET /v1/openapi.json", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(OpenAPI())
	})
	return mux
}

// InvariantCounters: the admin API keeps no invariant counter (it stores through the stores'
// own checked paths).
func InvariantCounters() []string { return nil }

// Run serves until ctx ends. Start-up fails closed on an unreachable core Redis.
func (s *Service) Run(ctx context.Context) error {
	return s.proc.Run(ctx, s.start, s.ready)
}

func (s *Service) start(ctx context.Context) error {
	opts := &redis.Options{Addr: s.cfg.RedisAddr, DialTimeout: storeTimeout, ReadTimeout: storeTimeout, WriteTimeout: storeTimeout}
	if err := s.cfg.RedisAuth.Apply(opts); err != nil {
		return fmt.Errorf("admin: %w", err)
	}
	rdb := redis.NewClient(opts)
	s.proc.OnClose("redis", rdb.Close)
	if err := s.proc.Await(ctx, "core Redis", func(ctx context.Context) error { return rdb.Ping(ctx).Err() }, func(error) bool { return false }); err != nil {
		return fmt.Errorf("admin: refusing to start: core Redis %s: %w", s.cfg.RedisAddr, err)
	}
	s.api.rdb = rdb
	if err := s.startBackends(ctx); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", s.cfg.ListenAddr)
	if err != nil {
		return fmt.Errorf("admin: listen on %s: %w (set QIM_ADMIN_LISTEN to another address)", s.cfg.ListenAddr, err)
	}
	srv := &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 5 * time.Second}
	s.proc.OnClose("listener", func() error { _ = ln.Close(); return nil })
	s.proc.Go("http", func(ctx context.Context) error {
		stop := context.AfterFunc(ctx, func() {
			sctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
			defer cancel()
			_ = srv.Shutdown(sctx)
		})
		defer stop()
		if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			return fmt.Errorf("admin: serve: %w", err)
		}
		return nil
	})
	s.log.Info("admin: serving", "addr", ln.Addr().String(), "keys", len(s.cfg.keys), "dev_tokens", len(s.cfg.TokenSecret) != 0)
	return nil
}

// startBackends dials the writers (group and message routes) and the RoomWriters (room routes)
// and starts following qim.presence (GET /v1/devices), each only when configured.
func (s *Service) startBackends(ctx context.Context) error {
	if err := s.dialRPC(); err != nil {
		return err
	}
	if len(s.cfg.KafkaBrokers) == 0 {
		return nil
	}
	bad := func(err error) { s.log.Warn("admin: skipped an undecodable presence entry", "err", err) }
	var v *presenceView
	// A broker still starting is waited for, as every service does (ADR-0030); a topic of the
	// wrong shape is refused at once.
	err := s.proc.Await(ctx, "the broker ("+contract.TopicPresence+")", func(ctx context.Context) (err error) {
		v, err = followPresence(ctx, s.cfg.KafkaBrokers, s.cfg.kafkaSec, contract.ShardCount(s.cfg.ShardCount), bad)
		return err
	}, commitlog.Refused)
	if err != nil {
		return fmt.Errorf("admin: refusing to start: %w", err)
	}
	s.api.presence = v
	s.proc.OnClose("presence follower", func() error { v.f.Close(); return nil })
	s.proc.Go("presence", v.f.Run)
	return nil
}

// dialRPC dials each configured list with the admin certificate, checking the name of the
// service the list serves (Validate loaded the certificate whenever a list is set).
func (s *Service) dialRPC() error {
	if len(s.cfg.WriterAddrs) > 0 {
		w, err := dialWriters(s.cfg.WriterAddrs, s.cfg.rpc.DialOption(contract.RPCServiceWriter))
		if err != nil {
			return err
		}
		s.proc.OnClose("writers", w.Close)
		s.api.groups = w
	}
	if len(s.cfg.RoomAddrs) > 0 {
		r, err := dialRooms(s.cfg.RoomAddrs, s.cfg.rpc.DialOption(contract.RPCServiceRoom))
		if err != nil {
			return err
		}
		s.proc.OnClose("room writers", r.Close)
		s.api.rooms = r
	}
	return nil
}

// ready is green once the core Redis answers and, with presence on, qim.presence is loaded (a
// device list before that would omit devices that are online).
func (s *Service) ready(ctx context.Context) error {
	if err := s.api.rdb.Ping(ctx).Err(); err != nil {
		return fmt.Errorf("admin: core redis: %w", err)
	}
	if s.api.presence != nil && !s.api.presence.f.Loaded() {
		return errors.New("admin: qim.presence is still loading")
	}
	return nil
}
