package notify

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"

	"github.com/redis/go-redis/v9"

	"github.com/qim-dev/qim/services/internal/lifecycle"
	"github.com/qim-dev/qim/services/internal/obs"
	"github.com/qim-dev/qim/services/internal/presence"
)

// Service is one NotificationService process. Run exactly one per Group.
type Service struct {
	cfg  Config
	log  *slog.Logger
	proc *lifecycle.Process
	reg  *obs.Registry
	m    *metrics

	rdb      *redis.Client
	follower *presence.Follower
	loop     atomic.Pointer[loop]
}

// New validates the configuration and loads the providers' keys. Nothing is contacted until Run.
func New(cfg Config, log *slog.Logger) (*Service, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.Default()
	}
	log = log.With("service", "notify")
	reg := obs.NewRegistry("notify")
	return &Service{cfg: cfg, log: log, reg: reg, m: newMetrics(reg), proc: lifecycle.New("notify", log, reg, cfg.MetricsAddr)}, nil
}

// MetricsAddr is the bound /metrics and /healthz address once Run is serving ("" before).
func (s *Service) MetricsAddr() string { return s.proc.MetricsAddr() }

// Run starts up (fail-closed: a provider whose key does not load, an unreachable Redis, a
// qim.dispatch position the log cannot justify) and notifies until ctx ends.
func (s *Service) Run(ctx context.Context) error {
	return s.proc.Run(ctx, s.start, s.ready)
}

// ready is /healthz: the presence directory is loaded, the core Redis answers and the batch
// loop is not stuck retrying a batch.
func (s *Service) ready(ctx context.Context) error {
	l := s.loop.Load()
	switch {
	case l == nil:
		return errors.New("notify: starting")
	case !s.follower.Loaded():
		return errors.New("notify: loading qim.presence")
	case l.failing.Load():
		return errors.New("notify: a batch is failing (see the log)")
	}
	if err := s.rdb.Ping(ctx).Err(); err != nil {
		return fmt.Errorf("notify: core redis: %w", err)
	}
	return nil
}
