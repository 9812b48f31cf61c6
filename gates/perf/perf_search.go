package perf

import (
	"math"

	"github.com/qim-dev/qim/loadgen"
)

// Find-max's search (deterministic, no I/O; perf_findmax.go runs the steps it names).
const (
	// findMaxStart is the first step in 1:1 mode, msg/s: low enough to pass on any machine this
	// runs on (a ladder that started at 500 reported 0 on a 2-core Xeon guest where 250 passed).
	findMaxStart = 100
	// findMaxPrecision: the search ends once the lowest failing rate is within this ratio of
	// the highest passing one (1.1: the boundary to within 10 %).
	findMaxPrecision = 1.1
	// findMaxSteps bounds the steps of one search (a doubling climb from 100 to 12,800 msg/s is
	// 8 steps, the bisection from a factor-2 bracket to 10 % three more).
	findMaxSteps = 14
	// findMaxFloorShare: when even the first step fails, the search halves down to this share of
	// it before it reports no capacity.
	findMaxFloorShare = 1.0 / 8
)

// rateSearch finds the highest rate within the SLO: it starts at start and doubles until a step
// fails, then bisects (geometric mean, 3 significant digits) between the highest passing and
// the lowest failing rate until they are within findMaxPrecision. When the first step already
// fails it halves toward start × findMaxFloorShare.
//
// Invariants: a proposed rate is always strictly between the highest pass and the lowest fail
// (so no rate is run twice and the bracket shrinks at every bisection step); the search ends
// after findMaxSteps steps whatever the outcomes.
//
// Rejected: a fixed ladder. Its first rung decides which machines can report a capacity at all,
// and its spacing decides the precision, differently at every rung.
type rateSearch struct {
	start      float64
	pass, fail float64 // highest passing and lowest failing rate so far; 0: none
	steps      int
}

func newRateSearch(start float64) *rateSearch { return &rateSearch{start: start} }

// next is the rate of the next step, or false when the search is over.
func (s *rateSearch) next() (float64, bool) {
	if s.steps >= findMaxSteps {
		return 0, false
	}
	switch {
	case s.pass == 0 && s.fail == 0:
		return s.start, true
	case s.fail == 0:
		return sig3(s.pass * 2), true
	case s.pass == 0:
		r := sig3(s.fail / 2)
		return r, r >= s.start*findMaxFloorShare
	}
	if s.fail <= s.pass*findMaxPrecision {
		return 0, false
	}
	r := sig3(math.Sqrt(s.pass * s.fail))
	return r, r > s.pass && r < s.fail
}

// record notes a step's outcome.
func (s *rateSearch) record(rate float64, within bool) {
	s.steps++
	if within {
		s.pass = max(s.pass, rate)
	} else if s.fail == 0 || rate < s.fail {
		s.fail = rate
	}
}

// findMaxStartRate is the first step of the options' mode: in group mode the rate that offers
// the same mailbox entries as findMaxStart 1:1 messages (a 1:1 message makes two entries, the
// recipient's and the sender's own copy; a group message one per member).
func (o options) findMaxStartRate() float64 {
	if o.Mode == loadgen.ModeRoom { // one event is RoomSize deliveries: start near 10,000 of them a second
		return max(sig3(1e4/float64(max(o.RoomSize, 1))), 0.5)
	}
	if o.Mode == loadgen.ModeGroup {
		return sig3(findMaxStart * 2 / float64(max(o.GroupSize, 2)))
	}
	return findMaxStart
}
