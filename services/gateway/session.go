package gateway

// Session requests: PULL_SESSION_LIST, MARK_READ and PULL_READ_RECEIPTS go to the SessionProjection through the
// connection's pull worker, like the mailbox and history pulls: the client's bytes are forwarded
// untouched with the identity proven at AUTH, the answer comes back unchanged, and the session
// service owns every decision (paging, the unread definition, the forward-only watermark). The
// gateway keeps no session state: the read watermark is per user, so any device that asks sees
// the same absolute value.

import (
	"context"

	"github.com/qim-dev/qim/contract"
	internalv1 "github.com/qim-dev/qim/proto/qiminternal/v1"
)

// pullSessionList forwards PULL_SESSION_LIST and answers SESSION_LIST_BATCH or ERROR.
func (c *conn) pullSessionList(ctx context.Context, j pullJob) bool {
	out, err := c.s.sessionFor(c.sess.key.tenant, c.sess.key.user).client.PullSessionList(ctx, &internalv1.AuthenticatedPullSessionList{TenantId: c.tenantBytes,
		UserId: uint64(c.sess.key.user), DeviceId: c.sess.device, PullSessionList: j.payload})
	if err != nil {
		return c.backendFailed(j.requestID, j.op, "session", err)
	}
	if code := contract.ErrorCode(out.GetErrorCode()); code != contract.ErrCodeUnspecified {
		return c.sendError(j.requestID, j.op, code, out.GetErrorMessage())
	}
	if out.GetBatch() == nil {
		// An empty batch would tell the client it has no conversations at all.
		return c.sendError(j.requestID, j.op, contract.ErrCodeInternal, "session service answered neither a batch nor an error")
	}
	return c.reply(contract.OpSessionListBatch, j.requestID, out.GetBatch())
}

// markRead forwards MARK_READ and answers MARK_READ_ACK (the absolute stored watermark) or ERROR.
func (c *conn) markRead(ctx context.Context, j pullJob) bool {
	out, err := c.s.sessionFor(c.sess.key.tenant, c.sess.key.user).client.MarkRead(ctx, &internalv1.AuthenticatedMarkRead{TenantId: c.tenantBytes,
		UserId: uint64(c.sess.key.user), DeviceId: c.sess.device, MarkRead: j.payload})
	if err != nil {
		return c.backendFailed(j.requestID, j.op, "session", err)
	}
	if code := contract.ErrorCode(out.GetErrorCode()); code != contract.ErrCodeUnspecified {
		return c.sendError(j.requestID, j.op, code, out.GetErrorMessage())
	}
	if out.GetAck() == nil {
		return c.sendError(j.requestID, j.op, contract.ErrCodeInternal, "session service answered neither an ack nor an error")
	}
	if !c.reply(contract.OpMarkReadAck, j.requestID, out.GetAck()) {
		return false
	}
	if out.GetEntry() != nil {
		c.shareRead(out.GetEntry()) // the user's other devices (readsync.go)
		if out.GetShareReceipt() {
			c.shareReceipt(out.GetEntry()) // the peer of a direct conversation, when both share
		}
	}
	return true
}

// setReadReceipts forwards SET_READ_RECEIPTS and answers READ_RECEIPTS_SET or ERROR.
func (c *conn) setReadReceipts(ctx context.Context, j pullJob) bool {
	out, err := c.s.sessionFor(c.sess.key.tenant, c.sess.key.user).client.SetReadReceipts(ctx, &internalv1.AuthenticatedSetReadReceipts{
		TenantId: c.tenantBytes, UserId: uint64(c.sess.key.user), SetReadReceipts: j.payload})
	if err != nil {
		return c.backendFailed(j.requestID, j.op, "session", err)
	}
	if code := contract.ErrorCode(out.GetErrorCode()); code != contract.ErrCodeUnspecified {
		return c.sendError(j.requestID, j.op, code, out.GetErrorMessage())
	}
	if out.GetAnswer() == nil {
		return c.sendError(j.requestID, j.op, contract.ErrCodeInternal, "session service answered neither a setting nor an error")
	}
	return c.reply(contract.OpReadReceiptsSet, j.requestID, out.GetAnswer())
}

// pullReadReceipts forwards PULL_READ_RECEIPTS and answers READ_RECEIPTS_BATCH or ERROR.
func (c *conn) pullReadReceipts(ctx context.Context, j pullJob) bool {
	out, err := c.s.sessionFor(c.sess.key.tenant, c.sess.key.user).client.PullReadReceipts(ctx, &internalv1.AuthenticatedPullReadReceipts{TenantId: c.tenantBytes,
		UserId: uint64(c.sess.key.user), DeviceId: c.sess.device, PullReadReceipts: j.payload})
	if err != nil {
		return c.backendFailed(j.requestID, j.op, "session", err)
	}
	if code := contract.ErrorCode(out.GetErrorCode()); code != contract.ErrCodeUnspecified {
		return c.sendError(j.requestID, j.op, code, out.GetErrorMessage())
	}
	if out.GetBatch() == nil {
		return c.sendError(j.requestID, j.op, contract.ErrCodeInternal, "session service answered neither receipts nor an error")
	}
	return c.reply(contract.OpReadReceiptsBatch, j.requestID, out.GetBatch())
}
