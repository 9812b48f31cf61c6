package commitlog

import (
	"context"
	"sync"
	"time"
)

// recordBuffer bounds the records a producer has handed to franz-go and not yet seen
// acknowledged or failed; its depth is the producer's queue-depth gauge.
//
// Invariants: every successful admit is matched by exactly one release, made in the record's
// promise after the caller's callback returned; admit waits only while the buffer is full and
// gives up on the caller's context or on close, never otherwise; once close returns, no record
// is admitted again and every admitted record's callback has run.
//
// How: a buffered channel is the counting semaphore (fast path: one non-blocking send); a
// read lock is held from admission until the record is handed to franz-go, so close (write lock)
// cannot slip between the two and leave a record that nobody fails.
//
// Rejected: letting franz-go's MaxBufferedRecords block Produce with the caller's context. That
// context then also becomes the record's context, and franz-go fails every buffered record of
// the partition when the first record's context is cancelled: one client disconnecting would fail
// its neighbours' Outbox records on the single Outbox partition. So records get a detached
// context and only the wait for room here honours the caller's.
type recordBuffer struct {
	slots   chan struct{}
	closing chan struct{} // closed first, to wake admitters waiting for room
	mu      sync.RWMutex
	closed  bool
	once    sync.Once
}

func newRecordBuffer(n int) *recordBuffer {
	return &recordBuffer{slots: make(chan struct{}, n), closing: make(chan struct{})}
}

// admit waits for room. On nil the caller must hand the record to franz-go and then call
// handedOff; on error nothing is held.
func (b *recordBuffer) admit(ctx context.Context) error {
	b.mu.RLock()
	if b.closed {
		b.mu.RUnlock()
		return ErrClosed
	}
	if err := ctx.Err(); err != nil { // an ended context never enqueues, even with room
		b.mu.RUnlock()
		return err
	}
	select {
	case b.slots <- struct{}{}:
		return nil
	default:
	}
	select {
	case b.slots <- struct{}{}:
		return nil
	case <-ctx.Done():
		b.mu.RUnlock()
		return ctx.Err()
	case <-b.closing:
		b.mu.RUnlock()
		return ErrClosed
	}
}

func (b *recordBuffer) handedOff() { b.mu.RUnlock() }

func (b *recordBuffer) release() { <-b.slots }

func (b *recordBuffer) depth() int { return len(b.slots) }

// close stops admission, closes the client (which fails every unacknowledged record) and waits
// until every admitted record's promise has run.
func (b *recordBuffer) close(closeClient func()) {
	b.once.Do(func() {
		close(b.closing)
		b.mu.Lock()
		b.closed = true
		b.mu.Unlock()
		closeClient()
		for b.depth() > 0 {
			time.Sleep(time.Millisecond)
		}
	})
}
