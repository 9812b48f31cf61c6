package backoff

import (
	"context"
	"sync/atomic"
	"time"
)

// Retrier runs an operation until it succeeds, waiting a Backoff between attempts, and keeps the
// count of consecutive failures and the last error for a readiness probe: the batch loops of the
// fanout and the archiver retry a batch forever and must never skip it, and /healthz turns red
// once they have failed long enough.
//
// Do and Failed belong to one owner goroutine; Failing may be read from any goroutine.
type Retrier struct {
	delay    *Backoff
	failures atomic.Int64
	lastErr  atomic.Pointer[string]
}

// NewRetrier waits from minDelay doubling to maxDelay (see New for the bounds).
func NewRetrier(minDelay, maxDelay time.Duration) *Retrier {
	return &Retrier{delay: New(minDelay, maxDelay)}
}

// Do runs op until it returns nil (true) or ctx ends (false), calling onFail after each failed
// attempt that is retried. The delay starts again at its minimum for every Do; a success clears
// the failure count.
func (r *Retrier) Do(ctx context.Context, op func() error, onFail func(attempt int, err error)) bool {
	r.delay.Reset()
	for attempt := 1; ; attempt++ {
		err := op()
		if err == nil {
			r.failures.Store(0)
			return true
		}
		if ctx.Err() != nil {
			return false
		}
		r.Failed(err)
		onFail(attempt, err)
		if !r.delay.Wait(ctx) {
			return false
		}
	}
}

// Failed records a failed attempt made outside Do.
func (r *Retrier) Failed(err error) {
	msg := err.Error()
	r.lastErr.Store(&msg)
	r.failures.Add(1)
}

// Failing returns the consecutive failed attempts since the last success and the last error.
func (r *Retrier) Failing() (n int64, last string) {
	if p := r.lastErr.Load(); p != nil {
		last = *p
	}
	return r.failures.Load(), last
}
