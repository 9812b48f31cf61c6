package room

import (
	"sync"
	"sync/atomic"

	"google.golang.org/protobuf/proto"

	qimv1 "github.com/qim-dev/qim/proto/qim/v1"
	internalv1 "github.com/qim-dev/qim/proto/qiminternal/v1"
)

// itemOverhead is what a queued item adds to a RoomLinkDown beyond its own encoding (field tags
// and lengths), for the byte budget of one Send; an estimate, on the safe side.
const itemOverhead = 8

// linkItem is one entry of a link's queue: a join answer, or one event of one room.
type linkItem struct {
	answer  *internalv1.RoomJoinAnswer
	removal *internalv1.RoomRemoval
	room    *room
	ev      *qimv1.RoomEvent
	size    int // encoded bytes this item adds to a RoomLinkDown
}

func answerItem(a *internalv1.RoomJoinAnswer) linkItem {
	return linkItem{answer: a, size: proto.Size(a) + itemOverhead}
}

// link is one gateway's Link stream: the bounded queue between the rooms and the stream's
// sender, and the set of rooms where the link has joined connections.
//
// Invariants: a push never blocks (rooms push with their lock held); the queue holds at most
// limit items, and the push that finds it full ends the link instead (slow is closed, the queue
// dropped, every later push and admit ignored) — an explicit, counted end, never a silent drop
// of one event; once ended, the link gains no room, so removing the memberships of rooms (after
// end) leaves none behind. Lock order: room, then link.
//
// How: rooms push one item per event per link under their own lock; the sender wakes on the
// first item of an empty queue, takes the whole queue in one swap and sends it as few
// RoomLinkDown messages (sender.go), so a busy room costs one wake-up per batch, not per event.
//
// Rejected: a buffered channel. It cannot be taken whole in one step, its depth is not
// consistent with a membership set under one lock, and a full channel offers blocking or
// silently dropping, where a slow link must be ended and its members told.
type link struct {
	id      uint64
	limit   int
	depth   *atomic.Int64          // queued items over every link, for the gauge
	gateway atomic.Pointer[string] // from the hello, for logs

	wake chan struct{} // 1-buffered: the queue went from empty to non-empty
	slow chan struct{} // closed by the push that found the queue full

	mu    sync.Mutex
	queue []linkItem
	ended bool
	rooms map[*room]struct{}
}

func newLink(id uint64, limit int, depth *atomic.Int64) *link {
	return &link{id: id, limit: limit, depth: depth, wake: make(chan struct{}, 1), slow: make(chan struct{}),
		rooms: map[*room]struct{}{}}
}

// push queues it; on an ended link it does nothing. l.mu must not be held.
func (l *link) push(it linkItem) {
	l.mu.Lock()
	l.enqueueLocked(it)
	l.mu.Unlock()
}

// admit queues a join answer of room r and records r among the link's rooms, in one step, so a
// link ending concurrently either sees r or refuses the join. False when the link has ended
// (before, or by this very push overflowing the queue).
func (l *link) admit(r *room, it linkItem) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.enqueueLocked(it) {
		return false
	}
	l.rooms[r] = struct{}{}
	return true
}

func (l *link) enqueueLocked(it linkItem) bool {
	if l.ended {
		return false
	}
	if len(l.queue) >= l.limit {
		l.endLocked()
		close(l.slow)
		return false
	}
	l.queue = append(l.queue, it)
	l.depth.Add(1)
	if len(l.queue) == 1 {
		select {
		case l.wake <- struct{}{}:
		default: // a wake-up is already pending; it will take this item too
		}
	}
	return true
}

// forget removes r from the link's rooms (its last joined connection there left).
func (l *link) forget(r *room) {
	l.mu.Lock()
	delete(l.rooms, r)
	l.mu.Unlock()
}

// take returns everything queued and leaves dst (emptied) as the new queue, so the sender and the
// rooms swap two slices instead of allocating one per wake-up.
func (l *link) take(dst []linkItem) []linkItem {
	l.mu.Lock()
	defer l.mu.Unlock()
	q := l.queue
	l.queue = dst[:0]
	l.depth.Add(-int64(len(q)))
	return q
}

// end marks the link ended and returns the rooms where it still has joined connections; the
// caller removes them from each room. Idempotent: a second call returns none.
func (l *link) end() map[*room]struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	rooms := l.rooms
	if !l.ended {
		l.endLocked()
	}
	l.rooms = map[*room]struct{}{}
	return rooms
}

func (l *link) endLocked() {
	l.ended = true
	l.depth.Add(-int64(len(l.queue)))
	l.queue = nil
}

func (l *link) isEnded() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.ended
}

// name is the gateway's name from its hello, or "" before one.
func (l *link) name() string {
	if p := l.gateway.Load(); p != nil {
		return *p
	}
	return ""
}
