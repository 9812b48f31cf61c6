package room

import (
	"sync"
	"time"
)

// registry is the process's set of live rooms.
//
// Invariants: a room is in m until the sweep drops it, and the sweep marks it dead under its own
// lock before removing it, so a caller that looked a room up just before the drop sees dead and
// looks again (getting a new room) instead of writing into one nobody reads. A room with a
// joined connection is never dropped. Lock order: registry, then room, then link.
//
// Rejected: sync.Map. Instantiation must be exactly-once per key (two rooms for one key would
// issue two room_seq sequences), which a plain map under a mutex gives without a second check.
type registry struct {
	events int
	age    time.Duration
	tally  *tally

	mu sync.Mutex
	m  map[roomKey]*room
}

func newRegistry(events int, age time.Duration, t *tally) *registry {
	return &registry{events: events, age: age, tally: t, m: map[roomKey]*room{}}
}

// with runs fn on the live room of key with the room's lock held, instantiating the room at now
// when create is set; without create it reports false for a room that does not exist.
func (g *registry) with(key roomKey, now time.Time, create bool, fn func(r *room)) bool {
	for {
		g.mu.Lock()
		r := g.m[key]
		if r == nil {
			if !create {
				g.mu.Unlock()
				return false
			}
			r = newRoom(key, now, g.events, g.age, g.tally)
			g.m[key] = r
		}
		g.mu.Unlock()
		r.mu.Lock()
		if !r.dead {
			fn(r)
			r.mu.Unlock()
			return true
		}
		r.mu.Unlock() // dropped between the lookup and the lock: look again
	}
}

// sweep drops the idle rooms at now and returns how many it dropped; the others evict their
// aged events.
func (g *registry) sweep(now time.Time) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	n := 0
	for key, r := range g.m {
		r.mu.Lock()
		if r.idle(now, g.age) {
			r.dead = true
			delete(g.m, key)
			n++
		} else {
			r.ring.evict(now) // a joined but quiet room releases its aged bodies now, not at its next event
		}
		r.mu.Unlock()
	}
	return n
}

// len is the number of live rooms.
func (g *registry) len() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.m)
}
