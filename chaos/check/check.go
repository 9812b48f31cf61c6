package check

import (
	"errors"
	"fmt"
	"time"

	"github.com/qim-dev/qim/chaos/history"
)

// Defaults of Options.
const (
	DefaultStallAfter = 10 * time.Second
	DefaultExamples   = 5
)

// ErrOptions is wrapped by every Options.Validate error.
var ErrOptions = errors.New("check: invalid options")

// Options say what the cell did to the system and how patient the checker is.
type Options struct {
	// FaultUs and HealUs are when the fault was injected and healed (Unix µs, the load
	// generator's clock). Both 0: a run without a fault. A fault that never healed has no heal
	// to measure recovery from, so HealUs 0 with FaultUs set is an error, as is HealUs < FaultUs;
	// HealUs == FaultUs is an instant fault (a SIGKILL the supervisor undoes at once).
	FaultUs, HealUs int64
	// StallAfter is how long after the heal a mailbox may hold acked messages without any
	// delivery, or a conversation may invoke sends without any answer, before it is STALLED.
	// Default 10 s: longer than a reconnect with backoff and a pull round trip, shorter than
	// the settle wait, so a stall shows up before observation ends.
	StallAfter time.Duration
	// EndUs is the end of observation (after the settle wait). Default 0: the time of the last
	// event. An EndUs before the last event is raised to it: the events prove observation
	// lasted that long.
	EndUs int64
	// Examples is how many findings of each verdict Result.Examples keeps. Default 5.
	Examples int
}

// Validate rejects contradictory values and fills the defaults.
func (o *Options) Validate() error {
	switch {
	case o.FaultUs < 0 || o.HealUs < 0 || o.EndUs < 0:
		return fmt.Errorf("%w: negative time (fault %d, heal %d, end %d)", ErrOptions, o.FaultUs, o.HealUs, o.EndUs)
	case (o.FaultUs == 0) != (o.HealUs == 0):
		return fmt.Errorf("%w: fault %d and heal %d must both be set or both be 0", ErrOptions, o.FaultUs, o.HealUs)
	case o.HealUs < o.FaultUs:
		return fmt.Errorf("%w: heal %d before fault %d", ErrOptions, o.HealUs, o.FaultUs)
	case o.StallAfter < 0 || o.Examples < 0:
		return fmt.Errorf("%w: negative stall_after %s or examples %d", ErrOptions, o.StallAfter, o.Examples)
	}
	if o.StallAfter == 0 {
		o.StallAfter = DefaultStallAfter
	}
	if o.Examples == 0 {
		o.Examples = DefaultExamples
	}
	return nil
}

// Check judges one history. The events may come in any order (the lanes record from many
// goroutines); Check sorts a copy by AtUs, stably, and leaves events untouched.
func Check(events []history.Event, opt Options) (*Result, error) {
	if err := opt.Validate(); err != nil {
		return nil, err
	}
	l := newLedger(events, opt)
	rep := newReport(opt.Examples)
	checkOutcomes(l, rep)
	checkDelivery(l, rep)
	checkDuplicates(l, rep)
	checkReuse(l, rep)
	checkOrder(l, rep)
	checkGaps(l, rep)
	checkPhantoms(l, rep)
	checkStalls(l, rep)
	rep.res.RecoveryAckMs = recoveryAckMs(l)
	rep.res.DrainMs = drainMs(l)
	return rep.finish(), nil
}

// ms converts a span in microseconds to milliseconds.
func ms(us int64) float64 { return float64(us) / 1000 }
