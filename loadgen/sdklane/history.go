package sdklane

import (
	"sync"

	"github.com/qim-dev/qim/chaos/history"
	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/sdk"
)

// sendJournal writes one client's sends and their outcomes to the chaos checker's history
// (chaos/history, Lane SDK): Invoke when Send returned a client_message_id, Ok on Committed,
// Fail or Info on Failed. It records what the SDK told the app, nothing the lane inferred.
//
// There is no Info for a send still pending at the end: the SDK retries a pending send by itself
// until it is Committed or Failed, so an Invoke without an outcome is already "unknown" to the
// checker, which is what Info would say.
//
// Invariants: every outcome carries the ordinal of its send, although a Committed or Failed can
// reach the event pump before Send returned to the send loop (the SDK may send, be answered and
// emit while Send's caller is not yet scheduled). Such an outcome waits in early until its Send is
// journaled; it keeps the time it was observed, so the history still reads Invoke before it
// (Invoke's time is taken before Send is called, see invoked).
//
// Rejected alternative: folding this into flowLog. The flowLog is the lane's own verdict, joined
// after the run; the history is another consumer's record with its own timing rule (an event
// carries the moment it was observed), and with History nil this costs nothing.
type sendJournal struct {
	rec          *history.Recorder // nil: record nothing, keep nothing
	sender, peer contract.UserID

	mu      sync.Mutex
	ordinal map[contract.ClientMessageID]uint64          // Send returned this id for this ordinal
	early   map[contract.ClientMessageID][]history.Event // outcomes seen before their Send returned
}

func newSendJournal(rec *history.Recorder, sender, peer contract.UserID) *sendJournal {
	return &sendJournal{rec: rec, sender: sender, peer: peer,
		ordinal: map[contract.ClientMessageID]uint64{}, early: map[contract.ClientMessageID][]history.Event{}}
}

// invoked journals a Send that returned id for ordinal. atUs is when Send was called (the
// body's sent-at), not when it returned: the SDK may report the outcome before the return, and
// the invocation began at the call.
//
// A Send that returned an error is not journaled at all: the SDK refuses before, or fails,
// the transaction that stores the pending row (sdk/client.go Send), so nothing was recorded and
// nothing will ever be sent. The lane counts it as failed (flowLog.sendErrs); for the checker it
// is no send.
func (j *sendJournal) invoked(id contract.ClientMessageID, ordinal uint64, atUs int64) {
	if j.rec == nil {
		return
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	j.ordinal[id] = ordinal
	j.rec.Record(history.Event{Kind: history.Invoke, AtUs: atUs, Lane: history.SDK, Sender: j.sender,
		Ordinal: ordinal, Recipient: j.peer})
	for _, ev := range j.early[id] {
		ev.Ordinal = ordinal
		j.rec.Record(ev)
	}
	delete(j.early, id)
}

// committed journals a Committed: the send is ok, with the stored message's ids.
func (j *sendJournal) committed(e sdk.Committed, atUs int64) {
	m := &e.Message
	j.outcome(e.ClientMessageID, history.Event{Kind: history.Ok, AtUs: atUs, MessageID: m.ID,
		Conversation: m.Conversation, ConvSeq: uint64(m.Seq)})
}

// failed journals a Failed. A server's definite rejection (a code) is a Fail: never visible. Code
// 0 is the SDK giving up on its own — a send pending past contract.ClientPendingMaxAge
// (ErrPendingExpired) — and may follow a SEND the server committed but whose ACK was lost, so it
// is an Info (unknown), not a promise that the message never shows.
func (j *sendJournal) failed(e sdk.Failed, atUs int64) {
	kind := history.Fail
	if e.Code == contract.ErrCodeUnspecified {
		kind = history.Info
	}
	j.outcome(e.ClientMessageID, history.Event{Kind: kind, AtUs: atUs, Code: e.Code})
}

// outcome records ev for the send id, now when its Send was journaled, else when it is.
func (j *sendJournal) outcome(id contract.ClientMessageID, ev history.Event) {
	if j.rec == nil {
		return
	}
	ev.Lane, ev.Sender, ev.Recipient = history.SDK, j.sender, j.peer
	j.mu.Lock()
	defer j.mu.Unlock()
	ord, ok := j.ordinal[id]
	if !ok {
		j.early[id] = append(j.early[id], ev)
		return
	}
	ev.Ordinal = ord
	j.rec.Record(ev)
}

// delivered records a message of the peer that MessagesAdded surfaced at c (App level: after the
// SDK's dedup). MailboxSeq stays 0: the SDK does not expose the mailbox position of a message.
//
// What the SDK guarantees (sdk/sync.go engine.committed, sdk/store/apply.go insertMessage):
// MessagesAdded carries only store.Applied.Added, the messages whose message_id was not yet in
// the store (the primary key of the messages table, looked up in the same transaction as the
// insert); messages are never deleted (a REBUILD resets the cursor and keeps them,
// store.ResetForRebuild), pages the app asks for with History are not announced, and a push
// that repeats a pull (or the reverse) finds the row and is not added again. So one message_id
// is surfaced at most once per client store, and the lane gives each client a fresh store: the
// same MessageID twice here is a real duplicate.
func (c *client) delivered(m *sdk.Message, b body, atUs int64) {
	c.hist.Record(history.Event{Kind: history.Deliver, AtUs: atUs, Lane: history.SDK, Sender: c.peer,
		Ordinal: b.ordinal, Recipient: c.user, MessageID: m.ID, Conversation: m.Conversation,
		ConvSeq: uint64(m.Seq), App: true})
}
