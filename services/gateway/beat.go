package gateway

import (
	"time"

	"github.com/qim-dev/qim/contract"
)

// beat is one connection's adaptive heartbeat (the seed's schedule: start at 60 s, at most 120 s
// in the foreground and 240 s in the background, told to the client in PONG). A phone's radio
// wakes for every PING, so the interval grows while the path proves it holds: after
// contract.HeartbeatGrowAfter PINGs in a row that each came a full interval after the one before
// — the NAT and the carrier kept the connection that long — the interval grows by half its start,
// up to the cap of the app state the last PING reported. Entering the foreground brings the
// interval down to its cap at once. The timeout keeps its configured ratio to the interval.
//
// The caps scale with the start (2× and 4×, within the contract's 120 s and 240 s), so a
// deployment with a short start keeps the seed's proportions. A connection that died at some
// interval starts again from the start on reconnect: the server keeps nothing per device, so a
// path whose NAT is shorter than the grown interval costs one reconnect per connection, bounded
// by the growth steps.
//
// Invariants: the interval never leaves [start, cap]; only PINGs count, read by the read loop,
// so beat needs no lock; it is a pure function of its inputs (tested without a clock).
//
// Rejected: the client choosing its own interval (a schedule fix would need an SDK release) and a
// per-device memory of the last interval that failed (state in Redis for every device, for a
// gain of one reconnect after a NAT change).
type beat struct {
	start, interval time.Duration
	ratio           float64 // timeout / interval, from the configuration
	last            time.Time
	streak          int
	adaptive        bool
}

func newBeat(start, timeout time.Duration, adaptive bool, now time.Time) beat {
	return beat{start: start, interval: start, ratio: float64(timeout) / float64(start), last: now, adaptive: adaptive}
}

// capFor is the longest interval for an app state.
func (b *beat) capFor(foreground bool) time.Duration {
	if foreground {
		return max(b.start, min(2*b.start, contract.HeartbeatForegroundMax))
	}
	return max(b.start, min(4*b.start, contract.HeartbeatBackgroundMax))
}

// ping takes one PING received at now from a client in the foreground or not, and returns the
// interval and timeout to tell it.
func (b *beat) ping(now time.Time, foreground bool) (interval, timeout time.Duration) {
	if b.adaptive {
		c := b.capFor(foreground)
		// A PING sooner than 90 % of the interval is a probe or an app switch: it proves nothing
		// about the path and does not break the streak either.
		if now.Sub(b.last) >= b.interval*9/10 {
			b.streak++
		}
		if b.streak >= contract.HeartbeatGrowAfter {
			b.interval, b.streak = b.interval+b.start/2, 0
		}
		b.interval = min(b.interval, c)
	}
	b.last = now
	return b.interval, b.timeout()
}

// timeout is the silence after which the connection is closed.
func (b *beat) timeout() time.Duration {
	return time.Duration(float64(b.interval) * b.ratio)
}
