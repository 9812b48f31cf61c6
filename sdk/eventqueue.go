package sdk

import "sync"

// eventQueue decouples the connection goroutine from an app that reads Events slowly.
//
// Invariants: push never blocks (the protocol loop must keep answering PINGs and storing
// batches whatever the app does); MessagesAdded, ConversationsUpdated, Committed, Failed and
// every other event are delivered in order and never dropped while the client is open; only
// SyncProgress is coalesced (the newest replaces a queued one at the tail). The backlog is
// counted, its maximum is in Stats, and the connection goroutine stops pulling above
// Config.EventBacklogPause — that, not a drop, is what bounds the memory: the server keeps the
// undelivered data.
//
// How: push appends to a slice under a mutex and signals; one pump goroutine, owned by the Client
// and waited for by Close, moves events into the bounded channel the app reads.
//
// Rejected: a bounded channel written by the protocol loop. When full it must either block the
// loop (missed PONGs, a dead connection, then a reconnect storm caused by a busy UI) or drop
// events (a message the UI never shows, though it is stored). Blocking Send instead does not help
// either: incoming traffic, not sends, fills the queue.
type eventQueue struct {
	mu      sync.Mutex
	q       []Event
	max     int
	notify  chan struct{}
	out     chan Event
	stop    chan struct{}
	done    chan struct{}
	stopped sync.Once
}

func newEventQueue(buffer int) *eventQueue {
	q := &eventQueue{notify: make(chan struct{}, 1), out: make(chan Event, buffer),
		stop: make(chan struct{}), done: make(chan struct{})}
	go q.pump()
	return q
}

func (q *eventQueue) push(ev Event) {
	q.mu.Lock()
	if _, ok := ev.(SyncProgress); ok && len(q.q) > 0 {
		if _, last := q.q[len(q.q)-1].(SyncProgress); last {
			q.q[len(q.q)-1] = ev
			q.mu.Unlock()
			return
		}
	}
	q.q = append(q.q, ev)
	q.max = max(q.max, len(q.q))
	q.mu.Unlock()
	select {
	case q.notify <- struct{}{}:
	default:
	}
}

func (q *eventQueue) pop() (Event, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.q) == 0 {
		return nil, false
	}
	ev := q.q[0]
	q.q[0] = nil
	q.q = q.q[1:]
	if len(q.q) == 0 {
		q.q = q.q[:0:0] // let a drained burst's array go
	}
	return ev, true
}

func (q *eventQueue) pump() {
	defer close(q.done)
	defer close(q.out)
	for {
		ev, ok := q.pop()
		if !ok {
			select {
			case <-q.notify:
				continue
			case <-q.stop:
				return
			}
		}
		select {
		case q.out <- ev:
		case <-q.stop:
			return
		}
	}
}

// backlog is the number of events the app has not taken yet, channel included.
func (q *eventQueue) backlog() (queued, peak int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.q) + len(q.out), q.max
}

// close stops the pump, waits for it and closes the channel; undelivered events are dropped.
func (q *eventQueue) close() {
	q.stopped.Do(func() { close(q.stop) })
	<-q.done
}
