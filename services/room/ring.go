package room

import (
	"time"

	"github.com/qim-dev/qim/contract"
	qimv1 "github.com/qim-dev/qim/proto/qim/v1"
)

// bufferedEvent is one event of a room's ring: the event exactly as broadcast, plus what
// idempotency and eviction need.
type bufferedEvent struct {
	ev   *qimv1.RoomEvent // never modified once appended: links marshal it concurrently
	cmid contract.ClientMessageID
	at   time.Time // when this process appended it (its clock, never the client's)
	size int       // encoded size of ev, for the replay's byte budget
	sent []byte    // the client's body when the moderation hook rewrote it (publishReq.sent)
}

// idemKey is a publish's idempotency key within a room.
type idemKey struct {
	sender uint64
	cmid   contract.ClientMessageID
}

// ring is a room's replay buffer: the most recent events, at most max of them and none older
// than age.
//
// Invariants: the buffered events have consecutive room_seq values in append order (every event
// of the room is appended, and eviction only ever removes the oldest), so an event is found by
// arithmetic on its room_seq; ids holds exactly the buffered events' keys. Eviction runs on
// append and before every read, so no read sees an event past its age.
//
// How: a circular slice that grows by doubling up to max (a quiet room does not pay for a full
// buffer), plus an index of idempotency keys. It reads no clock and starts no goroutine: the
// caller passes now, so eviction and replay are table-tested as plain functions.
//
// Rejected: a map from room_seq to event (no order for the replay, and eviction by age would
// scan it), and a linked list (a pointer and an allocation per event).
type ring struct {
	max  int
	age  time.Duration
	buf  []bufferedEvent
	head int // index in buf of the oldest event
	n    int
	ids  map[idemKey]uint64 // → room_seq
}

func newRing(events int, age time.Duration) *ring {
	return &ring{max: events, age: age, ids: map[idemKey]uint64{}}
}

// len is the number of buffered events (after the last eviction).
func (r *ring) len() int { return r.n }

// at is the i-th buffered event, oldest first.
func (r *ring) at(i int) *bufferedEvent { return &r.buf[(r.head+i)%len(r.buf)] }

// evict drops the events older than age at now.
func (r *ring) evict(now time.Time) {
	for r.n > 0 && now.Sub(r.at(0).at) > r.age {
		r.popOldest()
	}
}

func (r *ring) popOldest() {
	e := r.at(0)
	delete(r.ids, idemKey{e.ev.GetSenderUserId(), e.cmid})
	*e = bufferedEvent{} // release the body now, not when the slot is reused
	r.head = (r.head + 1) % len(r.buf)
	r.n--
}

// push appends e, evicting by age and then the oldest event when the ring is full. e's room_seq
// must be one above the newest buffered event's.
func (r *ring) push(e bufferedEvent, now time.Time) {
	r.evict(now)
	if r.n == r.max {
		r.popOldest()
	}
	if r.n == len(r.buf) {
		r.grow()
	}
	*r.at(r.n) = e
	r.n++
	r.ids[idemKey{e.ev.GetSenderUserId(), e.cmid}] = e.ev.GetRoomSeq()
}

// grow doubles the slice (at least 8, at most max), moving the events to its start in order.
func (r *ring) grow() {
	size := min(max(2*len(r.buf), 8), r.max)
	buf := make([]bufferedEvent, size)
	for i := range r.n {
		buf[i] = *r.at(i)
	}
	r.buf, r.head = buf, 0
}

// lookup finds the buffered event published under k, if it is still buffered at now.
func (r *ring) lookup(k idemKey, now time.Time) (*bufferedEvent, bool) {
	r.evict(now)
	seq, ok := r.ids[k]
	if !ok {
		return nil, false
	}
	return r.at(int(seq - r.at(0).ev.GetRoomSeq())), true
}

// replay is a join's catch-up: the buffered events with room_seq ≥ from, newest first into the
// byte budget, returned oldest first. latest is the room's latest issued room_seq. truncated
// reports that the client asked for events it will not get: from ≤ latest and from below the
// first returned event (or nothing returned). That covers a start older than the buffer, a
// buffer emptied by age, a room new to this process (its previous owner's events are unknown)
// and a replay cut by the budget; a from above latest asks for nothing missing.
func (r *ring) replay(from, latest uint64, budget int, now time.Time) (events []*qimv1.RoomEvent, truncated bool) {
	if from > latest {
		return nil, false
	}
	r.evict(now)
	first, used := r.n, 0
	for i := r.n - 1; i >= 0; i-- {
		e := r.at(i)
		if e.ev.GetRoomSeq() < from || used+e.size > budget {
			break
		}
		used += e.size
		first = i
	}
	if first < r.n {
		events = make([]*qimv1.RoomEvent, 0, r.n-first)
		for i := first; i < r.n; i++ {
			events = append(events, r.at(i).ev)
		}
	}
	return events, len(events) == 0 || from < events[0].GetRoomSeq()
}
