package gateway

// The gateway's side of the PresenceDirectory (ADR-0027): it publishes where its devices are
// online to qim.presence, and kicks a local session when another gateway publishes a newer
// login of the same device. Nothing on the push path reads presence here; MailboxNodes do.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/services/internal/commitlog"
	"github.com/qim-dev/qim/services/internal/presence"
)

// Presence tuning: not contract values.
const (
	// presenceLoginWait bounds how long AUTH_OK waits for its online entry's ack. Waiting at all
	// shrinks the window in which a MailboxNode does not yet know the device (its messages are
	// then found by the device's pulls, not pushed) to one fetch of the node's consumer.
	presenceLoginWait = time.Second
	presenceRetry     = time.Second // between attempts to reach qim.presence
)

// bootKeyPrefix starts the core-Redis counter of a Push address's starts: qim:gwboot:<addr>.
const bootKeyPrefix = "qim:gwboot:"

// presenceNode publishes this gateway's sessions and follows the other gateways'.
//
// Invariants: every entry carries this start's boot, strictly above any earlier start's of the
// same address (an INCR in the core Redis); a session's offline entry is produced only after
// its online entry and only if the session was still the device's registered one, because both
// share a compaction key and the offline entry of a session replaced on this gateway would
// otherwise erase its successor's online entry; /healthz is green only once the boot was
// announced on every partition and the follower runs.
type presenceNode struct {
	s      *Service
	self   string // the published Push address
	boot   uint64
	shards contract.ShardCount
	prod   *commitlog.PresenceProducer
	// security are the brokers' SASL and TLS options (the follower dials its own client).
	security []kgo.Opt
	req      *commitlog.RequestMetrics
	log      *slog.Logger

	entries *prometheus.CounterVec // kind, result
	kicks   prometheus.Counter

	announced bool        // owned by run
	following atomic.Bool // the follower is reading
	lastErr   atomic.Pointer[error]
	retries   presenceRetries // online entries to publish again (presence_retry.go)
}

// openPresence assigns this start's boot and creates the producer; run (a Process loop)
// announces the boot and follows the other gateways. Disabled without QIM_KAFKA_BROKERS.
func (s *Service) openPresence(ctx context.Context) error {
	if len(s.cfg.KafkaBrokers) == 0 {
		return nil
	}
	self := s.cfg.PushAdvertise
	if self == "" {
		self = s.lns.push.Addr().String()
	}
	boot, err := s.rdb.Incr(ctx, bootKeyPrefix+self).Uint64()
	if err != nil {
		return fmt.Errorf("gateway: refusing to start: presence boot INCR in core Redis: %w", err)
	}
	req := commitlog.NewRequestMetrics(s.reg)
	sec, err := s.cfg.KafkaAuth.Opts()
	if err != nil {
		return fmt.Errorf("gateway: %w", err)
	}
	prod, err := commitlog.NewPresenceProducer(commitlog.PresenceConfig{Brokers: s.cfg.KafkaBrokers, Security: sec, Requests: req})
	if err != nil {
		return fmt.Errorf("gateway: %w", err)
	}
	s.proc.OnClose("presence producer", func() error { prod.Close(); return nil })
	p := &presenceNode{s: s, self: self, boot: boot, shards: s.shards, prod: prod, security: sec, req: req, log: s.log,
		entries: s.reg.CounterVec("qim_gateway_presence_entries_total",
			"qim.presence entries produced, by kind (online, offline, boot) and result (ok, error, full; republished: an online entry that failed before and arrived on a retry).", "kind", "result"),
		kicks: s.reg.Counter("qim_gateway_presence_kicks_total",
			"Local sessions kicked (KICKED{REPLACED}) because another gateway published a newer login of the device."),
	}
	s.reg.GaugeFunc("qim_gateway_presence_unpublished_sessions",
		"Live sessions whose online entry has not reached qim.presence yet and is being republished.",
		func() float64 { return float64(p.retries.pending()) })
	s.presence = p
	s.proc.Go("presence", p.run)
	s.proc.Go("presence republish", p.republishLoop)
	return nil
}

// run keeps the boot announced and the follower reading until ctx ends, retrying after a
// failure (logged on the transition; /healthz carries the error meanwhile).
func (p *presenceNode) run(ctx context.Context) error {
	failing := false
	for {
		err := p.attempt(ctx)
		if ctx.Err() != nil {
			return nil //nolint:nilerr // shutdown
		}
		p.lastErr.Store(&err)
		if !failing {
			p.log.Warn("gateway: qim.presence unavailable; pushes and cross-gateway kicks wait for it", "err", err)
		}
		failing = true
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(presenceRetry):
		}
	}
}

func (p *presenceNode) attempt(ctx context.Context) error {
	if err := p.prod.Ready(ctx, int(p.shards)); err != nil {
		return err
	}
	if !p.announced {
		if err := p.announce(ctx); err != nil {
			return err
		}
		p.announced = true
	}
	f, err := presence.Follow(ctx, p.s.cfg.KafkaBrokers, p.security, p.shards, presence.FromEnd,
		presence.Hooks{Apply: p.remote, Bad: func(err error) { p.log.Warn("gateway: skipped a presence record", "err", err) }},
		nil, commitlog.WithRequestMetrics(p.req))
	if err != nil {
		return err
	}
	defer f.Close()
	p.following.Store(true)
	defer p.following.Store(false)
	p.log.Info("gateway: presence published and followed", "push", p.self, "boot", p.boot)
	return f.Run(ctx)
}

// announce writes this start's boot to every partition and waits for all of them: from then on
// every MailboxNode treats the previous start's devices as offline.
func (p *presenceNode) announce(ctx context.Context) error {
	e := presence.Entry{Gateway: p.self, Boot: p.boot}
	v, err := presence.Encode(e, time.Now())
	if err != nil {
		return err
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var first error
	for part := range int32(p.shards) {
		wg.Add(1)
		p.prod.Produce(ctx, commitlog.Record{Partition: part, Key: presence.Key(e), Value: v}, func(err error) {
			p.count("boot", err)
			if err != nil {
				mu.Lock()
				first = errors.Join(first, err)
				mu.Unlock()
			}
			wg.Done()
		})
	}
	wg.Wait()
	return first
}

func (p *presenceNode) entry(sess *session, online bool) presence.Entry {
	return presence.Entry{Device: presence.Device{Tenant: sess.key.tenant, User: sess.key.user, DeviceID: sess.device},
		Gateway: p.self, Boot: p.boot, Epoch: sess.epoch, Online: online}
}

// publish produces sess's entry; an online entry is waited for, at most presenceLoginWait, and
// one that fails is republished (presence_retry.go). Call it for the offline entry only after
// sess was unregistered.
func (p *presenceNode) publish(ctx context.Context, sess *session, online bool) {
	e := p.entry(sess, online)
	kind := "offline"
	if online {
		kind = "online"
	}
	v, err := presence.Encode(e, time.Now())
	if err != nil {
		p.count(kind, err) // a device id the token check let through but presence cannot carry
		return
	}
	done := make(chan struct{})
	p.retries.order.Lock()
	if !online {
		p.retries.done(sess)
	}
	p.prod.Produce(context.WithoutCancel(ctx), commitlog.Record{Partition: presence.Partition(p.shards, e), Key: presence.Key(e), Value: v},
		func(err error) {
			p.count(kind, err)
			if err != nil && online {
				p.retries.failed(sess)
			}
			close(done)
		})
	p.retries.order.Unlock()
	if !online {
		return
	}
	wctx, cancel := context.WithTimeout(ctx, presenceLoginWait)
	defer cancel()
	select {
	case <-done:
	case <-wctx.Done():
	}
}

func (p *presenceNode) count(kind string, err error) {
	switch {
	case err == nil:
		p.entries.WithLabelValues(kind, "ok").Inc()
	case errors.Is(err, commitlog.ErrPresenceFull):
		p.entries.WithLabelValues(kind, "full").Inc()
	default:
		p.entries.WithLabelValues(kind, "error").Inc()
	}
}

// remote applies other gateways' entries: a login of a device held here with a lower epoch
// replaces the local session, which is kicked as a local replacement would be.
func (p *presenceNode) remote(entries []presence.Entry) {
	for _, e := range entries {
		if !e.Online || e.User == 0 || e.Gateway == p.self {
			continue
		}
		old := p.s.registry.remoteOnline(userKey{e.Tenant, e.User}, e.DeviceID, e.Epoch)
		if old != nil && p.s.kickFromOutside(old.conn, contract.KickReplaced, "replaced by a newer login of this device on another gateway") {
			p.kicks.Inc()
		}
	}
}

// kickFromOutside kicks c from a goroutine that is no connection's (the presence follower) and
// reports whether it did. The connWG Add happens under the lock drain takes before it waits, so
// it cannot race the Wait; a draining gateway kicks every connection itself.
func (s *Service) kickFromOutside(c *conn, reason contract.KickReason, detail string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing {
		return false
	}
	s.connWG.Add(1)
	go func() {
		defer s.connWG.Done()
		c.kick(reason, detail, 0)
	}()
	return true
}

// ready is the presence part of /healthz.
func (p *presenceNode) ready() error {
	if p.following.Load() {
		return nil
	}
	if e := p.lastErr.Load(); e != nil {
		return fmt.Errorf("gateway: qim.presence: %w", *e)
	}
	return errors.New("gateway: qim.presence: boot not announced yet")
}
