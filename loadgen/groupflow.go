package loadgen

import "sync"

// sendLedger is what a sending connection keeps about its own sends: flow (a 1:1 pair's one
// direction) or groupFlow (one member's sends to its group). The sender's goroutines record
// sends and answers through it; the settle wait and the report read it.
type sendLedger interface {
	add() uint64
	answer(ord uint64, state uint8, mid []byte)
	ackedAt(ord uint64, atUs int64)
	missing() int
	tally() tally
}

// groupFlow is the ledger of one member's sends to its group (group mode): what it sent and how
// each send ended, and which members' mailboxes delivered each message. Lost and duplicate
// entries are decided here and nowhere else, per (message, member).
//
// Invariants: membership is static for the run, so every message is expected in the mailbox of
// every one of the members members, the sender's own copy included (members at send time ×
// messages); a record exists for every ordinal the sender put on the wire before its frame is
// written; undelivered is exactly Σ over acked records of (members − members that pulled it),
// maintained on both transitions like flow's, so the settle loop stays O(connections); a
// member that pulls an ordinal again under the message id the ordinal already has (its SEND_ACK's,
// else the first pulled) is a raw duplicate, under another id a duplicate that survives dedup.
//
// How: one mutex per sender, as flow; per record two bit sets over the member index (pulled,
// pushed) in one slab, so a record costs 2 × ⌈members/64⌉ words and no allocation of its own.
//
// Rejected alternatives: one flow per (sender, member) — a 1,000-member group would keep a
// million flows, and the sender would have to update 999 of them on every answer; a map per
// record — an allocation per message and per delivery on the hot path.
type groupFlow struct {
	mu          sync.Mutex
	members     int // group size
	self        int // the sender's own index in the group (its own copy's bit)
	words       int // words per bit set
	recs        []groupRec
	bits        []uint64 // record i: pulled at [2i·words, (2i+1)·words), pushed after it
	undelivered int      // entries of acked records not yet pulled
	stats       flowStats
	entries     int64 // distinct (record, member) pulled, any outcome
}

type groupRec struct {
	state  uint8
	got    uint16 // members (the sender included) that pulled it
	ackMid [16]byte
	mid    [16]byte // the id deliveries must carry: SEND_ACK's, else the first pulled
	hasMid bool
	ackUs  int64
}

func newGroupFlow(members, self int) *groupFlow {
	return &groupFlow{members: members, self: self, words: (members + 63) / 64}
}

func (f *groupFlow) add() uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.recs = append(f.recs, groupRec{state: stateSent})
	f.bits = append(f.bits, make([]uint64, 2*f.words)...)
	return uint64(len(f.recs) - 1)
}

// set marks member in record ord's bit set (0 pulled, 1 pushed) and reports whether it was unset.
func (f *groupFlow) set(ord uint64, which, member int) bool {
	w := &f.bits[(2*int(ord)+which)*f.words+member/64]
	bit := uint64(1) << (member % 64)
	if *w&bit != 0 {
		return false
	}
	*w |= bit
	return true
}

func (f *groupFlow) has(ord uint64, which, member int) bool {
	return f.bits[(2*int(ord)+which)*f.words+member/64]&(uint64(1)<<(member%64)) != 0
}

// answer records the outcome of ord; as in flow, only the first definite answer counts.
func (f *groupFlow) answer(ord uint64, state uint8, mid []byte) {
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
		f.undelivered += f.members - int(r.got)
		if r.hasMid && r.mid != r.ackMid {
			f.stats.ackMismatch++
		}
		r.mid, r.hasMid = r.ackMid, true
	case stateFailed:
		if r.got > 0 {
			f.stats.failedVisible++
		}
	}
}

func (f *groupFlow) ackedAt(ord uint64, atUs int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if ord < uint64(len(f.recs)) && f.recs[ord].ackUs == 0 {
		f.recs[ord].ackUs = atUs
	}
}

// pulled records that member's mailbox delivered ord under mid, and reports whether it is that
// member's first delivery of it.
func (f *groupFlow) pulled(ord uint64, member int, mid []byte) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if ord >= uint64(len(f.recs)) || member < 0 || member >= f.members {
		f.stats.foreign++
		return false
	}
	r := &f.recs[ord]
	var m [16]byte
	copy(m[:], mid)
	if !f.set(ord, 0, member) {
		if m == r.mid {
			f.stats.rawDuplicates++
		} else {
			f.stats.dupAfterDedup++
		}
		return false
	}
	r.got++
	f.entries++
	switch {
	case !r.hasMid:
		r.mid, r.hasMid = m, true
	case m != r.mid:
		f.stats.ackMismatch++
	}
	switch r.state {
	case stateAcked:
		f.undelivered--
	case stateFailed:
		f.stats.failedVisible++
	}
	return true
}

// doneMid returns the message id SEND_ACK named for ord once every member pulled ord.
func (f *groupFlow) doneMid(ord uint64) ([16]byte, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	r := &f.recs[ord]
	return r.ackMid, r.state == stateAcked && int(r.got) == f.members
}

// pushed records a PUSH_EVENTS delivery of ord to member and reports whether it is that
// member's first push of it; sinceAck is the time from ord's SEND_ACK, -1 when the push came
// first; pulled says the member's pull delivered it already (a push_pull sample is then moot).
func (f *groupFlow) pushed(ord uint64, member int, atUs int64) (first bool, sinceAck int64, pulled bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if ord >= uint64(len(f.recs)) || member < 0 || member >= f.members {
		f.stats.foreign++
		return false, -1, false
	}
	if !f.set(ord, 1, member) {
		f.stats.pushDuplicates++
		return false, -1, false
	}
	return true, since(f.recs[ord].ackUs, atUs), f.has(ord, 0, member)
}

func (f *groupFlow) missing() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.undelivered
}

// tally: delivered counts mailbox entries (distinct (message, member) pulled, own copies and
// sends of any outcome included); missing the entries of acked messages never pulled, of which
// lostOwn are the sender's own copies; expected is acked × members.
func (f *groupFlow) tally() tally {
	f.mu.Lock()
	defer f.mu.Unlock()
	t := tally{sent: int64(len(f.recs)), delivered: f.entries, missing: int64(f.undelivered), flowStats: f.stats}
	for i := range f.recs {
		switch f.recs[i].state {
		case stateAcked:
			t.acked++
			if !f.has(uint64(i), 0, f.self) {
				t.lostOwn++
			}
		case stateFailed:
			t.failed++
		case stateUnknown, stateSent:
			t.unknown++
		}
	}
	t.expected = t.acked * int64(f.members)
	return t
}
