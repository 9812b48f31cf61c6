package archiver

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/qim-dev/qim/services/internal/commitlog"
	"github.com/qim-dev/qim/services/internal/cqlstore"
	"github.com/qim-dev/qim/services/internal/redisdur"
)

const consumerClientID = "qim-archiver-outbox"

// conn holds the clients of one run and where it starts. The Process owns their closing.
type conn struct {
	consumer *commitlog.PartitionConsumer
	offsets  *commitlog.OffsetStore
	store    *cqlstore.Store
	rdb      *redis.Client
	start    int64
	bounds   commitlog.Bounds
}

// open performs the fail-closed start-up: the archive's schema is this binary's and its
// acknowledgements survive a node crash (cqlstore.CheckDurability), the Outbox has
// exactly one partition, and the stored position is one the log can justify — the fanout's
// rule (commitlog.ValidateStart): a committed position inside [low, high]; without one, only a
// log that still starts at offset 0. A log already trimmed past an unarchived position is a
// refusal naming the offsets; `qimctl history backfill` is the way around it, never a jump.
func (s *Service) open(ctx context.Context) (*conn, error) {
	c := &conn{}
	var err error
	if err = s.proc.Await(ctx, "the CQL archive ("+s.cfg.CQLKeyspace+")", func(ctx context.Context) (err error) {
		c.store, err = cqlstore.Open(ctx, s.cfg.cql())
		return err
	}, cqlstore.Refused); err != nil {
		return nil, &StartError{What: "CQL keyspace " + s.cfg.CQLKeyspace, Err: err}
	}
	s.proc.OnClose("cql session", func() error { c.store.Close(); return nil })
	if err = s.proc.Await(ctx, "the CQL archive ("+s.cfg.CQLKeyspace+")", func(ctx context.Context) error {
		_, err := c.store.CheckDurability(ctx)
		return err
	}, cqlstore.Refused); err != nil {
		return nil, &StartError{What: "CQL keyspace " + s.cfg.CQLKeyspace, Err: err}
	}
	opts := &redis.Options{Addr: s.cfg.RedisAddr}
	if err := s.cfg.RedisAuth.Apply(opts); err != nil {
		return nil, fmt.Errorf("archiver: %w", err)
	}
	c.rdb = redis.NewClient(opts)
	s.proc.OnClose("core redis", c.rdb.Close)
	if err := s.proc.Await(ctx, "core Redis", func(ctx context.Context) error { return c.rdb.Ping(ctx).Err() },
		redisdur.Refused); err != nil {
		return nil, &StartError{What: "core Redis " + s.cfg.RedisAddr, Err: err}
	}
	requests := commitlog.NewRequestMetrics(s.reg)
	admin, err := commitlog.NewAdmin(s.cfg.KafkaBrokers, commitlog.AdminRequests(requests), commitlog.AdminSecurity(s.cfg.kafkaSec))
	if err != nil {
		return nil, err
	}
	s.proc.OnClose("kafka admin", func() error { admin.Close(); return nil })
	var st commitlog.OutboxStart
	if err := s.proc.Await(ctx, "the broker ("+s.cfg.OutboxTopic+")", func(ctx context.Context) (err error) {
		st, err = commitlog.ResolveOutboxStart(ctx, admin, s.cfg.Group, s.cfg.OutboxTopic)
		return err
	}, commitlog.Refused); err != nil {
		return nil, &StartError{What: s.cfg.OutboxTopic, Err: err}
	}
	c.bounds, c.start, c.offsets = st.Bounds, st.Start, st.Offsets
	c.consumer, err = commitlog.NewPartitionConsumer(s.cfg.KafkaBrokers, s.cfg.OutboxTopic,
		map[int32]int64{outboxPartition: c.start}, s.consumerOptions(requests)...)
	if err != nil {
		return nil, err
	}
	s.proc.OnClose("outbox consumer", func() error { c.consumer.Close(); return nil })
	return c, nil
}

// consumerOptions hold the Outbox fetch for the configured wait, so that under load one request
// carries a batch's worth of records (the archiver is off the delivery path; Config.FetchWait).
func (s *Service) consumerOptions(requests *commitlog.RequestMetrics) []commitlog.ConsumerOption {
	return []commitlog.ConsumerOption{
		commitlog.WithClientID(consumerClientID),
		commitlog.WithRequestMetrics(requests),
		commitlog.WithFetchMaxWait(s.cfg.FetchWait),
		commitlog.WithFetchMinBytes(fetchGatherBytes),
		commitlog.WithSecurity(s.cfg.kafkaSec),
	}
}
