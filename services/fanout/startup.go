package fanout

import (
	"context"
	"errors"

	"github.com/qim-dev/qim/services/internal/commitlog"
)

// consumerClientID names the Outbox consumer in broker logs and metrics.
const consumerClientID = "qim-fanout-outbox"

// conn holds the Kafka clients of one run and where it starts. The Process owns their closing
// (registered as each one opened).
type conn struct {
	producer *commitlog.DispatchProducer
	consumer *commitlog.PartitionConsumer
	offsets  *commitlog.OffsetStore
	start    int64            // validated position to consume from
	bounds   commitlog.Bounds // Outbox bounds seen at start-up
}

// open performs the fail-closed start-up: the Outbox has exactly one partition, qim.dispatch
// has exactly ShardCount partitions with leaders and a loaded producer id, and the stored
// position is one the log can justify (commitlog.ValidateStart). Only then is the Outbox
// consumer created, at that position. Every refusal is a *StartError naming topic and cause.
// Each client's close is registered with the Process right after it opened, so a refusal half
// way closes exactly what was opened, in reverse.
func (s *Service) open(ctx context.Context) (*conn, error) {
	c := &conn{}
	requests := commitlog.NewRequestMetrics(s.reg)
	admin, err := commitlog.NewAdmin(s.cfg.KafkaBrokers, requests)
	if err != nil {
		return nil, err
	}
	s.proc.OnClose("kafka admin", closeFn(admin.Close))
	if c.bounds, err = s.outboxBounds(ctx, admin); err != nil {
		return nil, err
	}
	c.producer, err = commitlog.NewDispatchProducer(commitlog.DispatchConfig{Brokers: s.cfg.KafkaBrokers,
		Topic: s.cfg.DispatchTopic, DisableIdempotence: s.cfg.DisableIdempotence, Requests: requests})
	if err != nil {
		return nil, err
	}
	s.proc.OnClose("dispatch producer", closeFn(c.producer.Close))
	if err = c.producer.Ready(ctx, s.cfg.ShardCount); err != nil {
		return nil, &StartError{Topic: s.cfg.DispatchTopic, Err: err}
	}
	if c.offsets, err = commitlog.NewOffsetStore(admin, s.cfg.Group, s.cfg.OutboxTopic); err != nil {
		return nil, err
	}
	if c.start, err = s.startPosition(ctx, c.offsets, c.bounds); err != nil {
		return nil, err
	}
	c.consumer, err = commitlog.NewPartitionConsumer(s.cfg.KafkaBrokers, s.cfg.OutboxTopic,
		map[int32]int64{outboxPartition: c.start}, commitlog.WithClientID(consumerClientID),
		commitlog.WithRequestMetrics(requests))
	if err != nil {
		return nil, err
	}
	s.proc.OnClose("outbox consumer", closeFn(c.consumer.Close))
	return c, nil
}

// closeFn adapts a client's Close, which reports nothing, to the Process's closer.
func closeFn(fn func()) func() error {
	return func() error { fn(); return nil }
}

// outboxBounds checks the Outbox has exactly one partition and returns its bounds.
func (s *Service) outboxBounds(ctx context.Context, admin *commitlog.Admin) (commitlog.Bounds, error) {
	wm, err := admin.Watermarks(ctx, s.cfg.OutboxTopic)
	if err != nil {
		return commitlog.Bounds{}, &StartError{Topic: s.cfg.OutboxTopic, Err: err}
	}
	b, ok := wm[outboxPartition]
	if len(wm) != 1 || !ok {
		return commitlog.Bounds{}, &StartError{Topic: s.cfg.OutboxTopic,
			Err: &commitlog.PartitionCountError{Topic: s.cfg.OutboxTopic, Want: 1, Got: len(wm)}}
	}
	return b, nil
}

// startPosition reads the committed position and applies the start rule: a committed position
// must lie inside [low, high]; without one, only a log that still starts at 0 is consumed from 0.
func (s *Service) startPosition(ctx context.Context, offsets *commitlog.OffsetStore, b commitlog.Bounds) (int64, error) {
	committed, found, err := offsets.Fetch(ctx, outboxPartition)
	if err != nil {
		return -1, &StartError{Topic: s.cfg.OutboxTopic, Err: err}
	}
	start, err := commitlog.ValidateStart(committed, found, b)
	if err != nil {
		var oor *commitlog.OffsetOutOfRangeError
		if errors.As(err, &oor) {
			oor.Topic, oor.Partition = s.cfg.OutboxTopic, outboxPartition
		}
		return -1, &StartError{Topic: s.cfg.OutboxTopic, Err: err}
	}
	return start, nil
}
