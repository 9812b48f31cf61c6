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

// loginRetryMax caps the delay after a login the gateway refused with a retryable code
// (UNAVAILABLE while its mailbox or session store does not answer), as sendRetryMax does for
// sends. A refused login is not a dead network: the gateway is up and will admit the client the
// moment its backends answer, so the delay after such a refusal is how long the user stays
// offline past the heal. With the 30 s network cap, a 13 s outage put the next login 13 s past
// the heal (chaos rolling-restart-broker-down, STALLED); 5 s costs one AUTH per client per 5 s
// during an outage.
const loginRetryMax = 5 * time.Second

// loginRetryMin is where the refused-login delay starts, unless ReconnectMin is smaller.
const loginRetryMin = 250 * time.Millisecond

// reconnect chooses the delay before the next connection attempt from how the last one ended.
//
// Invariants: the delay after a retryable AUTH refusal is at most loginRetryMax, or, when the
// gateway sent retry_after_ms, that hint plus at most a fifth of it as jitter; the delay after
// a connection that failed to open or broke grows to ReconnectMax; a refusal resets the network
// backoff (the gateway answered), and AUTH_OK resets both.
//
// Rejected: one backoff for both. A gateway that refuses logins for a minute would push every
// client to the 30 s step that exists for networks that do not answer at all.
type reconnect struct {
	net, refused backoff
}

func newReconnect(cfg *Config) reconnect {
	refusedMax := min(cfg.ReconnectMax, loginRetryMax)
	return reconnect{
		net:     backoff{min: cfg.ReconnectMin, max: cfg.ReconnectMax},
		refused: backoff{min: min(cfg.ReconnectMin, loginRetryMin, refusedMax), max: refusedMax},
	}
}

// next returns the delay after a connection that ended as end did.
func (r *reconnect) next(end serveEnd) time.Duration {
	if end.reachedOnline {
		r.net.reset()
		r.refused.reset()
	}
	if end.loginRefused {
		r.net.reset() // the gateway answered: the network works
		d := r.refused.next()
		if h := end.retryAfter; h > 0 {
			d = h + time.Duration(rand.Int64N(int64(h/5)+1))
		}
		return d
	}
	return max(r.net.next(), end.retryAfter)
}
