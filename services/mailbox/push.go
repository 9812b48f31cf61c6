package mailbox

import (
	"context"
	"log/slog"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"

	internalv1 "github.com/qim-dev/qim/proto/qiminternal/v1"
)

// Push tuning. Not contract values: they bound one best-effort RPC.
const (
	pushBatchMax = 256             // targets per PushBatch call
	pushTimeout  = 2 * time.Second // a slow gateway costs pushes, never materialization
	// pushReconnectMax caps gRPC's reconnect backoff to the gateway (default 120 s). A restarted
	// gateway is back within seconds; with the default cap, pushes kept failing fast long after
	// it returned, and devices waited for their next heartbeat's fallback pull.
	pushReconnectMax = time.Second
)

// pushDialOptions: reconnect quickly to a restarted gateway, and (with WaitForReady on each
// call) let a push made while the channel reconnects wait up to pushTimeout instead of failing.
func pushDialOptions() []grpc.DialOption {
	return []grpc.DialOption{
		grpc.WithConnectParams(grpc.ConnectParams{
			Backoff:           backoff.Config{BaseDelay: 100 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: pushReconnectMax},
			MinConnectTimeout: pushTimeout,
		}),
		grpc.WithDefaultCallOptions(grpc.WaitForReady(true)),
	}
}

// pusher forwards freshly materialized events to the gateway's Push service, best effort.
//
// Invariants: enqueue never blocks (a full queue drops the target and counts it as
// qim_mailbox_push_dropped_total{reason="queue_full"}), so a slow or dead gateway can never stall
// a shard worker; a push is sent only after its record is durable (the worker calls enqueue after
// the pipeline returned); nothing here touches a cursor, and nothing is retried: a lost push is
// recovered by the device's next PULL_MAILBOX.
//
// How: one bounded channel, one goroutine that takes what is queued (up to pushBatchMax) and
// sends it as one PushBatch with a timeout.
//
// Rejected: a push per record from the worker (a gateway round trip on the materialization
// path) and retries (a retried push arrives after the pull that already delivered it).
type pusher struct {
	q      chan *internalv1.PushTarget
	client internalv1.PushClient
	m      *metrics
	log    *slog.Logger
}

func newPusher(client internalv1.PushClient, depth int, m *metrics, log *slog.Logger) *pusher {
	return &pusher{q: make(chan *internalv1.PushTarget, depth), client: client, m: m, log: log}
}

func (p *pusher) enqueue(targets []*internalv1.PushTarget) {
	for _, t := range targets {
		p.enqueue1(t)
	}
}

func (p *pusher) enqueue1(t *internalv1.PushTarget) {
	select {
	case p.q <- t:
	default:
		p.m.pushDropped.WithLabelValues("queue_full").Inc()
	}
}

func (p *pusher) run(ctx context.Context) error {
	batch := make([]*internalv1.PushTarget, 0, pushBatchMax)
	failing := false
	for {
		batch = batch[:0]
		select {
		case <-ctx.Done():
			return nil
		case t := <-p.q:
			batch = append(batch, t)
		}
		for len(batch) < pushBatchMax && len(p.q) > 0 {
			batch = append(batch, <-p.q)
		}
		cctx, cancel := context.WithTimeout(ctx, pushTimeout)
		res, err := p.client.PushBatch(cctx, &internalv1.PushBatchRequest{Targets: batch})
		cancel()
		if ctx.Err() != nil {
			return nil //nolint:nilerr // shutdown; pushes are best effort
		}
		if err != nil {
			p.m.pushDropped.WithLabelValues("rpc_error").Add(float64(len(batch)))
			if !failing { // log the transition, not every batch
				p.log.Warn("mailbox: gateway push failing; devices recover by pulling", "err", err)
			}
			failing = true
			continue
		}
		if failing {
			p.log.Info("mailbox: gateway push recovered")
		}
		failing = false
		p.m.pushed.Add(float64(res.GetDelivered()))
		p.m.pushDropped.WithLabelValues("gateway").Add(float64(res.GetDropped()))
	}
}
