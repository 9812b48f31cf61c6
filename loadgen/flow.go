package loadgen

import "sync"

// Send outcomes, in the checker vocabulary of DESIGN.md §8: ok (SEND_ACK), fail (a definite
// ERROR: must never be visible), info (timeout or lost connection: may appear, never twice).
const (
	stateSent    uint8 = iota + 1 // on the wire, no answer yet
	stateAcked                    // ok
	stateFailed                   // fail
	stateUnknown                  // info: timed out or the connection was lost
)

// flow is the ledger of one direction of one pair (sender connection → its peer): what was
// sent and how it ended, and what the recipient received. Missing and duplicate deliveries are
// decided here and nowhere else.
//
// Invariants: a record exists for every ordinal the sender put on the wire, appended before the
// frame is written, so an answer or a delivery can never find its ordinal absent; undelivered
// is exactly |{acked ∧ never pulled}| at every moment (maintained on both transitions), which
// makes the settle loop O(connections) instead of O(messages); deliveries are deduplicated by
// message_id — the same id again is a raw duplicate (harmless, at-least-once), a second
// DIFFERENT id for the same ordinal is a duplicate that survives dedup (a double commit).
//
// How: one mutex per flow, touched by the sender's goroutine (append), the sender's read loop
// (answers), and the recipient's read loop and pull worker (pushes and pulls). Contention is
// one pair's traffic, a few messages per second per flow at gate rates.
//
// Rejected alternative: a global map keyed by client_message_id. It serialises every
// connection on one lock and one hash table at tens of thousands of operations per second, and
// it still needs a per-recipient view to tell a duplicate from a message delivered to two users.
type flow struct {
	mu          sync.Mutex
	recs        []flowRec
	undelivered int // acked and not yet pulled by the recipient
	stats       flowStats
}

type flowRec struct {
	state  uint8
	pulled uint16 // deliveries through MAILBOX_BATCH
	pushed uint16 // deliveries through PUSH_EVENTS
	ackMid [16]byte
	gotMid [16]byte // message_id of the first pulled delivery
}

// flowStats are the per-flow counters summed into the report.
type flowStats struct {
	rawDuplicates  int64 // same message_id pulled again
	dupAfterDedup  int64 // another message_id pulled for an ordinal already delivered
	ackMismatch    int64 // pulled message_id differs from the one SEND_ACK named
	failedVisible  int64 // a definite failure that was delivered anyway
	pushDuplicates int64 // same ordinal pushed again (push is best effort: informational)
	foreign        int64 // ordinal the sender never sent
}

// add registers ordinal len(recs) as sent and returns it.
func (f *flow) add() uint64 {
	f.mu.Lock()
	f.recs = append(f.recs, flowRec{state: stateSent})
	n := uint64(len(f.recs) - 1)
	f.mu.Unlock()
	return n
}

// answer records the outcome of ordinal ord; only the first answer counts (a late answer after
// a timeout upgrades info to its real outcome, because it is the truth about the commit).
func (f *flow) answer(ord uint64, state uint8, mid []byte) {
	f.mu.Lock()
	defer f.mu.Unlock()
	r := &f.recs[ord]
	if r.state == stateAcked || r.state == stateFailed {
		return
	}
	r.state = state
	switch state {
	case stateAcked:
		copy(r.ackMid[:], mid)
		if r.pulled == 0 {
			f.undelivered++
		} else if r.gotMid != r.ackMid {
			f.stats.ackMismatch++
		}
	case stateFailed:
		if r.pulled > 0 {
			f.stats.failedVisible++
		}
	}
}

// pulled records a MAILBOX_BATCH delivery and reports whether it is the first one.
func (f *flow) pulled(ord uint64, mid []byte) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if ord >= uint64(len(f.recs)) {
		f.stats.foreign++
		return false
	}
	r := &f.recs[ord]
	var m [16]byte
	copy(m[:], mid)
	r.pulled++
	if r.pulled > 1 {
		if m == r.gotMid {
			f.stats.rawDuplicates++
		} else {
			f.stats.dupAfterDedup++
		}
		return false
	}
	r.gotMid = m
	switch r.state {
	case stateAcked:
		f.undelivered--
		if r.ackMid != m {
			f.stats.ackMismatch++
		}
	case stateFailed:
		f.stats.failedVisible++
	}
	return true
}

// pushed records a PUSH_EVENTS delivery and reports whether it is the first push.
func (f *flow) pushed(ord uint64) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if ord >= uint64(len(f.recs)) {
		f.stats.foreign++
		return false
	}
	r := &f.recs[ord]
	r.pushed++
	if r.pushed > 1 {
		f.stats.pushDuplicates++
		return false
	}
	return true
}

// missing is the number of acked ordinals the recipient has not pulled.
func (f *flow) missing() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.undelivered
}

// tally is a consistent snapshot of the flow for the report.
type tally struct {
	sent, acked, failed, unknown, delivered, missing int64
	flowStats
}

func (f *flow) tally() tally {
	f.mu.Lock()
	defer f.mu.Unlock()
	t := tally{sent: int64(len(f.recs)), missing: int64(f.undelivered), flowStats: f.stats}
	for i := range f.recs {
		r := &f.recs[i]
		switch r.state {
		case stateAcked:
			t.acked++
		case stateFailed:
			t.failed++
		case stateUnknown, stateSent:
			t.unknown++
		}
		if r.pulled > 0 {
			t.delivered++
		}
	}
	return t
}

func (t *tally) add(o tally) {
	t.sent += o.sent
	t.acked += o.acked
	t.failed += o.failed
	t.unknown += o.unknown
	t.delivered += o.delivered
	t.missing += o.missing
	t.rawDuplicates += o.rawDuplicates
	t.dupAfterDedup += o.dupAfterDedup
	t.ackMismatch += o.ackMismatch
	t.failedVisible += o.failedVisible
	t.pushDuplicates += o.pushDuplicates
	t.foreign += o.foreign
}
