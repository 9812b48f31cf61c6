package room

// Room SENDs through the deployment's pre-send moderation hook (ADR-0035, with the writers'
// settings), asked before the room is touched, so a rejected or refused publish
// consumes no room_seq and no slow-mode or rate budget. A retry of an event still buffered is
// never refused by a later answer: like the writer, the RoomWriter looks for it before it
// refuses, and recognises it by the body the client sent, not by a rewrite.

import (
	"context"

	"github.com/qim-dev/qim/contract"
	sendhook "github.com/qim-dev/qim/services/internal/moderation"
)

// hookBuckets are the hook call's latency buckets (seconds).
var hookBuckets = []float64{.001, .002, .005, .01, .02, .05, .1, .2, .5, 1, 2, 5}

// openModeration builds the hook when one is configured.
func (s *Service) openModeration() {
	if !s.cfg.Moderation.Enabled() {
		return
	}
	mm := sendhook.NewMetrics(s.reg, "room", hookBuckets)
	s.hook = sendhook.New(sendhook.Options{URL: s.cfg.Moderation.URL, Timeout: s.cfg.Moderation.Timeout,
		MaxConcurrency: s.cfg.Moderation.MaxConcurrency, MaxBody: s.cfg.MaxBody, Observe: mm.Observe})
	s.failOpen = mm.FailOpen.Inc
}

// moderates reports whether publishes of tenant go through the hook.
func (s *Service) moderates(tenant contract.TenantID) bool {
	return s.hook != nil && s.cfg.Moderation.Applies(tenant)
}

// premoderate applies the hook's decision to p, or returns the refusal.
func (s *Service) premoderate(ctx context.Context, p *publishReq) error {
	o := s.hook.Decide(ctx, sendhook.MessageOf(p.key.tenant, contract.UserID(p.sender), "", p.key.conv, 0,
		contract.U128(p.cmid), p.messageType, p.customType, nil, p.body), s.cfg.Moderation.FailOpen)
	if o.FailedOpen {
		s.failOpen()
	}
	if o.Rewritten {
		p.sent, p.body = p.body, o.Body
	}
	if o.Refusal == nil || s.buffered(p) { // a buffered retry: the room answers its first ack
		return nil
	}
	return o.Refusal
}

// buffered reports whether the room still holds an event under p's idempotency key.
func (s *Service) buffered(p *publishReq) bool {
	found := false
	now := s.now()
	err := s.withRoom(p.key, now, func(r *room) { _, found = r.ring.lookup(idemKey{p.sender, p.cmid}, now) })
	return err == nil && found
}
