package sdk

import "github.com/qim-dev/qim/contract"

// dedupSet remembers the message ids most recently committed to the local store, so a push that
// repeats what a pull (or an earlier push) already stored costs no transaction. It is only an
// optimisation in front of the store's own message_id primary key, and it obeys one rule: an id
// is added only AFTER the transaction that stored it committed. Added earlier, a failed commit
// would leave the id here and the replay of the same batch would be skipped — the message lost
// for good although the server delivered it twice.
//
// Bounded: a ring of the last n ids (FIFO eviction). An evicted id only costs a transaction that
// finds the message already stored.
type dedupSet struct {
	ids  map[contract.MessageID]struct{}
	ring []contract.MessageID
	pos  int
}

func newDedupSet(n int) *dedupSet {
	return &dedupSet{ids: make(map[contract.MessageID]struct{}, n), ring: make([]contract.MessageID, 0, n)}
}

func (d *dedupSet) has(id contract.MessageID) bool {
	_, ok := d.ids[id]
	return ok
}

func (d *dedupSet) add(id contract.MessageID) {
	if d.has(id) {
		return
	}
	if len(d.ring) < cap(d.ring) {
		d.ring = append(d.ring, id)
	} else {
		delete(d.ids, d.ring[d.pos])
		d.ring[d.pos] = id
		d.pos = (d.pos + 1) % len(d.ring)
	}
	d.ids[id] = struct{}{}
}
