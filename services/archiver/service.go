package archiver

import (
	"context"
	"errors"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/qim-dev/qim/services/internal/lifecycle"
	"github.com/qim-dev/qim/services/internal/obs"
)

// tickEvery is how often the Outbox high watermark is listed: for the lag gauges and for the
// next archive watermark probe (watermark.go), so T trails the position by about this much.
const tickEvery = time.Second

// Service is one HistoryArchiver process. Run exactly one per Group.
type Service struct {
	cfg  Config
	log  *slog.Logger
	proc *lifecycle.Process
	reg  *obs.Registry
	m    *metrics
	loop atomic.Pointer[loop]
	wm   atomic.Pointer[watermark]
	conn atomic.Pointer[conn]

	// wrapStore wraps the real CQL store to inject a fault (tests). Nil in production.
	wrapStore func(rowStore) rowStore
}

// New validates the configuration. Nothing is contacted until Run.
func New(cfg Config, log *slog.Logger) (*Service, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.Default()
	}
	log = log.With("service", "archiver")
	reg := obs.NewRegistry("archiver")
	s := &Service{cfg: cfg, log: log, reg: reg, m: newMetrics(reg), proc: lifecycle.New("archiver", log, reg, cfg.MetricsAddr)}
	reg.GaugeFunc("qim_archiver_lag_records", "Outbox high watermark minus the committed position.", func() float64 {
		if l := s.loop.Load(); l != nil {
			return float64(l.lag())
		}
		return 0
	})
	reg.GaugeFunc("qim_archiver_lag_seconds",
		"Now minus the archive watermark T (NaN before the first one): how far the archive trails commits.", func() float64 {
			if w := s.wm.Load(); w != nil {
				return w.lagSeconds()
			}
			return 0
		})
	return s, nil
}

// MetricsAddr is the bound /metrics and /healthz address once Run is serving ("" before).
func (s *Service) MetricsAddr() string { return s.proc.MetricsAddr() }

// Position is the committed Outbox position (offset of the next record to archive); -1 before
// start-up passed.
func (s *Service) Position() int64 {
	if l := s.loop.Load(); l != nil {
		return l.next.Load()
	}
	return -1
}

// WatermarkMs is the archive watermark this process last published or read (Unix ms; 0: none).
func (s *Service) WatermarkMs() int64 {
	if w := s.wm.Load(); w != nil {
		return w.t.Load()
	}
	return 0
}

// Run checks the Outbox, the stored position and the archive's schema, then archives until ctx
// ends (nil) or continuing would lose a committed message from the archive (a *RecordError).
// Start-up fails closed with a *StartError.
func (s *Service) Run(ctx context.Context) error {
	return s.proc.Run(ctx, s.start, s.ready)
}

func (s *Service) start(ctx context.Context) error {
	c, err := s.open(ctx)
	if err != nil {
		return err
	}
	s.conn.Store(c)
	var store rowStore = c.store
	if s.wrapStore != nil {
		store = s.wrapStore(store)
	}
	l := newLoop(s.cfg, s.log, c.consumer, store, c.offsets, s.m, c.start, c.bounds.High)
	w := newWatermark(c.rdb, s.cfg.Group, l, s.m)
	if err := w.load(ctx); err != nil {
		return &StartError{What: "core Redis", Err: err}
	}
	s.loop.Store(l)
	s.wm.Store(w)
	s.proc.Go("batch", func(ctx context.Context) error {
		err := l.run(ctx)
		s.log.Info("archiver: batch loop ended", "position", l.next.Load())
		return err
	})
	s.proc.Go("watermark", func(ctx context.Context) error { w.run(ctx, tickEvery); return nil })
	s.proc.OnStarted(func() {
		s.log.Info("archiver: archiving", "outbox", s.cfg.OutboxTopic, "group", s.cfg.Group, "start", c.start,
			"low", c.bounds.Low, "high", c.bounds.High, "keyspace", s.cfg.CQLKeyspace, "batch", s.cfg.BatchSize,
			"metrics", s.proc.MetricsAddr())
	})
	return nil
}

// ready: the loop is not stuck retrying, and the archive answers now.
func (s *Service) ready(ctx context.Context) error {
	l, c := s.loop.Load(), s.conn.Load()
	if l == nil || c == nil {
		return errors.New("archiver: starting")
	}
	if err := l.ready(); err != nil {
		return err
	}
	return c.store.Ping(ctx)
}
