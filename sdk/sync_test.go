package sdk

import (
	"testing"

	"github.com/qim-dev/qim/contract"
	qimv1 "github.com/qim-dev/qim/proto/qim/v1"
	"github.com/qim-dev/qim/sdk/store"
)

var noCmid contract.ClientMessageID

// The cursor moves only after the batch is committed: a failed commit leaves cursor, dedup and
// events untouched, the connection is dropped, and the replay after reconnecting stores it.
func TestCursorMovesOnlyAfterCommit(t *testing.T) {
	tests := []struct {
		name       string
		failCommit bool
	}{{"commit succeeds", false}, {"commit fails, replay stores it", true}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			h.connect()
			if tc.failCommit {
				h.st.failApply.Store(1)
			}
			ev := h.event(1, peer, noCmid)
			h.answerPull(false, ev)
			if !tc.failCommit {
				if h.storedCursor() != contract.MailboxSeq(ev.GetMailboxSeq()) || h.localCount() != 1 {
					t.Fatalf("cursor %d, %d messages after a committed batch", h.storedCursor(), h.localCount())
				}
				return
			}
			if h.e.end == nil || h.storedCursor() != 0 || h.localCount() != 0 || countEvents[MessagesAdded](h.events) != 0 {
				t.Fatalf("failed commit: end %v cursor %d messages %d", h.e.end, h.storedCursor(), h.localCount())
			}
			mid, _ := contract.ParseMessageID(ev.GetMessageId())
			if h.e.dedup.has(mid) {
				t.Fatal("dedup entry recorded before the commit: the replay would be skipped")
			}
			h.reconnect()
			if c := h.pullCursor(h.lastSent(contract.OpPullMailbox)); c != 0 {
				t.Fatalf("re-pull from %d, want the uncommitted cursor 0", c)
			}
			h.answerPull(false, ev)
			if h.storedCursor() != contract.MailboxSeq(ev.GetMailboxSeq()) || h.localCount() != 1 || countEvents[MessagesAdded](h.events) != 1 {
				t.Fatalf("replay: cursor %d, %d messages, %d MessagesAdded", h.storedCursor(), h.localCount(), countEvents[MessagesAdded](h.events))
			}
		})
	}
}

func TestPushStoresButNeverMovesTheCursor(t *testing.T) {
	tests := []struct {
		name      string
		noPull    bool
		wantPulls int
	}{{"push triggers one pull", false, 2}, {"push alone (pull disabled)", true, 1}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			h.e.hooks.noAutoPull = tc.noPull
			h.connect()
			h.answerPull(false) // initial sync: empty mailbox
			before := h.storedCursor()
			h.frame(contract.OpPushEvents, 0, &qimv1.PushEvents{Events: []*qimv1.MailboxEvent{h.event(1, peer, noCmid), h.event(2, peer, noCmid)}})
			if h.localCount() != 2 || countEvents[MessagesAdded](h.events) != 1 {
				t.Fatalf("push not stored/announced: %d messages", h.localCount())
			}
			if h.storedCursor() != before || h.e.cursor != before {
				t.Fatalf("a push moved the cursor from %d to %d", before, h.storedCursor())
			}
			if n := len(h.sent(contract.OpPullMailbox)); n != tc.wantPulls {
				t.Fatalf("%d pulls, want %d", n, tc.wantPulls)
			}
		})
	}
}

// Single flight: any number of pushes during a pull cause exactly one more pull, sent only after
// the batch in flight is committed; has_more continues at once.
func TestCoalescedPull(t *testing.T) {
	tests := []struct {
		name      string
		pushes    int
		hasMore   bool
		wantPulls int // after the initial pull is answered
	}{
		{"no push", 0, false, 1},
		{"one push during the pull", 1, false, 2},
		{"five pushes during the pull", 5, false, 2},
		{"has_more continues", 0, true, 2},
		{"has_more and pushes still one pull", 3, true, 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			h.connect()
			for i := 0; i < tc.pushes; i++ {
				h.frame(contract.OpPushEvents, 0, &qimv1.PushEvents{Events: []*qimv1.MailboxEvent{h.event(uint64(10+i), peer, noCmid)}})
				if n := len(h.sent(contract.OpPullMailbox)); n != 1 {
					t.Fatalf("push %d during the pull sent a second concurrent pull (%d in total)", i, n)
				}
			}
			h.answerPull(tc.hasMore, h.event(1, peer, noCmid))
			if n := len(h.sent(contract.OpPullMailbox)); n != tc.wantPulls {
				t.Fatalf("%d pulls, want %d", n, tc.wantPulls)
			}
			if tc.wantPulls == 2 {
				if c := h.pullCursor(h.lastSent(contract.OpPullMailbox)); contract.MailboxSeq(c) != h.storedCursor() {
					t.Fatalf("follow-up pull from %d, want the committed cursor %d", c, h.storedCursor())
				}
			}
		})
	}
}

// A push the store refused is not remembered as seen: the pull that follows stores it.
func TestDedupOnlyAfterCommit(t *testing.T) {
	h := newHarness(t)
	h.connect()
	h.answerPull(false)
	ev := h.event(1, peer, noCmid)
	h.st.failApply.Store(1)
	h.frame(contract.OpPushEvents, 0, &qimv1.PushEvents{Events: []*qimv1.MailboxEvent{ev}})
	if h.localCount() != 0 || h.stats.pushStoreFailures.Load() != 1 {
		t.Fatalf("injected failure not seen: %d messages", h.localCount())
	}
	h.answerPull(false, ev)
	if h.localCount() != 1 || countEvents[MessagesAdded](h.events) != 1 {
		t.Fatalf("the pulled copy of a refused push was not stored: %d messages", h.localCount())
	}
	// The same event pushed again now is known and costs nothing.
	h.frame(contract.OpPushEvents, 0, &qimv1.PushEvents{Events: []*qimv1.MailboxEvent{ev}})
	if countEvents[MessagesAdded](h.events) != 1 {
		t.Fatal("a duplicate push was announced again")
	}
}

// For one batch ConversationsUpdated (absolute unread, batch included) precedes MessagesAdded.
func TestConversationsUpdatedBeforeMessagesAdded(t *testing.T) {
	h := newHarness(t)
	h.connect()
	h.events = nil
	h.answerPull(false, h.event(1, peer, noCmid), h.event(2, peer, noCmid))
	var order []string
	for _, ev := range h.events {
		switch e := ev.(type) {
		case ConversationsUpdated:
			order = append(order, "conv")
			if e.Conversations[0].Unread != 2 {
				t.Fatalf("unread %d, want 2 (the batch included)", e.Conversations[0].Unread)
			}
		case MessagesAdded:
			order = append(order, "msgs")
		}
	}
	if len(order) != 2 || order[0] != "conv" || order[1] != "msgs" {
		t.Fatalf("event order %v, want [conv msgs]", order)
	}
}

// CURSOR_EXPIRED: reset to zero under a new generation, LocalStoreReset, pull from zero, backfill
// the incomplete conversation from history, then release pending sends.
func TestRebuildAfterCursorExpired(t *testing.T) {
	h := newHarness(t)
	h.connect()
	h.answerPull(false, h.event(1, peer, noCmid), h.event(2, peer, noCmid))
	old := h.storedCursor()
	p := h.addPending("queued before the rebuild")
	h.reconnect()
	pull := h.lastSent(contract.OpPullMailbox)
	h.frame(contract.OpMailboxBatch, pull.id, &qimv1.MailboxBatch{CursorExpired: true,
		NextCursor: &qimv1.MailboxCursor{MailboxSeq: uint64(old) + 100}})
	var reset *LocalStoreReset
	for _, ev := range h.events {
		if r, ok := ev.(LocalStoreReset); ok {
			reset = &r
		}
	}
	if reset == nil || reset.PreviousCursor != old || reset.Generation != 2 || h.storedCursor() != 0 {
		t.Fatalf("reset event %+v, stored cursor %d", reset, h.storedCursor())
	}
	if c := h.pullCursor(h.lastSent(contract.OpPullMailbox)); c != 0 {
		t.Fatalf("rebuild pulled from %d, want 0", c)
	}
	h.answerPull(false) // the trimmed mailbox has nothing left
	hist := h.lastSent(contract.OpPullHistory)
	var ph qimv1.PullHistory
	_ = protoUnmarshal(hist.payload, &ph)
	if ph.GetAnchorSeq() != 2 || ph.GetDirection() != uint32(store.Newer) {
		t.Fatalf("backfill from %d dir %d, want NEWER from 2", ph.GetAnchorSeq(), ph.GetDirection())
	}
	if len(h.sent(contract.OpSend)) != 0 {
		t.Fatal("a pending send went out before the backfill finished")
	}
	h.frame(contract.OpHistoryBatch, hist.id, &qimv1.HistoryBatch{Records: []*qimv1.HistoryMessage{historyOf(h.event(3, peer, noCmid))}})
	if h.localCount() != 3 {
		t.Fatalf("%d messages after backfill, want 3", h.localCount())
	}
	gaps, _ := h.st.Gaps(ctxBG)
	sends := h.sent(contract.OpSend)
	if len(gaps) != 0 || len(sends) != 1 || h.e.phase != phaseReady {
		t.Fatalf("after backfill: gaps %v, %d sends, phase %d", gaps, len(sends), h.e.phase)
	}
	_ = p
}

func historyOf(ev *qimv1.MailboxEvent) *qimv1.HistoryMessage {
	return &qimv1.HistoryMessage{MessageId: ev.GetMessageId(), ConversationId: ev.GetConversationId(),
		ConversationSeq: ev.GetConversationSeq(), SenderUserId: ev.GetSenderUserId(), MessageType: ev.GetMessageType(),
		Body: ev.GetBody(), SentAtMs: ev.GetSentAtMs(), ClientMessageId: ev.GetClientMessageId()}
}

// A PONG in the ready phase pulls through the same single-flight entry (a dropped push must not
// strand messages); during a pull it only marks it dirty.
func TestPongPullsAsAFallback(t *testing.T) {
	h := newHarness(t)
	h.connect()
	h.answerPull(false)
	pulls := len(h.sent(contract.OpPullMailbox))
	h.e.ping(h.now)
	h.frame(contract.OpPong, h.lastSent(contract.OpPing).id, &qimv1.Pong{})
	if n := len(h.sent(contract.OpPullMailbox)); n != pulls+1 {
		t.Fatalf("%d pulls after a PONG, want %d", n, pulls+1)
	}
	h.e.ping(h.now)
	h.frame(contract.OpPong, h.lastSent(contract.OpPing).id, &qimv1.Pong{})
	if n := len(h.sent(contract.OpPullMailbox)); n != pulls+1 || !h.e.pull.dirty {
		t.Fatalf("PONG during a pull: %d pulls, dirty %v; want no second pull in flight", n, h.e.pull.dirty)
	}
}
