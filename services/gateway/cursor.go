package gateway

// This file is the gateway's cursor entry: PULL_MAILBOX is the ONLY path that advances a
// device's mailbox cursor, and the gateway's part in it is to forward the client's request
// bytes untouched, with the identity proven at AUTH, and to return the MailboxNode's batch
// unchanged. The cursor lives in the request (what the device has durably applied) and in
// MailboxBatch.next_cursor (what it may store once it has applied the batch); the gateway never
// computes, caches, advances or rewrites one. A push (push.go) carries events but no cursor, so a
// lost or duplicated push can never move a device past an event it has not stored — that is why
// recovery after any failure is simply "pull from your cursor". AUTH reads the device's cursor
// only to ask HasOffline, a read that moves nothing.

import (
	"context"

	"github.com/qim-dev/qim/contract"
	internalv1 "github.com/qim-dev/qim/proto/qiminternal/v1"
	"github.com/qim-dev/qim/wire"
)

// pullJob is a PULL_MAILBOX, PULL_HISTORY, PULL_SESSION_LIST, MARK_READ, PULL_READ_RECEIPTS or group request
// (CREATE_GROUP, PULL_MEMBERS, LEAVE_GROUP) or a REGISTER_PUSH_TOKEN waiting for the connection's pull worker.
type pullJob struct {
	op        contract.Opcode
	requestID uint32
	payload   []byte
}

func backendOf(op contract.Opcode) string {
	switch op {
	case contract.OpPullHistory:
		return "history"
	case contract.OpPullSessionList, contract.OpMarkRead, contract.OpPullReadReceipts, contract.OpSetReadReceipts:
		return "session"
	case contract.OpCreateGroup, contract.OpPullMembers, contract.OpLeaveGroup:
		return "group"
	case contract.OpRegisterPushToken:
		return "pushtoken"
	case contract.OpReact:
		return "react"
	}
	return "mailbox"
}

// enqueuePull hands a pull to the connection's worker, starting it on first use (most
// connections pull rarely). A full queue blocks the read loop: back-pressure, not a drop.
func (c *conn) enqueuePull(m wire.Message) bool {
	if c.pullQ == nil {
		c.pullQ = make(chan pullJob, c.s.cfg.PullQueueDepth)
		c.wg.Add(1)
		go c.runPulls()
	}
	select {
	case c.pullQ <- pullJob{op: m.Opcode, requestID: m.RequestID, payload: m.Payload}:
		c.s.m.backendDepth.WithLabelValues(backendOf(m.Opcode)).Inc()
		return true
	case <-c.ctx.Done():
		return false
	}
}

// runPulls serves the connection's pulls one at a time, in arrival order: SDKs single-flight
// their pulls, and in-order answers keep a cursor sequence of pulls meaningful.
func (c *conn) runPulls() {
	defer c.wg.Done()
	for {
		select {
		case j := <-c.pullQ:
			ok := c.pull(j)
			c.s.m.backendDepth.WithLabelValues(backendOf(j.op)).Dec()
			if !ok {
				c.interrupt()
				return
			}
		case <-c.ctx.Done():
			return
		}
	}
}

// drainPulls empties the queue at teardown, after the worker and the read loop have stopped,
// so the depth gauge returns to what is really queued.
func (c *conn) drainPulls() {
	for c.pullQ != nil {
		select {
		case j := <-c.pullQ:
			c.s.m.backendDepth.WithLabelValues(backendOf(j.op)).Dec()
		default:
			return
		}
	}
}

func (c *conn) pull(j pullJob) bool {
	ctx, cancel := context.WithTimeout(c.ctx, c.s.cfg.BackendTimeout)
	defer cancel()
	switch j.op {
	case contract.OpPullHistory:
		return c.pullHistory(ctx, j)
	case contract.OpPullSessionList:
		return c.pullSessionList(ctx, j)
	case contract.OpMarkRead:
		return c.markRead(ctx, j)
	case contract.OpPullReadReceipts:
		return c.pullReadReceipts(ctx, j)
	case contract.OpReact:
		return c.react(ctx, j)
	case contract.OpSetReadReceipts:
		return c.setReadReceipts(ctx, j)
	case contract.OpCreateGroup, contract.OpPullMembers, contract.OpLeaveGroup:
		return c.groupRequest(ctx, j)
	case contract.OpRegisterPushToken:
		return c.registerPushToken(ctx, j)
	}
	return c.pullMailbox(ctx, j)
}

// pullMailbox forwards PULL_MAILBOX and answers MAILBOX_BATCH or ERROR.
func (c *conn) pullMailbox(ctx context.Context, j pullJob) bool {
	out, err := c.s.mailboxFor(c.sess.key.tenant, c.sess.key.user).pulls.Do(ctx, &internalv1.AuthenticatedPullMailbox{TenantId: c.tenantBytes,
		UserId: uint64(c.sess.key.user), DeviceId: c.sess.device, PullMailbox: j.payload})
	if err != nil {
		return c.backendFailed(j.requestID, j.op, "mailbox", err)
	}
	if code := contract.ErrorCode(out.GetErrorCode()); code != contract.ErrCodeUnspecified {
		return c.sendError(j.requestID, j.op, code, out.GetErrorMessage())
	}
	if out.GetBatch() == nil {
		// A batch is what carries next_cursor; inventing an empty one could make a client store
		// a cursor the mailbox never gave it.
		return c.sendError(j.requestID, j.op, contract.ErrCodeInternal, "mailbox answered neither a batch nor an error")
	}
	return c.reply(contract.OpMailboxBatch, j.requestID, out.GetBatch())
}

// pullHistory forwards PULL_HISTORY to the writer and answers HISTORY_BATCH or ERROR. The actor
// is the authenticated user; the writer authorises the read against membership.
func (c *conn) pullHistory(ctx context.Context, j pullJob) bool {
	out, err := c.s.writers.client(c.sess.key.tenant, userRoute(c.sess.key.user)).PullHistory(ctx, &internalv1.AuthenticatedPullHistory{TenantId: c.tenantBytes,
		ActorUserId: uint64(c.sess.key.user), PullHistory: j.payload})
	if err != nil {
		return c.backendFailed(j.requestID, j.op, "history", err)
	}
	if code := contract.ErrorCode(out.GetErrorCode()); code != contract.ErrCodeUnspecified {
		return c.sendError(j.requestID, j.op, code, out.GetErrorMessage())
	}
	if out.GetBatch() == nil {
		return c.sendError(j.requestID, j.op, contract.ErrCodeInternal, "writer answered neither a batch nor an error")
	}
	return c.reply(contract.OpHistoryBatch, j.requestID, out.GetBatch())
}
