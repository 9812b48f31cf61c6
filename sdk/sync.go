package sdk

// Receiving: the mailbox pull, pushes and the REBUILD after CURSOR_EXPIRED.
//
// This file carries the SDK's side of the cursor contract. The cursor is what the device has
// durably applied, so it moves in exactly one place — onBatch, inside the SQLite transaction that
// stores the MAILBOX_BATCH — and to exactly the server's next_cursor. A push is stored for low
// latency but never moves it: pushes may be dropped, duplicated or overtaken, and a cursor moved
// past an event the device never pulled would skip that event for good. Instead a push asks for a
// pull: one PULL_MAILBOX in flight at a time, and a push that arrives while one is in flight only
// marks it dirty, so a burst of pushes costs one extra pull, not one each.

import (
	"fmt"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/qim-dev/qim/contract"
	qimv1 "github.com/qim-dev/qim/proto/qim/v1"
	"github.com/qim-dev/qim/sdk/store"
	"github.com/qim-dev/qim/wire"
)

type pullState struct {
	id       uint32 // request id of the PULL_MAILBOX in flight; 0 when none
	dirty    bool   // something arrived during the pull: pull once more after it
	deferred bool   // held back while the app does not read its events
	retryAt  time.Time
	failures int
}

type syncState struct {
	phase      SyncPhase
	applied    int
	firstPull  bool // the first PULL_MAILBOX of this connection was sent (Stats.FirstPullCursor)
	drainedOne bool // the mailbox reached has_more=false once on this connection
}

// startSync begins reconciliation: pull until the mailbox is drained, merge the session list,
// backfill what is incomplete, then release pending sends and owed MARK_READs (ready).
func (e *engine) startSync(p SyncPhase, now time.Time) {
	e.phase, e.sync.phase, e.sync.drainedOne = phaseSync, p, false
	e.emit(SyncProgress{Phase: p, Applied: e.sync.applied, Cursor: e.cursor})
	e.requestPull(now)
}

// requestPull sends PULL_MAILBOX from the stored cursor, or marks the pull in flight dirty.
func (e *engine) requestPull(now time.Time) {
	switch {
	case e.sink == nil || e.phase == phaseAuth || e.end != nil:
		return
	case e.pull.id != 0:
		e.pull.dirty = true
		return
	case !e.pull.retryAt.IsZero():
		return // the scheduled retry pulls
	case e.backlog() > e.cfg.EventBacklogPause:
		e.pull.deferred = true
		return
	}
	e.pull.deferred, e.pull.dirty = false, false
	id := e.request(reqPull, contract.OpPullMailbox, &qimv1.PullMailbox{
		Cursor: &qimv1.MailboxCursor{MailboxSeq: uint64(e.cursor)}, Limit: e.cfg.PullLimit}, now, nil)
	if id == 0 {
		return
	}
	e.pull.id = id
	e.stats.pulls.Add(1)
	if !e.sync.firstPull {
		e.sync.firstPull = true
		e.stats.firstPullCursor.Store(uint64(e.cursor))
	}
}

// onBatch commits a MAILBOX_BATCH and only then moves the cursor, resolves own pending sends and
// announces the messages.
func (e *engine) onBatch(m wire.Message, now time.Time) {
	if e.take(m.RequestID, reqPull) == nil {
		e.fail(fmt.Errorf("%w: MAILBOX_BATCH for no pull in flight", ErrProtocol))
		return
	}
	e.pull.id = 0
	var b qimv1.MailboxBatch
	if err := proto.Unmarshal(m.Payload, &b); err != nil {
		e.fail(fmt.Errorf("%w: MAILBOX_BATCH: %v", ErrProtocol, err))
		return
	}
	if b.GetCursorExpired() {
		e.rebuild(contract.MailboxSeq(b.GetNextCursor().GetMailboxSeq()), now)
		return
	}
	next, err := contract.NewMailboxSeq(b.GetNextCursor().GetMailboxSeq())
	if err != nil || next < e.cursor {
		e.fail(fmt.Errorf("%w: next_cursor %#x behind the cursor %#x (%v)", ErrProtocol, uint64(next), uint64(e.cursor), err))
		return
	}
	msgs, err := eventMessages(b.GetEntries(), store.SourcePull)
	if err != nil {
		e.fail(err)
		return
	}
	a, err := e.st.Apply(storeCtx, store.Batch{Source: store.SourcePull, Messages: msgs, Cursor: &next})
	if err != nil {
		// The cursor did not move: the next connection pulls the same batch again.
		e.fail(fmt.Errorf("sdk: store mailbox batch: %w", err))
		return
	}
	e.cursor, e.pull.failures = next, 0
	e.committed(a, msgs, store.SourcePull, true)
	if e.phase == phaseSync {
		e.sync.applied += len(a.Added) + len(a.Resolved)
		e.emit(SyncProgress{Phase: e.sync.phase, Applied: e.sync.applied, Cursor: e.cursor})
	}
	if b.GetHasMore() {
		e.requestPull(now)
		return
	}
	if e.pull.dirty {
		e.requestPull(now)
	}
	if e.phase == phaseSync && !e.sync.drainedOne {
		e.sync.drainedOne = true
		e.mailboxDrained(now)
	}
}

// committed runs after a successful commit: dedup entries, then events (conversations before
// messages, see Event, then the decoded membership changes among them, then the messages the
// batch's amendments changed), then the pending sends the batch resolved.
func (e *engine) committed(a store.Applied, msgs []store.Message, src store.Source, announce bool) {
	for _, m := range msgs {
		e.dedup.add(m.ID)
	}
	for _, r := range a.Resolved {
		e.dedup.add(r.Message.ID)
	}
	if len(a.Conversations) > 0 {
		e.emit(ConversationsUpdated{Conversations: a.Conversations})
	}
	if announce && len(a.Added) > 0 {
		e.emit(MessagesAdded{Messages: a.Added, Source: src})
		for _, ev := range membershipEvents(a.Added) {
			e.emit(ev)
		}
	}
	if len(a.Amended) > 0 { // the user's own amendment too: its ack changed the target here
		e.emit(MessagesAmended{Messages: a.Amended})
	}
	for _, r := range a.Resolved {
		e.emit(Committed{ClientMessageID: r.ClientMessageID, Message: r.Message})
	}
}

// onPush stores pushed events for low latency (never the cursor) and asks for a pull.
func (e *engine) onPush(m wire.Message, now time.Time) {
	var p qimv1.PushEvents
	if err := proto.Unmarshal(m.Payload, &p); err != nil {
		e.fail(fmt.Errorf("%w: PUSH_EVENTS: %v", ErrProtocol, err))
		return
	}
	msgs, err := eventMessages(p.GetEvents(), store.SourcePush)
	if err != nil {
		e.fail(err)
		return
	}
	e.stats.pushes.Add(1)
	fresh := msgs[:0]
	for _, msg := range msgs {
		if !e.dedup.has(msg.ID) {
			fresh = append(fresh, msg)
		}
	}
	if len(fresh) > 0 {
		a, err := e.st.Apply(storeCtx, store.Batch{Source: store.SourcePush, Messages: fresh})
		if err != nil {
			// Not a durability path: the pull below brings the same events and fails closed if
			// the store is really broken. Counted, not hidden.
			e.stats.pushStoreFailures.Add(1)
			e.log.Warn("sdk: push not stored; the pull will deliver it", "err", err)
		} else {
			e.committed(a, fresh, store.SourcePush, true)
		}
	}
	if !e.hooks.noAutoPull {
		e.requestPull(now)
	}
}

// onPullError retries a retryable pull failure after a delay and drops the connection otherwise.
func (e *engine) onPullError(se *ServerError, now time.Time) {
	e.pull.id = 0
	if se.Code == contract.ErrCodeCursorExpired {
		e.rebuild(0, now)
		return
	}
	if !se.Retryable() {
		e.fail(se)
		return
	}
	e.pull.failures++
	delay := se.RetryAfter
	if delay <= 0 {
		delay = min(e.cfg.ReconnectMin<<min(e.pull.failures, 10), e.cfg.ReconnectMax)
	}
	e.pull.retryAt = now.Add(delay)
}

// rebuild handles CURSOR_EXPIRED: the mailbox no longer holds everything after the cursor. The
// store resets the cursor to zero under a new generation and marks every conversation possibly
// incomplete from what it had pulled (store.ResetForRebuild explains why zero and not the
// server's resume cursor); then the client pulls everything the mailbox still has and backfills
// each incomplete conversation from history (PULL_HISTORY NEWER from its gap) before it sends
// anything pending. Conversations the device never heard of and whose mailbox entries were all
// trimmed are found through PULL_SESSION_LIST, which follows the mailbox in every
// reconciliation: the merge records them with a gap at their read watermark, and the same
// backfill fetches what can be unread (store.MergeSessions).
func (e *engine) rebuild(serverResume contract.MailboxSeq, now time.Time) {
	if e.cursor == 0 {
		// A zero cursor includes everything retained; "expired" for it is a server fault, and
		// resetting again would loop.
		e.fail(fmt.Errorf("%w: CURSOR_EXPIRED for the zero cursor", ErrProtocol))
		return
	}
	prev := e.cursor
	cs, err := e.st.ResetForRebuild(storeCtx, string(ResetCursorExpired))
	if err != nil {
		e.fail(fmt.Errorf("sdk: reset cursor for REBUILD: %w", err))
		return
	}
	e.cursor, e.pull.dirty = 0, false
	e.stats.rebuilds.Add(1)
	e.log.Info("sdk: mailbox cursor expired; rebuilding", "generation", cs.Generation)
	e.emit(LocalStoreReset{Reason: ResetCursorExpired, Generation: cs.Generation, PreviousCursor: prev,
		ServerResume: serverResume})
	// A session list in flight belongs to the reconciliation the reset abandoned: forgetting its
	// request id makes its answer stale (onSessionList), and the rebuilt one pulls it again.
	e.backfill, e.sess = backfillState{}, sessionsState{}
	e.startSync(SyncRebuild, now)
}

// mailboxDrained runs once per connection (and once more after a REBUILD) when the mailbox
// reached has_more=false during reconciliation: the session list comes next (sessionlist.go).
func (e *engine) mailboxDrained(now time.Time) { e.startSessions(now) }

// reconcileGaps follows the session list: backfill what a REBUILD left incomplete and the
// conversations the list revealed with messages after their read watermark, then go ready.
func (e *engine) reconcileGaps(now time.Time) {
	gaps, err := e.st.Gaps(storeCtx)
	if err != nil {
		e.fail(fmt.Errorf("sdk: list incomplete conversations: %w", err))
		return
	}
	if len(gaps) == 0 {
		e.ready(now)
		return
	}
	e.backfill = backfillState{active: true, queue: gaps}
	e.sync.phase = SyncBackfill
	e.emit(SyncProgress{Phase: SyncBackfill, Applied: e.sync.applied, Cursor: e.cursor})
	e.nextBackfill(now)
}

// ready ends reconciliation: what is still pending was not committed (or its proof is not
// visible yet, in which case the server's idempotency returns the original ACK), so it is sent.
func (e *engine) ready(now time.Time) {
	e.phase, e.sync.phase = phaseReady, SyncDone
	e.stats.syncs.Add(1)
	e.emit(SyncProgress{Phase: SyncDone, Applied: e.sync.applied, Cursor: e.cursor})
	e.flushPending(now)
	e.flushReads(now)
}
