package session

import (
	"context"
	"fmt"
	"strconv"

	"github.com/redis/go-redis/v9"

	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/services/internal/commitlog"
	"github.com/qim-dev/qim/services/internal/cqlstore"
	"github.com/qim-dev/qim/services/internal/msgstore"
	"github.com/qim-dev/qim/services/internal/redisdur"
)

// start performs the fail-closed start-up checks in order and builds the pipeline: core Redis
// fitness, the topic's live identity, the checkpoint binding, each owned partition's checkpoint
// against its log, then one consumer of the owned partitions from their checkpoints; last it registers the projector and the
// Session server with the lifecycle. Each dependency's close is registered as soon as it opened,
// so a refusal half-way closes what was opened.
func (s *Service) start(ctx context.Context) error {
	var err error
	if s.rpc, err = s.cfg.RPC.Load(contract.RPCServiceSession); err != nil {
		return fmt.Errorf("session: refusing to start: %w", err)
	}
	opts := &redis.Options{Addr: s.cfg.RedisAddr, PoolSize: 32, MinIdleConns: 2}
	if err := s.cfg.RedisAuth.Apply(opts); err != nil {
		return fmt.Errorf("session: %w", err)
	}
	s.rdb = redis.NewClient(opts)
	s.proc.OnClose("redis", s.rdb.Close)
	if err := s.proc.Await(ctx, "core Redis", func(ctx context.Context) error {
		return msgstore.CheckCommitFactsDurability(ctx, s.rdb, s.cfg.AllowRelaxedRedis)
	}, redisdur.Refused); err != nil {
		return fmt.Errorf("session: refusing to start: %w", err)
	}
	if err := loadScripts(ctx, s.rdb); err != nil {
		return err
	}
	s.st = newStore(s.rdb, s.cfg.Topic, s.cfg.ShardCount)
	var live binding
	if err := s.proc.Await(ctx, "the broker ("+s.cfg.Topic+")", func(ctx context.Context) (err error) {
		live, err = describeTopic(ctx, s.cfg.KafkaBrokers, s.cfg.kafkaSec, s.cfg.Topic)
		return err
	}, commitlog.Refused); err != nil {
		return fmt.Errorf("session: refusing to start: %w", err)
	}
	if err := checkLive(s.cfg.Topic, live, s.cfg.ShardCount); err != nil {
		return err
	}
	stored, fresh, err := s.st.bind(ctx, live)
	if err != nil {
		return fmt.Errorf("session: bind checkpoints: %w", err)
	}
	if err := compareBinding(s.cfg.Topic, stored, live); err != nil {
		return err
	}
	cps, err := s.st.checkpoints(ctx)
	if err != nil {
		return err
	}
	var bounds map[int32]commitlog.Bounds
	if err := s.proc.Await(ctx, "the broker ("+s.cfg.Topic+")", func(ctx context.Context) (err error) {
		bounds, err = s.bounds(ctx)
		return err
	}, commitlog.Refused); err != nil {
		return fmt.Errorf("session: refusing to start: %w", err)
	}
	starts, err := startOffsets(cps, bounds, s.cfg.OwnedShards)
	if err != nil {
		return fmt.Errorf("session: refusing to start: %w", err)
	}
	s.consumer, err = commitlog.NewPartitionConsumer(s.cfg.KafkaBrokers, s.cfg.Topic, starts, s.consumerOptions()...)
	if err != nil {
		return fmt.Errorf("session: dispatch consumer: %w", err)
	}
	s.proc.OnClose("dispatch consumer", func() error { s.consumer.Close(); return nil })
	hist, err := s.openHistory(ctx)
	if err != nil {
		return err
	}
	s.build(live.topicID, cps, starts, bounds, hist)
	s.log.Info("session: checkpoints bound", "topic", s.cfg.Topic, "topic_id", live.topicID, "cluster", live.cluster,
		"partitions", live.partitions, "owned_shards", s.cfg.OwnedShards.String(), "fresh_binding", fresh)
	s.register()
	return nil
}

// consumerOptions hold the dispatch fetch for the configured wait, so that under load one
// request carries many records (the projection is off the delivery path; Config.FetchWait).
func (s *Service) consumerOptions() []commitlog.ConsumerOption {
	return []commitlog.ConsumerOption{
		commitlog.WithClientID("qim-session"),
		commitlog.WithRequestMetrics(commitlog.NewRequestMetrics(s.reg)),
		commitlog.WithFetchMaxWait(s.cfg.FetchWait),
		commitlog.WithFetchMinBytes(fetchGatherBytes),
		commitlog.WithSecurity(s.cfg.kafkaSec),
	}
}

func (s *Service) bounds(ctx context.Context) (map[int32]commitlog.Bounds, error) {
	adm, err := commitlog.NewAdmin(s.cfg.KafkaBrokers, commitlog.AdminSecurity(s.cfg.kafkaSec))
	if err != nil {
		return nil, fmt.Errorf("session: %w", err)
	}
	defer adm.Close()
	b, err := adm.Watermarks(ctx, s.cfg.Topic)
	if err != nil {
		return nil, fmt.Errorf("session: %w", err)
	}
	return b, nil
}

// build wires the projector and the read side. Only the owned partitions get a position and a
// catch-up target; the others are never consumed.
func (s *Service) build(topicID string, cps []int64, starts map[int32]int64, bounds map[int32]commitlog.Bounds, hist *msgstore.Store) {
	n := len(cps)
	p := &projector{c: s.consumer, st: s.st, topicID: topicID, pollMax: s.cfg.PollMax, shards: s.cfg.shards(),
		owned: s.cfg.OwnedShards, prev: make([]string, n), next: make([]int64, n), target: make([]int64, n), m: s.m}
	for _, part := range s.cfg.OwnedShards {
		if cp := cps[part]; cp >= 0 {
			p.prev[part] = strconv.FormatInt(cp, 10)
		}
		p.next[part] = starts[int32(part)]
		p.target[part] = bounds[int32(part)].High
	}
	s.src = redisSource{st: s.st, hist: hist, headBodyMax: s.cfg.HeadBodyMax, missing: s.m.groupIntervalMissing}
	s.cache = newCache(s.src, s.cfg.SnapshotUsers, s.m.rebuilt, s.m.refreshed, s.m.evicted)
	p.mark = s.cache.mark
	s.proj = p
	s.reg.GaugeFunc("qim_session_snapshot_users", "Users whose session-list snapshot is cached.",
		func() float64 { return float64(s.cache.users()) })
}

// openHistory is the writer's history as this service reads it: the hot tier, merged with the
// CQL archive below each conversation's hot floor when the backend is tiered.
func (s *Service) openHistory(ctx context.Context) (*msgstore.Store, error) {
	if !s.cfg.History.Tiered() {
		s.log.Warn("session: QIM_MESSAGE_STORE_BACKEND=redis: DEVELOPMENT ONLY — no archive tier; history trimmed by a tiered writer would fail every row that needs it")
		return msgstore.New(s.rdb), nil
	}
	var st *cqlstore.Store
	err := s.proc.Await(ctx, "the CQL archive", func(ctx context.Context) (err error) {
		st, err = s.cfg.History.Open(ctx)
		return err
	}, cqlstore.Refused)
	if err != nil {
		return nil, fmt.Errorf("session: refusing to start: %w", err)
	}
	s.proc.OnClose("history archive", func() error { st.Close(); return nil })
	return msgstore.New(s.rdb, msgstore.WithArchive(cqlstore.HistoryTier(st))), nil
}
