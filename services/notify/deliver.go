package notify

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/qim-dev/qim/contract"

	"github.com/qim-dev/qim/services/internal/backoff"
	"github.com/qim-dev/qim/services/internal/pushtoken"
	"github.com/qim-dev/qim/services/notify/provider"
)

// Outcomes of one notification (qim_notify_notifications_total{outcome}).
const (
	outAccepted     = "accepted"
	outTokenInvalid = "token_invalid" // the provider forgot the device: its registration is removed
	outRefused      = "refused"       // a permanent refusal other than the token
	outGivenUp      = "given_up"      // retried for QIM_NOTIFY_GIVE_UP
)

// deliverer sends jobs to their providers: at most Concurrency requests in flight, each job
// retried with backoff until its provider accepts or refuses it for good or GiveUp passes.
//
// Invariants: a job already marked done is not sent (a replayed dispatch); the done mark is
// written only after the provider accepted (a crash in between sends it again: at least once);
// deliver returns only when every job of the batch has ended, so the caller stores the batch's
// position after the last of them.
type deliverer struct {
	cfg       Config
	rdb       *redis.Client
	providers map[contract.PushPlatform]provider.Provider
	m         *metrics
	log       *slog.Logger
	sem       chan struct{}
	now       func() time.Time
}

func newDeliverer(cfg Config, rdb *redis.Client, providers map[contract.PushPlatform]provider.Provider, m *metrics, log *slog.Logger) *deliverer {
	return &deliverer{cfg: cfg, rdb: rdb, providers: providers, m: m, log: log, sem: make(chan struct{}, cfg.Concurrency), now: time.Now}
}

// deliver runs the batch's jobs. It fails only when the done marks cannot be read (the caller
// retries the batch) or ctx ends.
func (d *deliverer) deliver(ctx context.Context, js []job) error {
	keys := make([]string, len(js))
	for i, j := range js {
		keys[i] = j.done
	}
	done, err := pushtoken.Done(ctx, d.rdb, keys)
	if err != nil {
		return err
	}
	var wg sync.WaitGroup
	for i, j := range js {
		if done[i] {
			d.m.skipped.WithLabelValues(skipDone).Inc()
			continue
		}
		p := d.providers[j.reg.Platform]
		if p == nil {
			d.m.skipped.WithLabelValues(skipNoPlatf).Inc()
			continue
		}
		select {
		case d.sem <- struct{}{}:
		case <-ctx.Done():
			wg.Wait()
			return ctx.Err()
		}
		wg.Add(1)
		go func() {
			defer func() { <-d.sem; wg.Done() }()
			if out := d.one(ctx, p, j); out != "" { // "": stopped, the batch is replayed after the restart
				d.m.notifications.WithLabelValues(string(p.Platform()), out).Inc()
			}
		}()
	}
	wg.Wait()
	return ctx.Err()
}

// one sends one job until it ends and returns its outcome, "" when ctx ended first.
func (d *deliverer) one(ctx context.Context, p provider.Provider, j job) string {
	n := notification(j)
	deadline := d.now().Add(d.cfg.GiveUp)
	b := backoff.New(d.cfg.RetryMin, d.cfg.RetryMax)
	for {
		rctx, cancel := context.WithTimeout(ctx, d.cfg.Timeout)
		start := d.now()
		err := p.Send(rctx, n)
		cancel()
		d.m.providerSeconds.WithLabelValues(string(p.Platform())).Observe(d.now().Sub(start).Seconds())
		if err == nil {
			if merr := pushtoken.MarkDone(ctx, d.rdb, j.done); merr != nil {
				d.m.markFailed.Inc() // only a later replay could send it again
			}
			return outAccepted
		}
		if errors.Is(err, provider.ErrTokenInvalid) {
			if ferr := pushtoken.Forget(ctx, d.rdb, j.to.user, j.reg.DeviceID, j.reg.Token); ferr != nil {
				d.log.Warn("notify: could not remove a refused registration", "platform", p.Platform(), "err", ferr)
			}
			return outTokenInvalid
		}
		retry, after := provider.Retryable(err)
		if !retry {
			d.log.Warn("notify: provider refused a notification", "platform", p.Platform(), "err", err)
			return outRefused
		}
		wait := max(b.Next(), after)
		if ctx.Err() != nil {
			return ""
		}
		if d.now().Add(wait).After(deadline) {
			return outGivenUp
		}
		d.m.retries.WithLabelValues(string(p.Platform())).Inc()
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return ""
		}
	}
}

func notification(j job) provider.Notification {
	return provider.Notification{Tenant: j.to.user.Tenant, User: j.to.user.User, DeviceID: j.reg.DeviceID,
		Token: j.reg.Token, AppID: j.reg.AppID, Conversation: j.to.msg.conversation, ConversationSeq: j.to.msg.seq,
		MessageID: j.to.msg.id, Sender: j.to.msg.sender, Badge: j.badge, CollapseKey: j.to.msg.conversation.String()}
}
