package loadgen

import (
	"encoding/binary"
	"sync"
	"time"

	"github.com/qim-dev/qim/chaos/history"
	qimv1 "github.com/qim-dev/qim/proto/qim/v1"
)

// midIndex identifies group mailbox entries that arrive without a body. The server inlines a
// body in mailbox entries only when members × len(body) ≤ contract.InlineBodyBudgetBytes, so in
// a group of 1,000 the loadgen body (and the header parseBody reads) is absent from PUSH_EVENTS
// and MAILBOX_BATCH: such an entry names its message by message_id alone. The sender learns
// that id from its SEND_ACK and files the send's header under it here; a delivery that beats
// the ACK (about 40 % of pushes do) is parked under the id with its arrival time and accounted
// when the ACK is filed, so end to end is still send → delivery.
//
// Invariants: a body-less entry is accounted once, either at arrival (its id is filed) or when
// the ACK naming it is; looking up and parking happen under the same lock as filing, so no
// entry is parked after its ACK was filed. Bounded by the messages in flight: a header leaves
// when every member pulled its message (retire), parked entries when their ACK is filed.
// Whatever is still parked at the end is unmatched: an id no SEND_ACK named (a send of unknown
// outcome, a double commit, a server fault) or a late repeat of a retired message.
//
// How: midShards shards by message id, each a mutex and two maps, so a 1,000-member fanout
// does not serialise every reader and pull worker of the run on one lock (flow.go rejected a
// global map for that reason; here the map is unavoidable, the lock is not).
//
// Rejected: a PULL_HISTORY per body-less entry to fetch the body — a round trip per entry on
// the measured path, and the stored read (stored.go) does that once, after the window; decoding
// client_message_id — only the sender's own copy carries one.
type midIndex struct {
	shards [midShards]midShard
}

const midShards = 64

type midShard struct {
	mu     sync.Mutex
	known  map[[16]byte]bodyHeader
	parked map[[16]byte][]parkedEntry
}

// parkedEntry is a body-less delivery waiting for the SEND_ACK that names its message.
type parkedEntry struct {
	c    *lgConn
	ev   *qimv1.MailboxEvent
	kind history.Kind // Push or Deliver (pulled)
	at   time.Time    // arrival: latencies are measured to it, not to the ACK
}

func newMidIndex() *midIndex {
	x := &midIndex{}
	for i := range x.shards {
		x.shards[i] = midShard{known: map[[16]byte]bodyHeader{}, parked: map[[16]byte][]parkedEntry{}}
	}
	return x
}

// idKey is a wire id as a map key; a malformed id (not 16 bytes) is never filed, so an entry
// carrying one stays unmatched.
func idKey(b []byte) ([16]byte, bool) {
	var k [16]byte
	copy(k[:], b)
	return k, len(b) == 16
}

func (x *midIndex) shard(k [16]byte) *midShard {
	h := binary.LittleEndian.Uint64(k[:8]) ^ binary.LittleEndian.Uint64(k[8:])
	return &x.shards[(h*0x9e3779b97f4a7c15)>>58] // Fibonacci hashing: the top 6 bits, whatever the id layout
}

// lookup returns the header filed under e's message id or, when none is, parks e.
func (x *midIndex) lookup(e parkedEntry) (bodyHeader, bool) {
	k, _ := idKey(e.ev.GetMessageId())
	s := x.shard(k)
	s.mu.Lock()
	defer s.mu.Unlock()
	if h, ok := s.known[k]; ok {
		return h, true
	}
	s.parked[k] = append(s.parked[k], e)
	return bodyHeader{}, false
}

// file files h under mid and returns the entries parked under it, in arrival order.
func (x *midIndex) file(mid []byte, h bodyHeader) []parkedEntry {
	k, ok := idKey(mid)
	if !ok {
		return nil
	}
	s := x.shard(k)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.known[k] = h
	p := s.parked[k]
	delete(s.parked, k)
	return p
}

// retire forgets mid once every member pulled its message.
func (x *midIndex) retire(k [16]byte) {
	s := x.shard(k)
	s.mu.Lock()
	delete(s.known, k)
	s.mu.Unlock()
}

// unmatched counts what is still parked: pulled entries and pushes. A nil index (direct mode)
// has none.
func (x *midIndex) unmatched() (pulled, pushed int64) {
	if x == nil {
		return 0, 0
	}
	for i := range x.shards {
		s := &x.shards[i]
		s.mu.Lock()
		for _, es := range s.parked {
			for _, e := range es {
				if e.kind == history.Deliver {
					pulled++
				} else {
					pushed++
				}
			}
		}
		s.mu.Unlock()
	}
	return pulled, pushed
}
