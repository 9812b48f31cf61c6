// Package backoff is the one retry delay of the services: capped exponential, doubling from Min
// to Max, reset after a success.
//
// No jitter: every retry loop here has a single owner per process (a fanout batch, a lease
// renewal, an accept loop, an admin call), so there is no herd to spread; a deterministic delay
// keeps the loops' tests exact.
package backoff

import (
	"context"
	"fmt"
	"time"
)

// Backoff yields Min, 2×Min, 4×Min, … capped at Max. One per retry loop; not safe for
// concurrent use.
type Backoff struct {
	minDelay, maxDelay time.Duration
	next               time.Duration
	timer              *time.Timer
}

// New returns a Backoff from minDelay to maxDelay. A non-positive minDelay or maxDelay below it is
// a programming error (configuration is validated before it gets here) and panics.
func New(minDelay, maxDelay time.Duration) *Backoff {
	if minDelay <= 0 || maxDelay < minDelay {
		panic(fmt.Sprintf("backoff: bad bounds [%v, %v]", minDelay, maxDelay))
	}
	return &Backoff{minDelay: minDelay, maxDelay: maxDelay, next: minDelay}
}

// Next returns the delay before the next attempt and doubles the one after it.
func (b *Backoff) Next() time.Duration {
	d := b.next
	b.next = min(2*b.next, b.maxDelay)
	return d
}

// Reset starts the sequence again at Min (call it after a success).
func (b *Backoff) Reset() { b.next = b.minDelay }

// Wait sleeps Next() and reports true, or reports false as soon as ctx ends.
func (b *Backoff) Wait(ctx context.Context) bool {
	d := b.Next()
	if b.timer == nil {
		b.timer = time.NewTimer(d)
	} else {
		b.timer.Reset(d)
	}
	select {
	case <-ctx.Done():
		b.timer.Stop()
		return false
	case <-b.timer.C:
		return true
	}
}
