package history

import (
	"sort"
	"sync"
)

// Recorder collects the events of one cell from every client goroutine. A nil *Recorder
// records nothing, so the lanes call it unconditionally.
//
// Invariants: Record never blocks on I/O (the hot path of a client read loop calls it); events
// are kept in memory until Events or WriteFile, which is bounded by the cell: a 60 s cell at
// 200 msg/s is about 100k events of 100 bytes.
//
// Rejected alternative: streaming each event to a file as it happens. It puts a write, or a
// buffered writer's lock and an occasional flush, on every ACK and pull, and a crash of the
// checker's own process is not a fault the cells study.
type Recorder struct {
	mu     sync.Mutex
	events []Event
}

// NewRecorder returns an empty recorder.
func NewRecorder() *Recorder { return &Recorder{} }

// Record appends one event.
func (r *Recorder) Record(e Event) {
	if r == nil {
		return
	}
	r.mu.Lock()
	r.events = append(r.events, e)
	r.mu.Unlock()
}

// Len is the number of events recorded so far.
func (r *Recorder) Len() int {
	if r == nil {
		return 0
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.events)
}

// Events returns a copy of the events in time order (stable for equal times, so the order
// one goroutine recorded them in is kept).
func (r *Recorder) Events() []Event {
	if r == nil {
		return nil
	}
	r.mu.Lock()
	out := append([]Event(nil), r.events...)
	r.mu.Unlock()
	sort.SliceStable(out, func(i, j int) bool { return out[i].AtUs < out[j].AtUs })
	return out
}
