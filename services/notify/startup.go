package notify

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/services/internal/backoff"
	"github.com/qim-dev/qim/services/internal/commitlog"
	"github.com/qim-dev/qim/services/internal/presence"
	"github.com/qim-dev/qim/services/internal/redisdur"
)

// The qim.dispatch fetches wait for fetchMinBytes or fetchWait, whichever comes first: under
// load that is a few fetches a second instead of one per produce, so this consumer adds little to
// the broker requests per message, for at most fetchWait more on a wake-up that is not urgent to
// the millisecond.
const (
	fetchWait     = 250 * time.Millisecond
	fetchMinBytes = 256 << 10
)

// start loads the providers, opens the core Redis, follows qim.presence from its start and
// opens the qim.dispatch consumer at the stored positions, then runs the follower and the batch
// loop. Each close is registered right after its client opened.
func (s *Service) start(ctx context.Context) error {
	providers, err := buildProviders(s.cfg)
	if err != nil {
		return fmt.Errorf("notify: refusing to start: %w", err)
	}
	opts := &redis.Options{Addr: s.cfg.RedisAddr, PoolSize: s.cfg.Concurrency + 4}
	if err := s.cfg.RedisAuth.Apply(opts); err != nil {
		return fmt.Errorf("notify: %w", err)
	}
	s.rdb = redis.NewClient(opts)
	s.proc.OnClose("redis", s.rdb.Close)
	if err := s.proc.Await(ctx, "core Redis", func(ctx context.Context) error { return s.rdb.Ping(ctx).Err() }, redisdur.Refused); err != nil {
		return fmt.Errorf("notify: refusing to start: %w", err)
	}
	requests := commitlog.NewRequestMetrics(s.reg)
	dir := &directory{dir: presence.New()}
	err = s.proc.Await(ctx, "the broker ("+contract.TopicPresence+")", func(ctx context.Context) (err error) {
		s.follower, err = presence.Follow(ctx, s.cfg.KafkaBrokers, s.cfg.kafkaSec, s.cfg.shards(), presence.FromStart,
			presence.Hooks{Apply: dir.apply, Bad: func(err error) { s.log.Warn("notify: skipped a presence record", "err", err) }},
			nil, commitlog.WithRequestMetrics(requests))
		return err
	}, commitlog.Refused)
	if err != nil {
		return fmt.Errorf("notify: refusing to start: %w", err)
	}
	s.proc.OnClose("presence follower", func() error { s.follower.Close(); return nil })
	l, err := s.openDispatch(ctx, requests)
	if err != nil {
		return err
	}
	l.dir, l.loaded, l.rdb, l.m, l.log = dir, s.follower.Loaded, s.rdb, s.m, s.log
	l.del = newDeliverer(s.cfg, s.rdb, providers, s.m, s.log)
	l.retry = backoff.New(s.cfg.RetryMin, s.cfg.RetryMax)
	var rpcMode string
	if l.badges, rpcMode, err = s.openBadges(); err != nil {
		return err
	}
	s.loop.Store(l)
	s.proc.Go("presence", s.follower.Run)
	s.proc.Go("batch", l.run)
	if s.cfg.FeedTopic != "" {
		f, err := s.openFeed(ctx, requests)
		if err != nil {
			return err
		}
		s.proc.Go("feed", f.run)
	}
	s.proc.OnStarted(func() {
		s.log.Info("notify: notifying", "group", s.cfg.Group, "shards", s.cfg.ShardCount, "providers", len(providers),
			"rpc", rpcMode, "metrics", s.proc.MetricsAddr())
	})
	return nil
}

// openBadges dials the SessionProjections for the badge, when they are configured, and says
// the internal RPC mode it dials them in ("none" without them).
func (s *Service) openBadges() (*badges, string, error) {
	if len(s.cfg.SessionAddrs) == 0 {
		return nil, "none", nil
	}
	t, err := s.cfg.RPC.Load("")
	if err != nil {
		return nil, "", fmt.Errorf("notify: refusing to start: %w", err)
	}
	b, conns, err := dialBadges(s.cfg.SessionAddrs, t.DialOption(contract.RPCServiceSession), s.cfg.shards(), s.m)
	for _, cc := range conns {
		s.proc.OnClose("session channel", cc.Close)
	}
	return b, t.Mode(), err
}

// openDispatch resolves every qim.dispatch partition's start and opens the consumer there. A
// partition without a stored position starts at its end: a new NotificationService does not
// wake devices for messages committed before it ran. A stored position the log cannot justify
// is refused, as every static consumer refuses it (commitlog.ValidateStart).
func (s *Service) openDispatch(ctx context.Context, requests *commitlog.RequestMetrics) (*loop, error) {
	admin, err := commitlog.NewAdmin(s.cfg.KafkaBrokers, commitlog.AdminRequests(requests), commitlog.AdminSecurity(s.cfg.kafkaSec))
	if err != nil {
		return nil, err
	}
	s.proc.OnClose("kafka admin", func() error { admin.Close(); return nil })
	store, err := commitlog.NewOffsetStore(admin, s.cfg.Group, contract.TopicDispatch)
	if err != nil {
		return nil, err
	}
	starts := map[int32]int64{}
	err = s.proc.Await(ctx, "the broker ("+contract.TopicDispatch+")", func(ctx context.Context) error {
		bounds, err := admin.Watermarks(ctx, contract.TopicDispatch)
		if err != nil {
			return err
		}
		if len(bounds) != s.cfg.ShardCount {
			return &commitlog.PartitionCountError{Topic: contract.TopicDispatch, Want: s.cfg.ShardCount, Got: len(bounds)}
		}
		for p, b := range bounds {
			committed, ok, err := store.Fetch(ctx, p)
			if err != nil {
				return err
			}
			if !ok {
				starts[p] = b.High
				continue
			}
			if starts[p], err = commitlog.ValidateStart(committed, true, b); err != nil {
				return fmt.Errorf("%s[%d] position of group %s: %w", contract.TopicDispatch, p, s.cfg.Group, err)
			}
		}
		return nil
	}, commitlog.Refused)
	if err != nil {
		return nil, fmt.Errorf("notify: refusing to start: %w", err)
	}
	c, err := commitlog.NewPartitionConsumer(s.cfg.KafkaBrokers, contract.TopicDispatch, starts,
		commitlog.WithClientID("qim-notify"), commitlog.WithRequestMetrics(requests), commitlog.WithSecurity(s.cfg.kafkaSec),
		commitlog.WithFetchMaxWait(fetchWait), commitlog.WithFetchMinBytes(fetchMinBytes))
	if err != nil {
		return nil, fmt.Errorf("notify: dispatch consumer: %w", err)
	}
	s.proc.OnClose("dispatch consumer", func() error { c.Close(); return nil })
	return &loop{consumer: c, pos: store, shards: s.cfg.shards()}, nil
}

// openFeed checks the feed topic, resolves the feed's qim.outbox position (its log end on a
// first start) and opens the consumer there and the feed's producer.
func (s *Service) openFeed(ctx context.Context, requests *commitlog.RequestMetrics) (*feed, error) {
	admin, err := commitlog.NewAdmin(s.cfg.KafkaBrokers, commitlog.AdminRequests(requests), commitlog.AdminSecurity(s.cfg.kafkaSec))
	if err != nil {
		return nil, err
	}
	s.proc.OnClose("feed admin", func() error { admin.Close(); return nil })
	store, err := commitlog.NewOffsetStore(admin, s.cfg.FeedGroup, contract.TopicOutbox)
	if err != nil {
		return nil, err
	}
	var start int64
	err = s.proc.Await(ctx, "the broker ("+s.cfg.FeedTopic+")", func(ctx context.Context) error {
		if _, err := admin.Watermarks(ctx, s.cfg.FeedTopic); err != nil {
			return fmt.Errorf("feed topic %s (create it first): %w", s.cfg.FeedTopic, err)
		}
		bounds, err := admin.Watermarks(ctx, contract.TopicOutbox)
		if err != nil {
			return err
		}
		b := bounds[0]
		committed, ok, err := store.Fetch(ctx, 0)
		switch {
		case err != nil:
			return err
		case !ok:
			start = b.High
			return nil
		}
		start, err = commitlog.ValidateStart(committed, true, b)
		return err
	}, commitlog.Refused)
	if err != nil {
		return nil, fmt.Errorf("notify: refusing to start the feed: %w", err)
	}
	c, err := commitlog.NewPartitionConsumer(s.cfg.KafkaBrokers, contract.TopicOutbox, map[int32]int64{0: start},
		commitlog.WithClientID("qim-feed"), commitlog.WithRequestMetrics(requests), commitlog.WithSecurity(s.cfg.kafkaSec),
		commitlog.WithFetchMaxWait(fetchWait), commitlog.WithFetchMinBytes(fetchMinBytes))
	if err != nil {
		return nil, fmt.Errorf("notify: feed consumer: %w", err)
	}
	s.proc.OnClose("feed consumer", func() error { c.Close(); return nil })
	p, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(s.cfg.KafkaBrokers...), kgo.ClientID("qim-feed"),
		kgo.DefaultProduceTopic(s.cfg.FeedTopic), kgo.RequiredAcks(kgo.AllISRAcks())}, s.cfg.kafkaSec...)...)
	if err != nil {
		return nil, fmt.Errorf("notify: feed producer: %w", err)
	}
	s.proc.OnClose("feed producer", func() error { p.Close(); return nil })
	return &feed{consumer: c, producer: p, pos: store, topic: s.cfg.FeedTopic, tenants: s.cfg.feedTenants,
		retry: backoff.New(s.cfg.RetryMin, s.cfg.RetryMax), m: s.m, log: s.log}, nil
}
