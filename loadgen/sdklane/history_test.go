package sdklane

import (
	"errors"
	"testing"

	"github.com/qim-dev/qim/chaos/history"
	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/sdk"
)

const (
	testRun   = 0x5eed
	userA     = contract.UserID(100) // client 0, the one under test
	userB     = contract.UserID(101) // client 1, its peer
	strangerU = contract.UserID(999)
)

var testConv = contract.DirectConversationID(contract.TenantID{Lo: 1}, userA, userB)

// testClient is client 0 of a pair without an SDK behind it: the tests feed handle and
// recordSend what the pump and the send loop would.
func testClient(rec *history.Recorder) *client {
	return &client{idx: 0, user: userA, peer: userB, peerIdx: 1, run: testRun, out: newFlowLog(), in: newFlowLog(),
		sends: newSendJournal(rec, userA, userB), hist: rec}
}

// peerMsg is a message of the peer carrying its load body for ordinal.
func peerMsg(ordinal, seq uint64) sdk.Message {
	b := body{run: testRun, sentUs: 1, sender: 1, ordinal: ordinal}
	return sdk.Message{ID: mid(100 + ordinal), Conversation: testConv, Seq: contract.ConversationSeq(seq),
		Sender: userB, HasBody: true, Body: b.encode()}
}

// TestHistoryFromPumpEvents drives the send path and the pump with synthetic SDK events and
// checks every history event: an outcome that arrives before its Send returned still names the
// ordinal and follows the Invoke; a refused Send is no event; Failed with a code is a Fail,
// without one (the SDK gave up by itself) an Info; only the peer's load messages of this run
// are deliveries.
func TestHistoryFromPumpEvents(t *testing.T) {
	rec := history.NewRecorder()
	c := testClient(rec)
	// Ordinal 4: Committed reaches the pump before Send returned.
	c.handle(sdk.Committed{ClientMessageID: cmid(4), Message: sdk.Message{ID: mid(4), Conversation: testConv, Seq: 7}}, 20)
	c.recordSend(cmid(4), body{run: testRun, sentUs: 10, ordinal: 4}, nil)
	// Ordinal 1: rejected by the server; ordinal 2: expired in the SDK; ordinal 3: refused by Send.
	c.recordSend(cmid(1), body{run: testRun, sentUs: 30, ordinal: 1}, nil)
	c.handle(sdk.Failed{ClientMessageID: cmid(1), Code: contract.ErrCodeInvalidArgument}, 40)
	c.recordSend(cmid(2), body{run: testRun, sentUs: 50, ordinal: 2}, nil)
	c.handle(sdk.Failed{ClientMessageID: cmid(2), Err: sdk.ErrPendingExpired}, 60)
	c.recordSend(contract.ClientMessageID{}, body{run: testRun, sentUs: 70, ordinal: 3}, errors.New("closed"))
	// One batch: the peer's ordinal 5, an own copy, another run's message, a stranger's message.
	own := sdk.Message{ID: mid(1), Conversation: testConv, Seq: 8, Sender: userA, HasBody: true, Body: body{run: testRun}.encode()}
	foreign := peerMsg(6, 9)
	foreign.Body = body{run: testRun + 1, sender: 1, ordinal: 6}.encode()
	stranger := peerMsg(7, 1)
	stranger.Sender = strangerU
	c.handle(sdk.MessagesAdded{Messages: []sdk.Message{peerMsg(5, 10), own, foreign, stranger}}, 80)

	ok := func(kind history.Kind, at int64, ord uint64) history.Event {
		return history.Event{Kind: kind, AtUs: at, Lane: history.SDK, Sender: userA, Ordinal: ord, Recipient: userB}
	}
	want := []history.Event{ok(history.Invoke, 10, 4), ok(history.Ok, 20, 4), ok(history.Invoke, 30, 1),
		ok(history.Fail, 40, 1), ok(history.Invoke, 50, 2), ok(history.Info, 60, 2),
		{Kind: history.Deliver, AtUs: 80, Lane: history.SDK, Sender: userB, Ordinal: 5, Recipient: userA,
			MessageID: mid(105), Conversation: testConv, ConvSeq: 10, App: true}}
	want[1].MessageID, want[1].Conversation, want[1].ConvSeq = mid(4), testConv, 7
	want[3].Code = contract.ErrCodeInvalidArgument
	got := rec.Events()
	if len(got) != len(want) {
		t.Fatalf("%d events, want %d: %+v", len(got), len(want), got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("event %d = %+v, want %+v", i, got[i], want[i])
		}
	}
	if n := len(c.sends.early); n != 0 {
		t.Errorf("%d outcomes still wait for their Send", n)
	}
}

// TestNoHistoryKeepsNothing: with History nil the lane records nothing and the journal keeps
// no per-send state, while the ledger still gets every fact.
func TestNoHistoryKeepsNothing(t *testing.T) {
	c := testClient(nil)
	c.handle(sdk.Committed{ClientMessageID: cmid(0)}, 1)
	c.recordSend(cmid(0), body{run: testRun}, nil)
	c.recordSend(cmid(1), body{run: testRun, ordinal: 1}, nil)
	c.handle(sdk.Failed{ClientMessageID: cmid(1), Code: contract.ErrCodeInvalidArgument}, 2)
	c.handle(sdk.MessagesAdded{Messages: []sdk.Message{peerMsg(0, 1)}}, 3)
	if len(c.sends.ordinal) != 0 || len(c.sends.early) != 0 {
		t.Errorf("journal kept %d ordinals and %d early outcomes", len(c.sends.ordinal), len(c.sends.early))
	}
	if got := c.out.verify(); got.Sent != 2 || got.Committed != 1 || got.Failed != 1 {
		t.Errorf("ledger %+v", got)
	}
	if got := c.in.received[0]; len(got) != 1 {
		t.Errorf("receipts of ordinal 0: %v", got)
	}
}
