package loadgen

import "sync"

// Send outcomes, in the checker vocabulary of docs/architecture.md, section 8: ok (SEND_ACK), fail
// (a definite ERROR: must never be visible), info (timeout or lost connection: may appear, never
// twice).
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
	ackUs  int64    // when SEND_ACK was read (Unix µs; 0 = not yet)
	pushUs int64    // when the first PUSH_EVENTS carrying it was read (Unix µs; 0 = not yet)
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
//
// sincePush is the time from the first push of ord to atUs, -1 when no push came first.
func (f *flow) pulled(ord uint64, mid []byte, atUs int64) (first bool, sincePush int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if ord >= uint64(len(f.recs)) {
		f.stats.foreign++
		return false, -1
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
		return false, -1
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
	return true, since(r.pushUs, atUs)
}

// since is atUs − fromUs, or -1 when from is unknown (0) or later than atUs.
func since(fromUs, atUs int64) int64 {
	if fromUs == 0 || atUs < fromUs {
		return -1
	}
	return atUs - fromUs
}

// ackedAt stamps when ord's SEND_ACK was read; only the first stamp counts.
func (f *flow) ackedAt(ord uint64, atUs int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if ord < uint64(len(f.recs)) && f.recs[ord].ackUs == 0 {
		f.recs[ord].ackUs = atUs
	}
}

// pushed records a PUSH_EVENTS delivery and reports whether it is the first push.
//
// sinceAck is the time from ord's SEND_ACK to atUs, -1 when the push came first (possible: the
// fanout reads the Outbox before the writer has marked the commit and answered).
func (f *flow) pushed(ord uint64, atUs int64) (first bool, sinceAck int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if ord >= uint64(len(f.recs)) {
		f.stats.foreign++
		return false, -1
	}
	r := &f.recs[ord]
	r.pushed++
	if r.pushed > 1 {
		f.stats.pushDuplicates++
		return false, -1
	}
	r.pushUs = atUs
	return true, since(r.ackUs, atUs)
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
	expected, lostOwn                                int64 // group mode only (groupFlow.tally)
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
	t.expected += o.expected
	t.lostOwn += o.lostOwn
	t.rawDuplicates += o.rawDuplicates
	t.dupAfterDedup += o.dupAfterDedup
	t.ackMismatch += o.ackMismatch
	t.failedVisible += o.failedVisible
	t.pushDuplicates += o.pushDuplicates
	t.foreign += o.foreign
}
