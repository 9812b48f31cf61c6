package writer

import (
	"context"

	"github.com/qim-dev/qim/contract"
	qimv1 "github.com/qim-dev/qim/proto/qim/v1"
	internalv1 "github.com/qim-dev/qim/proto/qiminternal/v1"
	"github.com/qim-dev/qim/services/internal/moderation"
)

// openModeration builds the hook when one is configured.
func (s *Service) openModeration() {
	if !s.cfg.Moderation.Enabled() {
		return
	}
	mm := moderation.NewMetrics(s.reg, "writer", latencyBuckets)
	s.hook = moderation.New(moderation.Options{URL: s.cfg.Moderation.URL, Timeout: s.cfg.Moderation.Timeout,
		MaxConcurrency: s.cfg.Moderation.MaxConcurrency, MaxBody: s.cfg.MaxBodyBytes, Observe: mm.Observe})
	s.hookFailOpen = mm.FailOpen
}

// moderates reports whether in goes through the hook: a client's SEND of a moderated tenant.
func (s *Service) moderates(in *internalv1.AuthenticatedSend) bool {
	if s.hook == nil {
		return false
	}
	t, err := contract.U128FromBytes(in.GetTenantId())
	return err == nil && s.cfg.Moderation.Applies(t)
}

// prepare asks the hook about a parsed client SEND. It returns what must run, in the stream's
// order, once the answer is in: the commit of the (possibly rewritten) send, or the refusal.
// The idempotency identity is taken before a rewrite: it is the client's request.
func (s *Service) prepare(ctx context.Context, cmd *sendCmd, done func(*qimv1.SendAck, error)) func() {
	ident := cmd.identity()
	if err := s.premoderate(ctx, cmd); err != nil {
		return func() { s.refused("moderation", err, done) }
	}
	return func() { s.commit(ctx, cmd, ident, done) }
}

// premoderate applies the hook's decision to cmd, or returns the refusal. A refusal is only
// given after checking that the idempotency key holds no commit: a retry of a SEND committed
// before (its ACK lost) goes on to the committer, which answers the original SEND_ACK.
func (s *Service) premoderate(ctx context.Context, cmd *sendCmd) error {
	o := s.hook.Decide(ctx, moderation.MessageOf(cmd.tenant, cmd.sender, cmd.device, cmd.conversation, cmd.peer,
		contract.U128(cmd.cmid), cmd.messageType, cmd.customType, cmd.mentions, cmd.body), s.cfg.Moderation.FailOpen)
	if o.FailedOpen {
		s.hookFailOpen.Inc()
	}
	if o.Rewritten {
		cmd.body = o.Body
	}
	if o.Refusal == nil {
		return nil
	}
	return s.unlessCommitted(ctx, cmd, o.Refusal)
}
