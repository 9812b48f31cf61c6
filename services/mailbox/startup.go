package mailbox

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
	"google.golang.org/grpc"

	"github.com/qim-dev/qim/contract"
	internalv1 "github.com/qim-dev/qim/proto/qiminternal/v1"
	"github.com/qim-dev/qim/services/internal/commitlog"
	"github.com/qim-dev/qim/services/internal/presence"
	"github.com/qim-dev/qim/services/internal/redisdur"
	"github.com/qim-dev/qim/services/mailbox/mailboxstore"
)

// Router tuning: not contract values.
const (
	pollMax       = 1024                  // records per poll; bounds a paused lane's spill
	pausedPollCap = 10 * time.Millisecond // poll bound while a lane is paused
)

// start performs the fail-closed start-up checks and builds the pipeline: mailbox Redis fitness,
// the qim.dispatch partition count, each owned shard's epoch and watermark against its log, then
// one consumer from watermark + 1 of every owned partition. Each dependency's close is registered
// right after it opened, so a refusal further down closes what was opened before it.
func (s *Service) start(ctx context.Context) error {
	var err error
	if s.rpc, err = s.cfg.RPC.Load(contract.RPCServiceMailbox); err != nil {
		return fmt.Errorf("mailbox: refusing to start: %w", err)
	}
	opts := &redis.Options{Addr: s.cfg.RedisAddr, PoolSize: len(s.cfg.OwnedShards) + 16, MinIdleConns: 2}
	if err := s.cfg.RedisAuth.Apply(opts); err != nil {
		return fmt.Errorf("mailbox: %w", err)
	}
	s.rdb = redis.NewClient(opts)
	s.proc.OnClose("mailbox redis", s.rdb.Close)
	if err := s.proc.Await(ctx, "mailbox Redis", func(ctx context.Context) error {
		return mailboxstore.CheckDurability(ctx, s.rdb)
	}, redisdur.Refused); err != nil {
		return fmt.Errorf("mailbox: refusing to start: %w", err)
	}
	if err := mailboxstore.LoadScripts(ctx, s.rdb); err != nil {
		return fmt.Errorf("mailbox: %w", err)
	}
	s.store = mailboxstore.New(s.rdb, s.cfg.shards())
	var bounds map[int32]commitlog.Bounds
	if err := s.proc.Await(ctx, "the broker ("+contract.TopicDispatch+")", func(ctx context.Context) (err error) {
		bounds, err = s.dispatchBounds(ctx)
		return err
	}, commitlog.Refused); err != nil {
		return fmt.Errorf("mailbox: refusing to start: %w", err)
	}
	states, err := s.store.OpenShards(ctx, s.cfg.OwnedShards)
	if err != nil {
		return fmt.Errorf("mailbox: open shards: %w", err)
	}
	starts := make(map[int32]int64, len(states))
	for _, st := range states {
		b := bounds[int32(st.Shard)]
		start, err := commitlog.ValidateStart(st.Watermark+1, st.Watermark >= 0, b)
		if err != nil {
			return &StartError{Shard: st.Shard, Watermark: st.Watermark, Bounds: b, Err: err}
		}
		starts[int32(st.Shard)] = start
		s.log.Debug("mailbox: shard start", "shard", st.Shard, "epoch", st.Epoch, "watermark", st.Watermark,
			"start", start, "log_end", b.High)
	}
	s.consumer, err = commitlog.NewPartitionConsumer(s.cfg.KafkaBrokers, contract.TopicDispatch, starts,
		commitlog.WithClientID("qim-mailbox"), commitlog.WithRequestMetrics(commitlog.NewRequestMetrics(s.reg)),
		commitlog.WithSecurity(s.cfg.kafkaSec))
	if err != nil {
		return fmt.Errorf("mailbox: dispatch consumer: %w", err)
	}
	s.proc.OnClose("dispatch consumer", func() error { s.consumer.Close(); return nil })
	if err := s.connectPush(ctx); err != nil {
		return err
	}
	s.buildPipeline(states, bounds)
	s.register()
	return nil
}

// dispatchBounds lists every partition of qim.dispatch and checks their number is the shard
// count: the partition IS the shard, so any other count routes users to shards nobody reads.
func (s *Service) dispatchBounds(ctx context.Context) (map[int32]commitlog.Bounds, error) {
	adm, err := commitlog.NewAdmin(s.cfg.KafkaBrokers, commitlog.AdminSecurity(s.cfg.kafkaSec))
	if err != nil {
		return nil, fmt.Errorf("mailbox: %w", err)
	}
	defer adm.Close()
	bounds, err := adm.Watermarks(ctx, contract.TopicDispatch)
	if err != nil {
		return nil, fmt.Errorf("mailbox: %w", err)
	}
	if len(bounds) != s.cfg.ShardCount {
		return nil, &commitlog.PartitionCountError{Topic: contract.TopicDispatch, Want: s.cfg.ShardCount, Got: len(bounds)}
	}
	return bounds, nil
}

// connectPush sets up push: to the one gateway QIM_GATEWAY_PUSH_ADDR names, or else to the
// gateways qim.presence says hold each user, loaded from the compacted log of the owned
// partitions before the node reports ready. Connections are lazy: a gateway that is down costs
// pushes, never the start.
func (s *Service) connectPush(ctx context.Context) error {
	dial := func(addr string) (*grpc.ClientConn, error) {
		return grpc.NewClient(addr, append(pushDialOptions(), s.rpc.DialOption(contract.RPCServiceGatewayPush))...)
	}
	if s.cfg.GatewayPushAddr != "" {
		conn, err := dial(s.cfg.GatewayPushAddr)
		if err != nil {
			return fmt.Errorf("mailbox: gateway push client for %s: %w", s.cfg.GatewayPushAddr, err)
		}
		s.proc.OnClose("gateway push client", conn.Close)
		s.pusher = newPusher(internalv1.NewPushClient(conn), s.cfg.PushQueue, s.m, s.log)
		s.push = s.pusher.enqueue
		s.reg.GaugeFunc("qim_mailbox_push_queue_depth", "Push targets waiting for the gateways.",
			func() float64 { return float64(len(s.pusher.q)) })
		return nil
	}
	d := newPushDirectory(dial, s.cfg.PushQueue, s.m, s.log)
	parts := make([]int32, 0, len(s.cfg.OwnedShards))
	for _, sh := range s.cfg.OwnedShards {
		parts = append(parts, int32(sh))
	}
	var f *presence.Follower
	err := s.proc.Await(ctx, "the broker ("+contract.TopicPresence+")", func(ctx context.Context) (err error) {
		f, err = presence.Follow(ctx, s.cfg.KafkaBrokers, s.cfg.kafkaSec, s.cfg.shards(), presence.FromStart,
			presence.Hooks{Apply: d.apply, Bad: func(err error) { s.log.Warn("mailbox: skipped a presence record", "err", err) }},
			parts, commitlog.WithRequestMetrics(commitlog.NewRequestMetrics(s.reg)))
		return err
	}, commitlog.Refused)
	if err != nil {
		return fmt.Errorf("mailbox: refusing to start: %w", err)
	}
	s.proc.OnClose("presence follower", func() error { f.Close(); return nil })
	s.presence, s.pushdir, s.push = f, d, d.enqueue
	s.reg.GaugeFunc("qim_mailbox_push_queue_depth", "Push targets waiting for the gateways.",
		func() float64 { return float64(d.queued()) })
	s.reg.GaugeFunc("qim_mailbox_presence_users", "Users with a device online on some gateway, per qim.presence (owned shards).",
		func() float64 { u, _ := d.stats(); return float64(u) })
	s.reg.GaugeFunc("qim_mailbox_presence_gateways", "Gateways this node has a push client for.",
		func() float64 { _, g := d.stats(); return float64(g) })
	return nil
}

// buildPipeline creates one lane and one worker per owned shard and the router over them.
func (s *Service) buildPipeline(states []mailboxstore.ShardState, bounds map[int32]commitlog.Bounds) {
	permits := make(chan struct{}, contract.MailboxMaterializePermits)
	lanes := make([]*lane, 0, len(states))
	push := s.push
	for _, st := range states {
		l := newLane(st.Shard, contract.MailboxShardFIFOCapacity)
		w := &shardWorker{lane: l, epoch: st.Epoch, shards: s.cfg.shards(), store: s.store, permits: permits,
			batchMax: s.cfg.MaterializeBatch, push: push, m: s.m, log: s.log, last: st.Watermark,
			target: bounds[int32(st.Shard)].High, wmGauge: s.m.watermark.WithLabelValues(shardLabel(st.Shard))}
		w.applied.Store(st.Watermark)
		w.wmGauge.Set(float64(st.Watermark))
		lanes = append(lanes, l)
		s.workers = append(s.workers, w)
	}
	s.router = newRouter(s.consumer, lanes, pollMax, pausedPollCap, s.m)
	s.reg.GaugeFunc("qim_mailbox_fifo_depth", "Dispatch records waiting in shard FIFOs (all owned shards).",
		func() float64 {
			n := 0
			for _, l := range lanes {
				n += l.depth()
			}
			return float64(n)
		})
}
