package fanout

import (
	"context"
	"errors"
	"log/slog"
	"sync/atomic"

	"github.com/qim-dev/qim/services/internal/lifecycle"
	"github.com/qim-dev/qim/services/internal/obs"
)

// Service is one FanoutCoordinator process. Run it exactly once per Group: two coordinators on
// one group would dispatch every record twice and race each other's positions.
type Service struct {
	cfg   Config
	log   *slog.Logger
	proc  *lifecycle.Process
	reg   *obs.Registry
	m     *metrics
	coord atomic.Pointer[coordinator]
	conn  atomic.Pointer[conn]

	// Test seams: wrap the real sink and position store to inject a fault or a crash. Nil in
	// production.
	wrapSink      func(dispatchSink) dispatchSink
	wrapPositions func(positionStore) positionStore
}

// New validates the configuration. Nothing is contacted until Run.
func New(cfg Config, log *slog.Logger) (*Service, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.Default()
	}
	log = log.With("service", "fanout")
	reg := obs.NewRegistry("fanout")
	s := &Service{cfg: cfg, log: log, reg: reg, m: newMetrics(reg), proc: lifecycle.New("fanout", log, reg, cfg.MetricsAddr)}
	s.reg.GaugeFunc("qim_fanout_outbox_lag_records", "Outbox high watermark minus the committed position.",
		func() float64 {
			if c := s.coord.Load(); c != nil {
				return float64(c.lag())
			}
			return 0
		})
	s.reg.GaugeFunc("qim_fanout_dispatch_buffered_records",
		"Dispatches handed to the producer and not yet acknowledged or failed (its bounded queue).",
		func() float64 {
			if c := s.coord.Load(); c != nil {
				return float64(c.sink.BufferedRecords())
			}
			return 0
		})
	return s, nil
}

// MetricsAddr is the bound /metrics and /healthz address once Run is serving ("" before).
func (s *Service) MetricsAddr() string { return s.proc.MetricsAddr() }

// Position is the committed Outbox position (the offset of the next record to dispatch): the
// validated start once start-up passed, then last+1 of every committed batch; -1 before.
func (s *Service) Position() int64 {
	if c := s.coord.Load(); c != nil {
		return c.next.Load()
	}
	return -1
}

// Run checks the topics and the stored position, then dispatches batches until ctx ends (nil)
// or continuing would lose or misroute a committed message (an error naming the offset, such as
// a *RecordError). Start-up fails closed with a *StartError.
func (s *Service) Run(ctx context.Context) error {
	return s.proc.Run(ctx, s.start, s.ready)
}

// start opens the Kafka clients in order (fail-closed, see open), builds the coordinator at the
// validated position and registers its two loops: the batch loop and the lag watcher.
func (s *Service) start(ctx context.Context) error {
	c, err := s.open(ctx)
	if err != nil {
		return err
	}
	s.conn.Store(c)
	var sink dispatchSink = c.producer
	if s.wrapSink != nil {
		sink = s.wrapSink(sink)
	}
	var pos positionStore = c.offsets
	if s.wrapPositions != nil {
		pos = s.wrapPositions(pos)
	}
	coord := newCoordinator(s.cfg, s.log, c.consumer, sink, pos, s.m, c.start, c.bounds.High)
	s.coord.Store(coord)
	s.proc.Go("batch", func(ctx context.Context) error {
		err := coord.run(ctx)
		s.log.Info("fanout: batch loop ended", "position", coord.next.Load(), "acknowledged", coord.acked)
		return err
	})
	s.proc.Go("lag watch", func(ctx context.Context) error { coord.watchLag(ctx); return nil })
	s.proc.OnStarted(func() {
		s.log.Info("fanout: dispatching", "outbox", s.cfg.OutboxTopic, "dispatch", s.cfg.DispatchTopic,
			"group", s.cfg.Group, "start", c.start, "low", c.bounds.Low, "high", c.bounds.High,
			"shards", s.cfg.ShardCount, "batch", s.cfg.BatchSize, "metrics", s.proc.MetricsAddr())
	})
	return nil
}

// ready is the /healthz readiness: the batch loop is not stuck retrying, and qim.dispatch is
// reachable now with every partition led (a lazily created producer is not evidence).
func (s *Service) ready(ctx context.Context) error {
	coord, c := s.coord.Load(), s.conn.Load()
	if coord == nil || c == nil {
		return errors.New("fanout: starting")
	}
	if err := coord.ready(); err != nil {
		return err
	}
	return c.producer.Ready(ctx, s.cfg.ShardCount)
}
