package archiver

import (
	"context"
	"errors"

	"github.com/redis/go-redis/v9"

	"github.com/qim-dev/qim/services/internal/commitlog"
	"github.com/qim-dev/qim/services/internal/cqlstore"
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

// open performs the fail-closed start-up: the archive's schema is this binary's, the Outbox has
// exactly one partition, and the stored position is one the log can justify — the fanout's
// rule (commitlog.ValidateStart): a committed position inside [low, high]; without one, only a
// log that still starts at offset 0. A log already trimmed past an unarchived position is a
// refusal naming the offsets; `qimctl history backfill` is the way around it, never a jump.
func (s *Service) open(ctx context.Context) (*conn, error) {
	c := &conn{}
	var err error
	if c.store, err = cqlstore.Open(ctx, s.cfg.cql()); err != nil {
		return nil, &StartError{What: "CQL keyspace " + s.cfg.CQLKeyspace, Err: err}
	}
	s.proc.OnClose("cql session", func() error { c.store.Close(); return nil })
	c.rdb = redis.NewClient(&redis.Options{Addr: s.cfg.RedisAddr})
	s.proc.OnClose("core redis", c.rdb.Close)
	if err := c.rdb.Ping(ctx).Err(); err != nil {
		return nil, &StartError{What: "core Redis " + s.cfg.RedisAddr, Err: err}
	}
	admin, err := commitlog.NewAdmin(s.cfg.KafkaBrokers)
	if err != nil {
		return nil, err
	}
	s.proc.OnClose("kafka admin", func() error { admin.Close(); return nil })
	if c.bounds, err = s.outboxBounds(ctx, admin); err != nil {
		return nil, err
	}
	if c.offsets, err = commitlog.NewOffsetStore(admin, s.cfg.Group, s.cfg.OutboxTopic); err != nil {
		return nil, err
	}
	committed, found, err := c.offsets.Fetch(ctx, outboxPartition)
	if err != nil {
		return nil, &StartError{What: s.cfg.OutboxTopic, Err: err}
	}
	if c.start, err = commitlog.ValidateStart(committed, found, c.bounds); err != nil {
		var oor *commitlog.OffsetOutOfRangeError
		if errors.As(err, &oor) {
			oor.Topic, oor.Partition = s.cfg.OutboxTopic, outboxPartition
		}
		return nil, &StartError{What: s.cfg.OutboxTopic, Err: err}
	}
	c.consumer, err = commitlog.NewPartitionConsumer(s.cfg.KafkaBrokers, s.cfg.OutboxTopic,
		map[int32]int64{outboxPartition: c.start}, commitlog.WithClientID(consumerClientID))
	if err != nil {
		return nil, err
	}
	s.proc.OnClose("outbox consumer", func() error { c.consumer.Close(); return nil })
	return c, nil
}

func (s *Service) outboxBounds(ctx context.Context, admin *commitlog.Admin) (commitlog.Bounds, error) {
	wm, err := admin.Watermarks(ctx, s.cfg.OutboxTopic)
	if err != nil {
		return commitlog.Bounds{}, &StartError{What: s.cfg.OutboxTopic, Err: err}
	}
	b, ok := wm[outboxPartition]
	if len(wm) != 1 || !ok {
		return commitlog.Bounds{}, &StartError{What: s.cfg.OutboxTopic,
			Err: &commitlog.PartitionCountError{Topic: s.cfg.OutboxTopic, Want: 1, Got: len(wm)}}
	}
	return b, nil
}
