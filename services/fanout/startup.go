package fanout

import (
	"context"

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

// open performs the fail-closed start-up: the Outbox has exactly one partition and the stored
// position is one the log can justify (commitlog.ResolveOutboxStart), and qim.dispatch has
// exactly ShardCount partitions with leaders and a loaded producer id. Only then is the Outbox
// consumer created, at that position. Every refusal is a *StartError naming topic and cause.
// Each client's close is registered with the Process right after it opened, so a refusal half
// way closes exactly what was opened, in reverse.
func (s *Service) open(ctx context.Context) (*conn, error) {
	c := &conn{}
	requests := commitlog.NewRequestMetrics(s.reg)
	admin, err := commitlog.NewAdmin(s.cfg.KafkaBrokers, commitlog.AdminRequests(requests), commitlog.AdminSecurity(s.cfg.kafkaSec))
	if err != nil {
		return nil, err
	}
	s.proc.OnClose("kafka admin", closeFn(admin.Close))
	// The Outbox first: a start the log cannot justify is refused before the dispatch side is
	// opened.
	var st commitlog.OutboxStart
	if err := s.proc.Await(ctx, "the broker ("+s.cfg.OutboxTopic+")", func(ctx context.Context) (err error) {
		st, err = commitlog.ResolveOutboxStart(ctx, admin, s.cfg.Group, s.cfg.OutboxTopic)
		return err
	}, commitlog.Refused); err != nil {
		return nil, &StartError{Topic: s.cfg.OutboxTopic, Err: err}
	}
	c.bounds, c.start, c.offsets = st.Bounds, st.Start, st.Offsets
	c.producer, err = commitlog.NewDispatchProducer(commitlog.DispatchConfig{Brokers: s.cfg.KafkaBrokers, Security: s.cfg.kafkaSec,
		Topic: s.cfg.DispatchTopic, DisableIdempotence: s.cfg.DisableIdempotence, Requests: requests})
	if err != nil {
		return nil, err
	}
	s.proc.OnClose("dispatch producer", closeFn(c.producer.Close))
	if err = s.proc.Await(ctx, "the broker ("+s.cfg.DispatchTopic+")", func(ctx context.Context) error {
		return c.producer.Ready(ctx, s.cfg.ShardCount)
	}, commitlog.Refused); err != nil {
		return nil, &StartError{Topic: s.cfg.DispatchTopic, Err: err}
	}
	c.consumer, err = commitlog.NewPartitionConsumer(s.cfg.KafkaBrokers, s.cfg.OutboxTopic,
		map[int32]int64{outboxPartition: c.start}, commitlog.WithClientID(consumerClientID),
		commitlog.WithRequestMetrics(requests), commitlog.WithSecurity(s.cfg.kafkaSec))
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
