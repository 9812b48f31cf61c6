package writer

import (
	"context"
	"errors"

	"github.com/qim-dev/qim/contract"
	qimv1 "github.com/qim-dev/qim/proto/qim/v1"
	internalv1 "github.com/qim-dev/qim/proto/qiminternal/v1"
	"github.com/qim-dev/qim/services/internal/moderation"
	"github.com/qim-dev/qim/services/internal/msgstore"
	"github.com/qim-dev/qim/services/internal/rpc"
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
	d, err := s.hook.Check(ctx, moderation.MessageOf(cmd.tenant, cmd.sender, cmd.device, cmd.conversation, cmd.peer,
		contract.U128(cmd.cmid), cmd.messageType, cmd.customType, cmd.mentions, cmd.body))
	var refusal error
	switch {
	case err != nil && s.cfg.Moderation.FailOpen:
		s.hookFailOpen.Inc()
		return nil
	case err != nil:
		refusal = rpc.Refuse(contract.ErrCodeUnavailable, "the moderation hook does not answer; retry later with the same client_message_id")
	case d.Action == moderation.Reject:
		refusal = rpc.Reject(d.Reason)
	case d.Action == moderation.Rewrite:
		cmd.body = d.Body
		return nil
	default:
		return nil
	}
	_, found, lerr := s.store.LoadCommit(ctx, msgstore.CommitKey{Tenant: cmd.tenant, Sender: cmd.sender,
		ClientMessageID: cmd.cmid, Conversation: cmd.conversation})
	switch {
	case lerr != nil:
		return errors.Join(rpc.Refuse(contract.ErrCodeUnavailable, "idempotency lookup failed; retry with the same client_message_id"), lerr)
	case found:
		return nil
	}
	return refusal
}
