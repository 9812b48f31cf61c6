package sdk

import (
	"math/rand/v2"
	"time"
)

// backoff is the reconnect delay: exponential from min to max, each delay drawn uniformly from
// [d/2, d] ("equal jitter") so that clients dropped together by one gateway restart do not come
// back in lockstep. Reset after a connection reached AUTH_OK.
type backoff struct {
	min, max, cur time.Duration
}

func (b *backoff) next() time.Duration {
	if b.cur == 0 {
		b.cur = b.min
	} else {
		b.cur = min(2*b.cur, b.max)
	}
	half := b.cur / 2
	return half + time.Duration(rand.Int64N(int64(half)+1))
}

func (b *backoff) reset() { b.cur = 0 }
