package identity

import (
	"math"
	"strconv"
	"time"
)

// hlcTimeLimit is one past the largest time_ms the 48-bit field of contract.MessageID can hold;
// contract.NewMessageID enforces the same bound, this copy only lets Install reject a window
// that could never be packed instead of failing later on the hot path.
const hlcTimeLimit = 1 << 48

// Window is a persisted HLC window [Start, End) in Unix milliseconds, as claimed from Redis.
type Window struct {
	Start uint64 // first time_ms the window allows
	End   uint64 // exclusive; also the high-water mark stored in Redis after the claim
}

func (w Window) String() string {
	return "[" + strconv.FormatUint(w.Start, 10) + ", " + strconv.FormatUint(w.End, 10) + ")"
}

// Clock is the deterministic HLC core of an Issuer: no I/O, no clock reads, no locks, so every
// rule below is a table test (etcd raft's split of state machine and transport).
//
// Invariants: issued (time_ms, logical) pairs strictly increase across calls whatever nowMs
// does; every issued time_ms lies inside an installed window; installed windows never overlap
// and never go back. How: t = max(now, last, window start); the same t as last bumps the 32-bit
// logical (overflow moves t on by 1 ms); t past the window end switches to the next installed
// window or refuses with WindowExhaustedError. At most two windows are held (current and next);
// a window is only ever offered to Install after Redis persisted it.
//
// Rejected alternative: a process-local "last_ms" HLC with no persisted window. It is cheaper,
// but after a restart with the clock set back (or a fixed writer_id reused by a new process) it
// issues time_ms values the previous incarnation already used, and equal message_ids make
// clients drop a message as a duplicate.
//
// Clock is not safe for concurrent use; Issuer guards it with a mutex.
type Clock struct {
	cur, next   Window
	hasCur      bool
	hasNext     bool
	lastTime    uint64 // time_ms of the last issued pair; 0 before the first (windows start ≥ 1)
	lastLogical uint32
	renewBefore uint64 // ms
}

// NewClock returns a Clock with no window installed that asks for renewal renewBefore ahead of
// the end of its last installed window (contract.HLCRenewBefore in production).
func NewClock(renewBefore time.Duration) *Clock {
	return &Clock{renewBefore: uint64(max(renewBefore.Milliseconds(), 0))}
}

// Next returns the next HLC pair for the wall clock reading nowMs. It never returns a pair at or
// below a previous one and never one outside an installed window: when the windows are used up
// it returns *WindowExhaustedError (errors.Is ErrWindowExhausted) and changes nothing.
func (c *Clock) Next(nowMs int64) (timeMs uint64, logical uint32, err error) {
	if !c.hasCur {
		return 0, 0, ErrNoWindow
	}
	t := max(uint64(max(nowMs, 0)), c.lastTime, c.cur.Start)
	if t == c.lastTime {
		if c.lastLogical == math.MaxUint32 {
			t++ // 2^32 ids in one millisecond: borrow the next millisecond rather than wrap
		} else {
			logical = c.lastLogical + 1
		}
	}
	if t >= c.cur.End && c.hasNext {
		// lastTime < cur.End ≤ next.Start, so t moves strictly above lastTime and logical is 0.
		c.promote()
		t = max(t, c.cur.Start)
	}
	if t >= c.cur.End {
		return 0, 0, &WindowExhaustedError{WindowEnd: c.cur.End, HLCMs: t, NowMs: nowMs}
	}
	c.lastTime, c.lastLogical = t, logical
	return t, logical, nil
}

// Install adds a persisted window. The first window becomes current; later ones become the next
// window and must start at or above the end of the current one. An overlapping or backwards
// window, an empty one, one that does not fit the 48-bit time field, or a third window while a
// next one is pending is rejected with *WindowOrderError and leaves the Clock unchanged.
func (c *Clock) Install(w Window) error {
	switch {
	case w.Start == 0 || w.End <= w.Start || w.End > hlcTimeLimit:
		return &WindowOrderError{Offered: w, MinimumStart: c.Horizon(), Reason: "empty or outside the 48-bit time field"}
	case !c.hasCur: // nothing issued yet, so any window is above every issued pair
		c.cur, c.hasCur = w, true
		return nil
	case c.hasNext:
		return &WindowOrderError{Offered: w, MinimumStart: c.next.End, Reason: "a next window is already installed"}
	case w.Start < c.cur.End:
		return &WindowOrderError{Offered: w, MinimumStart: c.cur.End, Reason: "overlaps or precedes the current window"}
	}
	c.next, c.hasNext = w, true
	return nil
}

// Advance retires the current window once no future pair can fall into it (the HLC is at or
// past its end) and a next window is installed, so an idle writer still asks for renewal.
func (c *Clock) Advance(nowMs int64) {
	if c.hasNext && c.hlc(nowMs) >= c.cur.End {
		c.promote()
	}
}

// NeedsRenewal reports whether a new window should be claimed now: no window yet, or the HLC is
// within renewBefore of the current window's end and no next window is installed.
func (c *Clock) NeedsRenewal(nowMs int64) bool {
	if !c.hasCur {
		return true
	}
	return !c.hasNext && c.hlc(nowMs)+c.renewBefore >= c.cur.End
}

// Horizon is the exclusive end of the last installed window, 0 before the first one; a claim
// asks Redis for a window starting at or above it.
func (c *Clock) Horizon() uint64 {
	if c.hasNext {
		return c.next.End
	}
	if c.hasCur {
		return c.cur.End
	}
	return 0
}

// Remaining is how long ids can still be issued without a new window, measured from the HLC.
func (c *Clock) Remaining(nowMs int64) time.Duration {
	h, at := c.Horizon(), c.hlc(nowMs)
	if h <= at {
		return 0
	}
	return time.Duration(h-at) * time.Millisecond
}

// Last returns the last issued pair (0, 0 before the first).
func (c *Clock) Last() (timeMs uint64, logical uint32) { return c.lastTime, c.lastLogical }

// hlc is the HLC time a call at nowMs would start from, ignoring the window start.
func (c *Clock) hlc(nowMs int64) uint64 { return max(uint64(max(nowMs, 0)), c.lastTime) }

func (c *Clock) promote() {
	c.cur, c.next, c.hasNext = c.next, Window{}, false
}
