package check

import (
	"errors"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/qim-dev/qim/chaos/history"
)

func TestResultCountsAndSummary(t *testing.T) {
	events := h(okSend(1, 0),
		ev(I, 10, m{ord: 2}), ev(F, 11, m{ord: 2}), // fail
		ev(I, 20, m{ord: 3}), ev(U, 21, m{ord: 3}), ev(D, 22, m{ord: 3, mid: 103, seq: 3}), // info, delivered
		ev(I, 30, m{ord: 4}), // invoked, never answered: info
		ev(I, 40, m{ord: 5}), ev(U, 41, m{ord: 5}), ev(O, 42, m{ord: 5, mid: 105, seq: 5}), ev(D, 43, m{ord: 5, mid: 105, seq: 5}))
	res := mustCheck(t, events, Options{})
	got := [...]int{res.Invoked, res.Acked, res.Failed, res.Unknown, res.Delivered}
	if want := [...]int{5, 2, 1, 2, 2}; got != want {
		t.Fatalf("invoked, acked, failed, unknown, delivered = %v, want %v", got, want)
	}
	const want = "PASS ok 2, fail 1, info 2 (1 delivered) — LOST 0 DUPLICATE 0 REUSED 0 ORDER 0 GAP 0 STALLED 0 FAILED_VISIBLE 0 PHANTOM 0 UNRESOLVED 0"
	if s := res.Summary(); s != want {
		t.Fatalf("summary\n got %q\nwant %q", s, want)
	}
}

func TestExamplesAreBounded(t *testing.T) {
	var events []history.Event
	for ord := uint64(1); ord <= 9; ord++ {
		events = append(events, ev(I, int64(ord), m{ord: ord}), ev(O, int64(ord)+1, m{ord: ord, mid: 100 + ord, seq: ord}))
	}
	res := mustCheck(t, events, Options{Examples: 3})
	ex := res.Examples[Lost]
	if res.Counts[Lost] != 9 || len(ex) != 3 || ex[0].Key.Ordinal != 1 || ex[2].Key.Ordinal != 3 {
		t.Fatalf("lost %d, examples %v", res.Counts[Lost], ex)
	}
}

func TestRecoveryAndDrain(t *testing.T) {
	at := func(ord uint64, inv, ok, del int64) []history.Event {
		x := m{ord: ord, mid: 100 + ord, seq: ord}
		out := []history.Event{ev(I, inv, m{ord: ord}), ev(O, ok, x)}
		if del > 0 {
			out = append(out, ev(D, del, x))
		}
		return out
	}
	fault := Options{FaultUs: sec(1), HealUs: sec(3)}
	tests := []struct {
		name            string
		opt             Options
		events          []history.Event
		recovery, drain float64
	}{
		{name: "no fault", events: h(at(1, 500, 510, 520)), recovery: -1, drain: -1},
		{name: "fault: backlog in flight and accepted during it", opt: fault,
			events: h(at(1, 500, 510, 520), // before the fault: neither
				at(2, 900, 950, 2000),    // in flight at the fault: drain
				at(3, 1500, 2500, 3500),  // accepted during the fault: recovery and drain
				at(4, 1200, 3200, 3300)), // acked after the heal: neither
			recovery: 1500, drain: 2500},
		{name: "fault: backlog never delivered", opt: fault,
			events: h(at(1, 1500, 2500, 0)), recovery: 1500, drain: -1},
		{name: "fault: nothing acked after it", opt: fault,
			events: h(at(1, 500, 510, 520), ev(I, 1500, m{ord: 2})), recovery: -1, drain: -1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := mustCheck(t, tc.events, tc.opt)
			if res.RecoveryAckMs != tc.recovery || res.DrainMs != tc.drain {
				t.Fatalf("recovery %v drain %v, want %v %v", res.RecoveryAckMs, res.DrainMs, tc.recovery, tc.drain)
			}
		})
	}
}

func TestOptionsValidate(t *testing.T) {
	tests := []struct {
		name string
		opt  Options
		ok   bool
	}{
		{"zero: no fault, defaults", Options{}, true},
		{"fault and heal", Options{FaultUs: 10, HealUs: 20}, true},
		{"instant fault", Options{FaultUs: 10, HealUs: 10}, true},
		{"fault never healed", Options{FaultUs: 10}, false},
		{"heal without fault", Options{HealUs: 10}, false},
		{"heal before fault", Options{FaultUs: 20, HealUs: 10}, false},
		{"negative stall", Options{StallAfter: -time.Second}, false},
		{"negative examples", Options{Examples: -1}, false},
		{"negative end", Options{EndUs: -1}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := tc.opt
			err := o.Validate()
			if (err == nil) != tc.ok || (err != nil && !errors.Is(err, ErrOptions)) {
				t.Fatalf("Validate() = %v, want ok %v", err, tc.ok)
			}
			if tc.ok && (o.StallAfter == 0 || o.Examples == 0) {
				t.Fatalf("defaults not filled: %+v", o)
			}
			if _, err := Check(nil, tc.opt); (err == nil) != tc.ok {
				t.Fatalf("Check accepted options Validate rejects, or the reverse: %v", err)
			}
		})
	}
}

// TestCheckTakesEventsInAnyOrder: the lanes record from many goroutines, so the input order
// must not matter, and the caller's slice must not be reordered.
func TestCheckTakesEventsInAnyOrder(t *testing.T) {
	events := synthetic(3, 10)
	events = append(events, ev(I, 1, m{ord: 99}), ev(O, 2, m{ord: 99, mid: 99, seq: 99})) // one LOST
	want := mustCheck(t, events, Options{})
	shuffled := slices.Clone(events)
	rand.New(rand.NewPCG(1, 2)).Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
	before := slices.Clone(shuffled)
	got := mustCheck(t, shuffled, Options{})
	if !slices.Equal(shuffled, before) {
		t.Fatal("Check reordered the caller's events")
	}
	if got.Summary() != want.Summary() || got.Counts[Lost] != 1 {
		t.Fatalf("shuffled: %s\n   sorted: %s", got.Summary(), want.Summary())
	}
}
