package sdk

import (
	"testing"
	"time"

	"github.com/qim-dev/qim/contract"
	qimv1 "github.com/qim-dev/qim/proto/qim/v1"
)

func (h *harness) markReads() []*qimv1.MarkRead {
	var out []*qimv1.MarkRead
	for _, f := range h.sent(contract.OpMarkRead) {
		var m qimv1.MarkRead
		if err := protoUnmarshal(f.payload, &m); err != nil {
			h.t.Fatal(err)
		}
		out = append(out, &m)
	}
	return out
}

func (h *harness) conversation() Conversation {
	h.t.Helper()
	convs, err := h.st.Conversations(ctxBG)
	if err != nil || len(convs) != 1 {
		h.t.Fatalf("conversations %+v, %v", convs, err)
	}
	return convs[0]
}

// The login sequence is mailbox → session list (every page) → ready: nothing pending is sent
// before the last page is merged.
func TestSessionListPagesBeforePendingSends(t *testing.T) {
	h := newHarness(t)
	h.manualSessions = true
	h.addPending("queued offline")
	h.connect()
	h.answerPull(false)
	if n := len(h.sent(contract.OpPullSessionList)); n != 1 || len(h.sent(contract.OpSend)) != 0 {
		t.Fatalf("after the mailbox: %d session pulls, %d sends; want 1 and 0", n, len(h.sent(contract.OpSend)))
	}
	h.answerSessions(true, []byte("page-2"), h.entry(3, 1))
	var second qimv1.PullSessionList
	_ = protoUnmarshal(h.lastSent(contract.OpPullSessionList).payload, &second)
	if string(second.GetPageToken()) != "page-2" || len(h.sent(contract.OpSend)) != 0 {
		t.Fatalf("second page token %q, %d sends", second.GetPageToken(), len(h.sent(contract.OpSend)))
	}
	h.answerSessions(false, nil)
	if len(h.sent(contract.OpSend)) != 1 || h.e.phase != phaseReady {
		t.Fatalf("after the last page: %d sends, phase %d", len(h.sent(contract.OpSend)), h.e.phase)
	}
	if c := h.conversation(); c.ReadSeq != 1 {
		t.Fatalf("conversation %+v, want the server's read watermark 1", c)
	}
}

// The server's higher watermark is merged and announced; a lower one is answered with MARK_READ
// carrying the local value once the connection is ready.
func TestSessionListMergeAndMarkReadBack(t *testing.T) {
	tests := []struct {
		name            string
		localRead       contract.ConversationSeq
		serverRead      uint64
		wantRead        contract.ConversationSeq
		wantUnread      uint32
		wantMarkRead    uint64 // 0 = none sent
		wantConvUpdated bool
	}{
		{"server ahead raises the local watermark", 0, 3, 3, 0, 0, true},
		{"local ahead is sent back", 3, 1, 3, 0, 3, false},
		{"equal sends nothing", 2, 2, 2, 1, 0, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			h.manualSessions = true
			h.connect()
			h.answerPull(false, h.event(1, peer, noCmid), h.event(2, peer, noCmid), h.event(3, peer, noCmid))
			h.answerSessions(false, nil)
			if tc.localRead > 0 {
				if _, err := h.st.MarkRead(ctxBG, h.conversation().ID, tc.localRead); err != nil {
					t.Fatal(err)
				}
			}
			h.reconnect() // MARK_READ owed from "offline": the login's merge decides
			h.answerPull(false)
			h.events = nil
			h.answerSessions(false, nil, h.entry(3, tc.serverRead))
			if c := h.conversation(); c.ReadSeq != tc.wantRead || c.Unread != tc.wantUnread {
				t.Fatalf("read %d unread %d, want %d and %d", c.ReadSeq, c.Unread, tc.wantRead, tc.wantUnread)
			}
			if got := countEvents[ConversationsUpdated](h.events) > 0; got != tc.wantConvUpdated {
				t.Fatalf("ConversationsUpdated %v, want %v", got, tc.wantConvUpdated)
			}
			mr := h.markReads()
			if tc.wantMarkRead == 0 {
				if len(mr) != 0 {
					t.Fatalf("MARK_READ sent: %v", mr)
				}
				return
			}
			if len(mr) != 1 || mr[0].GetReadConversationSeq() != tc.wantMarkRead {
				t.Fatalf("MARK_READs %v, want one with %d", mr, tc.wantMarkRead)
			}
			f := h.lastSent(contract.OpMarkRead)
			h.frame(contract.OpMarkReadAck, f.id, &qimv1.MarkReadAck{ConversationId: mr[0].GetConversationId(),
				ReadConversationSeq: tc.wantMarkRead})
			if owed, _ := h.st.UnsentReads(ctxBG, 10); len(owed) != 0 || h.stats.markReadAcks.Load() != 1 {
				t.Fatalf("after the ACK: owed %v, acks %d", owed, h.stats.markReadAcks.Load())
			}
		})
	}
}

// A refused session list does not hold pending sends back, and the owed MARK_READs still go out.
func TestSessionListErrorDoesNotBlockSends(t *testing.T) {
	h := newHarness(t)
	h.manualSessions = true
	h.connect()
	h.answerPull(false, h.event(1, peer, noCmid))
	h.answerSessions(false, nil)
	if _, err := h.st.MarkRead(ctxBG, h.conversation().ID, 1); err != nil {
		t.Fatal(err)
	}
	h.addPending("queued")
	h.reconnect()
	h.answerPull(false)
	req := h.lastSent(contract.OpPullSessionList)
	h.frame(contract.OpError, req.id, &qimv1.ErrorFrame{Code: uint32(contract.ErrCodeUnavailable), RequestOpcode: uint32(req.op)})
	if len(h.sent(contract.OpSend)) != 1 || len(h.markReads()) != 1 || h.e.end != nil {
		t.Fatalf("after a refused list: %d sends, %d MARK_READs, end %v", len(h.sent(contract.OpSend)), len(h.markReads()), h.e.end)
	}
	if h.stats.sessionPullFailures.Load() != 1 {
		t.Fatalf("failures %d, want 1", h.stats.sessionPullFailures.Load())
	}
}

// MARK_READ online: sent once per conversation at a time (a second raise waits for the ACK),
// retried after a retryable refusal, and not resent after a definite one.
func TestMarkReadFlushRetryAndRefusal(t *testing.T) {
	h := newHarness(t)
	h.connect()
	h.answerPull(false, h.event(1, peer, noCmid), h.event(2, peer, noCmid), h.event(3, peer, noCmid))
	conv := h.conversation().ID
	_, _ = h.st.MarkRead(ctxBG, conv, 1)
	h.e.flushReads(h.now)
	_, _ = h.st.MarkRead(ctxBG, conv, 2)
	h.e.flushReads(h.now)
	if mr := h.markReads(); len(mr) != 1 || mr[0].GetReadConversationSeq() != 1 {
		t.Fatalf("MARK_READs %v, want only the first while it is in flight", mr)
	}
	f := h.lastSent(contract.OpMarkRead)
	h.frame(contract.OpMarkReadAck, f.id, &qimv1.MarkReadAck{ReadConversationSeq: 1})
	mr := h.markReads()
	if len(mr) != 2 || mr[1].GetReadConversationSeq() != 2 {
		t.Fatalf("MARK_READs %v, want the newer watermark sent after the ACK", mr)
	}
	f = h.lastSent(contract.OpMarkRead)
	h.frame(contract.OpError, f.id, &qimv1.ErrorFrame{Code: uint32(contract.ErrCodeUnavailable)})
	if h.e.reads.retryAt.IsZero() || len(h.markReads()) != 2 {
		t.Fatal("a retryable refusal was not scheduled for retry")
	}
	h.now = h.e.reads.retryAt.Add(time.Millisecond)
	h.e.onTick(h.now)
	if mr = h.markReads(); len(mr) != 3 || mr[2].GetReadConversationSeq() != 2 {
		t.Fatalf("MARK_READs %v, want the retry", mr)
	}
	f = h.lastSent(contract.OpMarkRead)
	h.frame(contract.OpError, f.id, &qimv1.ErrorFrame{Code: uint32(contract.ErrCodeNotMember)})
	h.e.flushReads(h.now)
	if n := len(h.markReads()); n != 3 || h.stats.markReadRefused.Load() != 1 {
		t.Fatalf("%d MARK_READs after a definite refusal, want no resend", n)
	}
	if c := h.conversation(); c.ReadSeq != 2 || c.Unread != 1 {
		t.Fatalf("a refusal changed the local state: %+v", c)
	}
}

// A conversation only the session list knows (a fresh device whose mailbox no longer holds it)
// is recorded and backfilled from its read watermark before the connection is ready, so local
// unread matches the server's definition.
func TestSessionListDiscoveredConversationIsBackfilled(t *testing.T) {
	h := newHarness(t)
	h.manualSessions = true
	h.connect()
	h.answerPull(false) // the mailbox was trimmed: nothing
	h.answerSessions(false, nil, h.entry(3, 1))
	hist := h.lastSent(contract.OpPullHistory)
	var ph qimv1.PullHistory
	_ = protoUnmarshal(hist.payload, &ph)
	if ph.GetAnchorSeq() != 1 || h.e.phase == phaseReady {
		t.Fatalf("backfill anchor %d, phase %d; want NEWER from the read watermark 1 before ready", ph.GetAnchorSeq(), h.e.phase)
	}
	h.frame(contract.OpHistoryBatch, hist.id, &qimv1.HistoryBatch{Records: []*qimv1.HistoryMessage{
		historyOf(h.event(2, peer, noCmid)), historyOf(h.event(3, self, noCmid))}})
	if c := h.conversation(); c.Incomplete || c.ReadSeq != 3 || c.Unread != 0 || h.e.phase != phaseReady {
		t.Fatalf("after the backfill %+v phase %d; want complete, read 3 (own message), unread 0", c, h.e.phase)
	}
}
