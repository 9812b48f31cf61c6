package e2e

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/gates/svc"
	qimv1 "github.com/qim-dev/qim/proto/qim/v1"
)

// NeedsRateLimits: the scenario needs gateways given the harness's rate-limit file, which holds
// svc.FloodTenant's senders tight.
const NeedsRateLimits = "gateways holding the harness's rate limits"

// ProductScenarios are the product surface around a message (issue 40), in run order.
func ProductScenarios() []Scenario {
	return []Scenario{
		{"send-flood-from-one-sender-is-limited", needs(NeedsRateLimits, scenarioSendFlood)},
		{"moderation-hook-rejects-rewrites-and-fails-closed", needs(NeedsModeration, scenarioModeration)},
		{"read-on-the-phone-clears-the-laptop-within-a-second", scenarioReadSync},
		{"typing-reaches-the-peer-limited-and-unstored", scenarioTyping},
		{"group-typing-reaches-the-members-of-a-small-group", scenarioGroupTyping},
		{"read-receipt-reaches-the-peer-and-its-session-list", scenarioReadReceipt},
		{"group-read-receipts-count-who-read-each-message", scenarioGroupReceipts},
		{"read-receipts-withheld-show-nothing-and-see-nothing", scenarioReceiptsWithheld},
		{"push-reaches-an-offline-device-once", needs(NeedsPush, scenarioOfflinePush)},
		{"post-send-feed-carries-every-acknowledged-message", needs(NeedsFeed, scenarioFeed)},
		{"recalled-message-disappears-from-history-heads-and-unread", scenarioRecall},
		{"group-owner-deletes-a-members-message-for-everyone", scenarioGroupDelete},
		{"sdk-recall-and-edit-apply-to-every-local-store", scenarioSDKAmend},
		{"reactions-reach-the-peer-and-history-never-a-mailbox", scenarioReactions},
	}
}

// floodLogin logs user's device in, in svc.FloodTenant, at the gateway with index gw (mod the
// gateways).
func (e *Env) floodLogin(ctx context.Context, user contract.UserID, device string, gw int) (*Client, error) {
	return e.tenantLoginAt(ctx, e.Gateways[gw%len(e.Gateways)], svc.FloodTenant, user, device)
}

// floodOutcome is what a burst of SENDs got.
type floodOutcome struct {
	acked   [][]byte // message_ids acknowledged
	refused int
	hint    time.Duration // the longest retry_after_ms of a refusal
}

// burst sends n SENDs to peer at once and sorts the answers; anything but SEND_ACK or
// RATE_LIMITED with a hint fails it.
func burst(ctx context.Context, c *Client, peer contract.UserID, n int) (floodOutcome, error) {
	var (
		out  floodOutcome
		mu   sync.Mutex
		wg   sync.WaitGroup
		errs []error
	)
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cmid := NewCmid()
			ack, err := c.Send(ctx, peer, cmid, []byte("flood"))
			mu.Lock()
			defer mu.Unlock()
			var se *ServerError
			switch {
			case err == nil:
				out.acked = append(out.acked, ack.GetMessageId())
			case errors.As(err, &se) && se.Code == contract.ErrCodeRateLimited && se.RetryAfterMs > 0:
				out.refused++
				out.hint = max(out.hint, time.Duration(se.RetryAfterMs)*time.Millisecond)
			default:
				errs = append(errs, err)
			}
		}()
	}
	wg.Wait()
	return out, errors.Join(errs...)
}

// One sender's flood is refused RATE_LIMITED with a retry-after once its bucket is spent — on its
// other device too, on the other gateway when there are two — while another sender of the tenant
// sends as usual; a refused SEND commits nothing, and a SEND after the hint passes.
func scenarioSendFlood(ctx context.Context, e *Env) error {
	flooder, other, peer := e.User(), e.User(), e.User()
	laptop, err := e.floodLogin(ctx, flooder, "laptop", 1)
	if err != nil {
		return err
	}
	defer laptop.Close()
	// The laptop's gateway knows the flooder's bucket before the flood: its first exchange sets
	// its baseline (what others admitted before it is not taken back), so it must come first.
	if _, err := laptop.Send(ctx, peer, NewCmid(), []byte("before")); err != nil {
		return fmt.Errorf("the laptop's first SEND: %w", err)
	}
	time.Sleep(time.Second) // a few exchanges of the shared buckets (250 ms)
	phone, err := e.floodLogin(ctx, flooder, "phone", 0)
	if err != nil {
		return err
	}
	defer phone.Close()
	const n = 3 * svc.FloodSenderBurst
	got, err := burst(ctx, phone, peer, n)
	if err != nil {
		return fmt.Errorf("the flood: %w", err)
	}
	if len(got.acked) == 0 || len(got.acked) > svc.FloodSenderBurst || got.refused < n-svc.FloodSenderBurst {
		return fmt.Errorf("a flood of %d against a burst of %d (one spent): %d acknowledged, %d refused", n, svc.FloodSenderBurst,
			len(got.acked), got.refused)
	}
	if max := time.Duration(float64(time.Second) / svc.FloodSenderPerSecond); got.hint > max {
		return fmt.Errorf("retry_after_ms %v above the refill of one token (%v)", got.hint, max)
	}
	time.Sleep(500 * time.Millisecond) // the laptop's gateway learns of the flood (exchanges every 250 ms)
	if _, err := laptop.Send(ctx, peer, NewCmid(), []byte("laptop")); !isCode(err, contract.ErrCodeRateLimited) {
		return fmt.Errorf("the flooder's laptop (gateway %d of %d) right after the flood: %v, want RATE_LIMITED", 2, len(e.Gateways), err)
	}
	if err := otherSenderUnaffected(ctx, e, other, peer); err != nil {
		return err
	}
	return afterTheHint(ctx, e, phone, flooder, peer, got)
}

// otherSenderUnaffected: another sender of the flooded tenant sends as usual.
func otherSenderUnaffected(ctx context.Context, e *Env, other, peer contract.UserID) error {
	c, err := e.floodLogin(ctx, other, "phone", 0)
	if err != nil {
		return err
	}
	defer c.Close()
	for i := range 3 {
		if _, err := c.Send(ctx, peer, NewCmid(), []byte("unaffected")); err != nil {
			return fmt.Errorf("another sender's SEND %d while one floods: %w", i, err)
		}
	}
	return nil
}

// afterTheHint: once the hint has passed a SEND goes through, and the peer receives exactly the
// flooder's acknowledged SENDs — no refused one was committed.
func afterTheHint(ctx context.Context, e *Env, phone *Client, flooder, peer contract.UserID, got floodOutcome) error {
	time.Sleep(got.hint + 2*time.Second) // the hint, and what the laptop's refused SEND did not take
	ack, err := phone.Send(ctx, peer, NewCmid(), []byte("late"))
	if err != nil {
		return fmt.Errorf("a SEND after retry_after_ms: %w", err)
	}
	want := map[string]bool{string(ack.GetMessageId()): true}
	for _, id := range got.acked {
		want[string(id)] = true
	}
	rc, err := e.floodLogin(ctx, peer, "phone", 0)
	if err != nil {
		return err
	}
	defer rc.Close()
	fromFlooder := map[string]bool{}
	_, _, err = PullUntil(ctx, rc, 0, func(evs []*qimv1.MailboxEvent) bool {
		for _, ev := range evs {
			if ev.GetSenderUserId() == uint64(flooder) {
				fromFlooder[string(ev.GetMessageId())] = true
			}
		}
		for id := range want {
			if !fromFlooder[id] {
				return false
			}
		}
		return true
	})
	if err != nil {
		return fmt.Errorf("the peer's mailbox (%d messages from the flooder, %d acknowledged): %w", len(fromFlooder), len(want)+1, err)
	}
	// The flooder's messages: the laptop's first, the acknowledged flood, the late one.
	if len(fromFlooder) != len(want)+1 {
		return fmt.Errorf("the peer holds %d messages from the flooder, %d were acknowledged: a refused SEND was committed",
			len(fromFlooder), len(want)+1)
	}
	return nil
}
