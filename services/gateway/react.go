package gateway

// REACT (ADR-0038): forwarded to the writer like a group request, answered REACT_ACK; when the
// reaction changed something, the writer names who is told at once and the gateway hands each
// of them a REACTION_EVENT through their MailboxNodes (one PushSessions call per node), the
// reactor's own other devices included and the reacting device left out. Best effort like
// typing: PULL_HISTORY serves the counts to whoever missed the event.

import (
	"context"

	"github.com/qim-dev/qim/contract"
	internalv1 "github.com/qim-dev/qim/proto/qiminternal/v1"
)

// react forwards REACT and answers REACT_ACK or ERROR.
func (c *conn) react(ctx context.Context, j pullJob) bool {
	k := c.sess.key
	out, err := c.s.writers.client(k.tenant, userRoute(k.user)).React(ctx, &internalv1.AuthenticatedReact{TenantId: c.tenantBytes,
		ActorUserId: uint64(k.user), React: j.payload})
	if err != nil {
		return c.backendFailed(j.requestID, j.op, "react", err)
	}
	if code := contract.ErrorCode(out.GetErrorCode()); code != contract.ErrCodeUnspecified {
		return c.sendError(j.requestID, j.op, code, out.GetErrorMessage())
	}
	if out.GetAck() == nil {
		return c.sendError(j.requestID, j.op, contract.ErrCodeInternal, "writer answered neither an ack nor an error")
	}
	if !c.reply(contract.OpReactAck, j.requestID, out.GetAck()) {
		return false
	}
	if ev := out.GetEvent(); ev != nil && len(out.GetAudience()) > 0 {
		users := make([]contract.UserID, len(out.GetAudience()))
		for i, u := range out.GetAudience() {
			users[i] = contract.UserID(u)
		}
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), c.s.cfg.BackendTimeout)
			defer cancel()
			c.s.pushEach(ctx, k.tenant, users, func(u contract.UserID) *internalv1.PushTarget {
				t := &internalv1.PushTarget{TenantId: c.tenantBytes, UserId: uint64(u), Reaction: ev}
				if u == k.user {
					t.ExceptDevice = c.sess.device
				}
				return t
			}, c.s.m.reactions)
		}()
	}
	return true
}
