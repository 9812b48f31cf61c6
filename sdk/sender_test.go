package sdk

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/qim-dev/qim/contract"
	qimv1 "github.com/qim-dev/qim/proto/qim/v1"
)

func sendCmids(t *testing.T, fs []sentFrame) []contract.ClientMessageID {
	t.Helper()
	var out []contract.ClientMessageID
	for _, f := range fs {
		var req qimv1.SendRequest
		if err := proto.Unmarshal(f.payload, &req); err != nil {
			t.Fatal(err)
		}
		c, err := contract.ParseClientMessageID(req.GetClientMessageId())
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, c)
	}
	return out
}

// Pending resolution: what proves a commit, what is (re)sent when, and what fails for good.
func TestPendingResolution(t *testing.T) {
	tests := []struct {
		name string
		// run drives the engine after a pending send was recorded offline and the client connected
		// (the initial pull is in flight). It returns the number of SEND frames expected in total
		// and whether the send must still be pending at the end.
		run          func(h *harness, p contractPending) (sends int, pending bool)
		committed    int
		failed       int
		wantSameCmid bool
	}{
		{"nothing is sent before the mailbox is reconciled", func(h *harness, p contractPending) (int, bool) {
			h.e.flushPending(h.now) // Send's wake-up during the sync
			h.answerPull(true)
			return 0, true
		}, 0, 0, false},
		{"sent after the last page, resolved by SEND_ACK", func(h *harness, p contractPending) (int, bool) {
			h.answerPull(false)
			h.ack(h.lastSent(contract.OpSend), 5)
			return 1, false
		}, 1, 0, true},
		{"own mailbox copy resolves it: never resent", func(h *harness, p contractPending) (int, bool) {
			h.answerPull(true, h.event(5, self, p.cmid)) // committed earlier, ACK lost
			h.answerPull(false)
			return 0, false
		}, 1, 0, false},
		{"retryable error resends the same id after the pause", func(h *harness, p contractPending) (int, bool) {
			h.answerPull(false)
			first := h.lastSent(contract.OpSend)
			h.frame(contract.OpError, first.id, &qimv1.ErrorFrame{Code: uint32(contract.ErrCodeUnavailable)})
			h.e.flushPending(h.now) // a wake-up during the pause sends nothing
			h.now = h.now.Add(time.Minute)
			h.e.onTick(h.now)
			h.ack(h.lastSent(contract.OpSend), 5)
			return 2, false
		}, 1, 0, true},
		{"retryable error that came back slowly is resent at once", func(h *harness, p contractPending) (int, bool) {
			h.answerPull(false)
			first := h.lastSent(contract.OpSend)
			h.now = h.now.Add(sendRetryMax) // the refusal took the whole pause (an Outbox timeout)
			h.frame(contract.OpError, first.id, &qimv1.ErrorFrame{Code: uint32(contract.ErrCodeUnavailable)})
			h.e.onTick(h.now) // the pause between attempts is over: no second wait
			h.ack(h.lastSent(contract.OpSend), 5)
			return 2, false
		}, 1, 0, true},
		{"server's retry hint counts from the refusal", func(h *harness, p contractPending) (int, bool) {
			h.answerPull(false)
			first := h.lastSent(contract.OpSend)
			h.now = h.now.Add(sendRetryMax)
			h.frame(contract.OpError, first.id, &qimv1.ErrorFrame{Code: uint32(contract.ErrCodeUnavailable), RetryAfterMs: 1000})
			h.e.onTick(h.now) // still inside the hinted second: nothing is sent
			return 1, true
		}, 0, 0, true},
		{"RATE_LIMITED holds the send for its hint, then resends it", func(h *harness, p contractPending) (int, bool) {
			h.answerPull(false)
			h.frame(contract.OpError, h.lastSent(contract.OpSend).id, &qimv1.ErrorFrame{Code: uint32(contract.ErrCodeRateLimited), RetryAfterMs: 5000})
			h.now = h.now.Add(4999 * time.Millisecond)
			h.e.onTick(h.now) // a millisecond before the hint: nothing is sent
			if n := len(h.sent(contract.OpSend)); n != 1 {
				h.t.Fatalf("%d SEND frames inside the rate limit's hint, want 1", n)
			}
			h.now = h.now.Add(time.Millisecond)
			h.e.onTick(h.now)
			h.ack(h.lastSent(contract.OpSend), 5)
			return 2, false
		}, 1, 0, true},
		{"definite error fails it and it is never resent", func(h *harness, p contractPending) (int, bool) {
			h.answerPull(false)
			h.frame(contract.OpError, h.lastSent(contract.OpSend).id, &qimv1.ErrorFrame{Code: uint32(contract.ErrCodePayloadTooLarge)})
			h.reconnect()
			h.answerPull(false)
			return 1, true // still listed, as failed
		}, 0, 1, false},
		{"ACK lost with the connection: resolved by the mailbox after reconnect", func(h *harness, p contractPending) (int, bool) {
			h.answerPull(false)
			h.reconnect()
			h.answerPull(false, h.event(5, self, p.cmid))
			return 1, false
		}, 1, 0, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			p := h.addPending("hello")
			h.connect()
			wantSends, stillPending := tc.run(h, contractPending{cmid: p.ClientMessageID})
			sends := sendCmids(t, h.sent(contract.OpSend))
			if len(sends) != wantSends {
				t.Fatalf("%d SEND frames, want %d", len(sends), wantSends)
			}
			for _, c := range sends {
				if c != p.ClientMessageID {
					t.Fatal("a resend used another client_message_id")
				}
			}
			all, _ := h.st.PendingAll(ctxBG)
			if (len(all) == 1) != stillPending {
				t.Fatalf("pending rows %+v, want pending=%v", all, stillPending)
			}
			if n := countEvents[Committed](h.events); n != tc.committed {
				t.Fatalf("%d Committed events, want %d", n, tc.committed)
			}
			if n := countEvents[Failed](h.events); n != tc.failed {
				t.Fatalf("%d Failed events, want %d", n, tc.failed)
			}
			if tc.committed == 1 && h.localCount() != 1 {
				t.Fatalf("%d local messages after the commit, want 1", h.localCount())
			}
		})
	}
}

type contractPending struct{ cmid contract.ClientMessageID }

// A SEND with no answer is probed after 3 s; without any frame back the connection is declared
// dead no later than 7 s after the send. A live connection (the PONG arrives) is kept.
func TestAckProbeAndUnavailability(t *testing.T) {
	for _, alive := range []bool{false, true} {
		h := newHarness(t)
		h.connect()
		h.answerPull(false)
		sentAt := h.now
		h.addPending("x")
		h.e.flushPending(h.now)
		if d := h.e.nextDeadline(h.now); d.Sub(sentAt) != contract.SendAckProbeAfter {
			t.Fatalf("next deadline %v after the send, want the probe at %v", d.Sub(sentAt), contract.SendAckProbeAfter)
		}
		h.now = h.e.nextDeadline(h.now)
		h.e.onTick(h.now)
		ping := h.lastSent(contract.OpPing)
		if alive {
			h.frame(contract.OpPong, ping.id, &qimv1.Pong{})
		}
		h.now = h.e.nextDeadline(h.now)
		h.e.onTick(h.now)
		if alive {
			if h.e.end != nil {
				t.Fatalf("a connection that answered the probe was dropped: %v", h.e.end.err)
			}
			continue
		}
		if h.e.end == nil || h.e.end.err != errDead || h.e.end.terminal {
			t.Fatalf("unanswered probe: end %+v, want a non-terminal errDead", h.e.end)
		}
		if took := h.now.Sub(sentAt); took > contract.UnavailableDetectMax {
			t.Fatalf("unavailability detected after %v, contract says within %v", took, contract.UnavailableDetectMax)
		}
	}
}

func TestKickReplacedStopsForGood(t *testing.T) {
	tests := []struct {
		reason    contract.KickReason
		terminal  bool
		reconnect bool
	}{
		{contract.KickReplaced, true, false},
		{contract.KickLoggedOut, true, false},
		{contract.KickBanned, true, false},
		{contract.KickByAdmin, true, false},
		{contract.KickServerDrain, false, true},
		{contract.KickCredentialExpired, false, true},
		{contract.KickReason(99), false, true},
	}
	for _, tc := range tests {
		h := newHarness(t)
		h.connect()
		h.frame(contract.OpKicked, 0, &qimv1.Kicked{Reason: uint32(tc.reason), RetryAfterMs: 1500})
		if h.e.end == nil || h.e.end.terminal != tc.terminal {
			t.Fatalf("reason %d: end %+v, want terminal=%v", tc.reason, h.e.end, tc.terminal)
		}
		var k *Kicked
		for _, ev := range h.events {
			if kk, ok := ev.(Kicked); ok {
				k = &kk
			}
		}
		if k == nil || k.Reason != tc.reason || k.Reconnect != tc.reconnect {
			t.Fatalf("reason %d: Kicked event %+v", tc.reason, k)
		}
		if !tc.terminal && h.e.end.retryAfter != 1500*time.Millisecond {
			t.Fatalf("drain hint lost: %v", h.e.end.retryAfter)
		}
	}
}

func TestAuthRefusedAndWrongUserAreTerminal(t *testing.T) {
	h := newHarness(t)
	h.sink = &fakeSink{}
	h.e.attach(h.sink, "t", h.now)
	h.frame(contract.OpError, h.lastSent(contract.OpAuth).id, &qimv1.ErrorFrame{Code: uint32(contract.ErrCodeUnauthorized)})
	if h.e.end == nil || !h.e.end.terminal {
		t.Fatalf("UNAUTHORIZED: %+v, want terminal", h.e.end)
	}
	h = newHarness(t)
	h.sink = &fakeSink{}
	h.e.attach(h.sink, "t", h.now)
	h.frame(contract.OpAuthOK, h.lastSent(contract.OpAuth).id, &qimv1.AuthOk{UserId: uint64(self) + 1})
	if h.e.end == nil || !h.e.end.terminal || len(h.sent(contract.OpPullMailbox)) != 0 {
		t.Fatalf("AUTH_OK for another user: %+v", h.e.end)
	}
}

// A revocation (KICKED LOGGED_OUT or BANNED) fails every queued send visibly, keeps the one in
// flight (the server may have committed it); REPLACED and KICKED_BY_ADMIN fail nothing.
func TestRevocationFailsQueuedSends(t *testing.T) {
	for _, tc := range []struct {
		reason contract.KickReason
		failed int
	}{{contract.KickLoggedOut, 2}, {contract.KickBanned, 2}, {contract.KickReplaced, 0}, {contract.KickByAdmin, 0}} {
		h := newHarness(t)
		h.e.cfg.MaxInflightSends = 1
		first := h.addPending("in flight")
		h.addPending("queued 1")
		h.addPending("queued 2")
		h.connect()
		h.answerPull(false)
		if s := sendCmids(t, h.sent(contract.OpSend)); len(s) != 1 || s[0] != first.ClientMessageID {
			t.Fatalf("reason %d: in flight %v, want the first send only", tc.reason, s)
		}
		h.frame(contract.OpKicked, 0, &qimv1.Kicked{Reason: uint32(tc.reason)})
		failed := 0
		for _, ev := range h.events {
			if f, ok := ev.(Failed); ok {
				failed++
				if f.ClientMessageID == first.ClientMessageID || !errors.Is(f.Err, ErrRevoked) || f.Code != contract.ErrCodeUnauthorized {
					t.Fatalf("reason %d: %+v", tc.reason, f)
				}
			}
		}
		all, _ := h.st.PendingAll(ctxBG)
		queued := 0
		for _, p := range all {
			if p.State == PendingQueued {
				queued++
			}
		}
		if failed != tc.failed || queued != 3-tc.failed {
			t.Fatalf("reason %d: %d Failed events, %d still queued; want %d and %d", tc.reason, failed, queued, tc.failed, 3-tc.failed)
		}
	}
}

// SetForeground(false) is told to the server at once, in a PING reporting the background, and
// every later PING reports it too until the app comes back.
func TestAppStateTravelsInThePing(t *testing.T) {
	h := newHarness(t)
	var bg atomic.Bool
	h.e.background = &bg
	h.connect()
	h.answerPull(false)
	bg.Store(true)
	h.e.appStateChanged(h.now)
	var p qimv1.Ping
	if err := proto.Unmarshal(h.lastSent(contract.OpPing).payload, &p); err != nil || p.GetForeground() {
		t.Fatalf("PING after SetForeground(false): %+v (%v), want foreground false", &p, err)
	}
	n := len(h.sent(contract.OpPing))
	h.e.appStateChanged(h.now) // the first is unanswered: no second probe
	if got := len(h.sent(contract.OpPing)); got != n {
		t.Errorf("%d PINGs after a second change with one in flight, want %d", got, n)
	}
}

// SetTyping's frame goes out only on a ready session, with no request id; a TYPING_EVENT becomes
// a Typing event that expires when the server said.
func TestTypingBothWays(t *testing.T) {
	h := newHarness(t)
	h.e.sendTyping(&qimv1.Typing{PeerUserId: 7, Typing: true}) // not connected: dropped
	h.connect()
	h.answerPull(false)
	h.e.sendTyping(&qimv1.Typing{PeerUserId: 7, Typing: true})
	sent := h.sent(contract.OpTyping)
	var tp qimv1.Typing
	if len(sent) != 1 || sent[0].id != 0 || proto.Unmarshal(sent[0].payload, &tp) != nil || tp.GetPeerUserId() != 7 || !tp.GetTyping() {
		t.Fatalf("TYPING frames %+v, want one for peer 7 with request id 0", sent)
	}
	conv := contract.DirectConversationID(contract.TenantID{}, self, 7).Bytes()
	h.frame(contract.OpTypingEvent, 0, &qimv1.TypingEvent{ConversationId: conv[:], UserId: 7, Typing: true, ExpiresInMs: 6000})
	n := 0
	for _, ev := range h.events {
		if ty, ok := ev.(Typing); ok {
			n++
			if ty.User != 7 || !ty.Typing || !ty.Until.Equal(h.now.Add(6*time.Second)) {
				t.Errorf("Typing event %+v", ty)
			}
		}
	}
	if n != 1 {
		t.Errorf("%d Typing events, want 1", n)
	}
}
