package check

import (
	"maps"
	"testing"

	"github.com/qim-dev/qim/chaos/history"
)

// TestCheckVerdicts has, for every verdict, a history that produces exactly that verdict and
// no other, and the histories that must pass.
func TestCheckVerdicts(t *testing.T) {
	sdk := func(x m) m { x.lane = history.SDK; return x }
	app := func(x m) m { x.lane, x.app = history.SDK, true; return x }
	heal20 := Options{FaultUs: 500, HealUs: sec(20)}
	tests := []struct {
		name   string
		opt    Options
		events []history.Event
		want   map[Verdict]int // failure verdicts; every other one must be 0
		info   map[Verdict]int // info verdicts, when the case is about them
		pass   bool
	}{
		{name: "clean history passes", events: h(okSend(1, 0), okSend(2, 10)), pass: true},
		{name: "raw duplicate pull passes (at-least-once)",
			events: h(okSend(1, 0), ev(D, 5, m{ord: 1, mid: 101, seq: 1})), pass: true},
		{name: "info send delivered once passes",
			events: h(okSend(1, 0), ev(I, 10, m{ord: 2}), ev(U, 20, m{ord: 2}), ev(D, 21, m{ord: 2, mid: 102, seq: 2})),
			info:   map[Verdict]int{UnknownDelivered: 1, UnknownAbsent: 0}, pass: true},
		{name: "info send never delivered passes",
			events: h(okSend(1, 0), ev(I, 10, m{ord: 2}), ev(U, 20, m{ord: 2})),
			info:   map[Verdict]int{UnknownDelivered: 0, UnknownAbsent: 1}, pass: true},
		{name: "late ok after info is ok",
			events: h(ev(I, 0, m{ord: 1}), ev(U, 5, m{ord: 1}), ev(O, 6, m{ord: 1, mid: 101, seq: 1}), ev(D, 7, m{ord: 1, mid: 101, seq: 1})),
			info:   map[Verdict]int{UnknownDelivered: 0, UnknownAbsent: 0}, pass: true},
		{name: "a delivery before its ack is not pending",
			events: h(ev(I, 0, m{ord: 1}), ev(D, 1, m{ord: 1, mid: 101, seq: 1}), ev(O, 2, m{ord: 1, mid: 101, seq: 1}), okSend(2, 20000)),
			pass:   true},
		{name: "stall before the heal is the fault, not a finding", opt: heal20,
			events: h(ev(I, 0, m{ord: 1}), ev(O, 1, m{ord: 1, mid: 101, seq: 1}), ev(D, 19000, m{ord: 1, mid: 101, seq: 1})),
			pass:   true},
		{name: "an SDK send the SDK gave up on (Info) is resolved",
			events: h(okSend(1, 0), ev(I, 10, sdk(m{ord: 2})), ev(U, 20, sdk(m{ord: 2}))),
			info:   map[Verdict]int{UnknownDelivered: 0, UnknownAbsent: 1}, pass: true},
		{name: "a frame-lane send never answered is only unknown",
			events: h(okSend(1, 0), ev(I, 10, m{ord: 2})),
			info:   map[Verdict]int{UnknownDelivered: 0, UnknownAbsent: 1}, pass: true},
		{name: "no acked send is no evidence", events: h(ev(I, 0, m{ord: 1}), ev(U, 1, m{ord: 1}))},
		{name: "UNRESOLVED: an SDK send neither Committed nor Failed",
			events: h(okSend(1, 0), ev(I, 10, sdk(m{ord: 2}))),
			want:   map[Verdict]int{Unresolved: 1}, info: map[Verdict]int{UnknownDelivered: 0, UnknownAbsent: 1}},
		{name: "UNRESOLVED: an SDK send delivered but never resolved for its app",
			events: h(okSend(1, 0), ev(I, 10, sdk(m{ord: 2})), ev(D, 12, sdk(m{ord: 2, mid: 102, seq: 2}))),
			want:   map[Verdict]int{Unresolved: 1}, info: map[Verdict]int{UnknownDelivered: 1, UnknownAbsent: 0}},
		{name: "empty history is no evidence"},

		{name: "LOST: acked, never delivered",
			events: h(okSend(1, 0), ev(I, 10, m{ord: 2}), ev(O, 11, m{ord: 2, mid: 102, seq: 2})),
			want:   map[Verdict]int{Lost: 1}},
		{name: "LOST: a push is not a delivery",
			events: h(ev(I, 0, m{ord: 1}), ev(O, 1, m{ord: 1, mid: 101, seq: 1}), ev(P, 2, m{ord: 1, mid: 101, seq: 1})),
			want:   map[Verdict]int{Lost: 1}},
		{name: "LOST: acked, not in durable history",
			events: h(okSend(1, 0), okSend(2, 10), ev(S, 100, m{ord: 1, mid: 101, seq: 1})),
			want:   map[Verdict]int{Lost: 1}},
		{name: "DUPLICATE: info send delivered under two message ids",
			events: h(okSend(1, 0), ev(I, 10, m{ord: 2}), ev(U, 20, m{ord: 2}),
				ev(D, 21, m{ord: 2, mid: 102, seq: 2}), ev(D, 22, m{ord: 2, mid: 103, seq: 3})),
			want: map[Verdict]int{Duplicate: 1}, info: map[Verdict]int{UnknownDelivered: 1, UnknownAbsent: 0}},
		{name: "DUPLICATE: the application got one message id twice",
			events: h(ev(I, 0, sdk(m{ord: 1})), ev(O, 1, sdk(m{ord: 1, mid: 101, seq: 1})),
				ev(D, 2, app(m{ord: 1, mid: 101, seq: 1})), ev(D, 3, app(m{ord: 1, mid: 101, seq: 1}))),
			want: map[Verdict]int{Duplicate: 1}},
		{name: "REUSED: the ack named one message, the recipient got another",
			events: h(ev(I, 0, m{ord: 1}), ev(O, 1, m{ord: 1, mid: 101, seq: 1}), ev(D, 2, m{ord: 1, mid: 102, seq: 2})),
			want:   map[Verdict]int{Reused: 1}},
		{name: "REUSED: one seq carries two message ids",
			events: h(okSend(1, 0), ev(I, 0, m{ord: 2}), ev(O, 1, m{ord: 2, mid: 102, seq: 1}), ev(D, 2, m{ord: 2, mid: 102, seq: 1})),
			want:   map[Verdict]int{Reused: 1}},
		{name: "REUSED: one message id at two seqs",
			events: h(ev(I, 0, m{ord: 1}), ev(O, 1, m{ord: 1, mid: 101, seq: 1}), ev(D, 2, m{ord: 1, mid: 101, seq: 2})),
			want:   map[Verdict]int{Reused: 1}},
		{name: "REUSED: two acks for one send name two messages",
			events: h(ev(I, 0, m{ord: 1}), ev(O, 1, m{ord: 1, mid: 101, seq: 1}), ev(O, 2, m{ord: 1, mid: 102, seq: 2}), ev(D, 3, m{ord: 1, mid: 101, seq: 1})),
			want:   map[Verdict]int{Reused: 1}},
		{name: "REUSED: ok and fail for one send, never visible",
			events: h(ev(I, 0, m{ord: 1}), ev(O, 1, m{ord: 1, mid: 101, seq: 1}), ev(F, 2, m{ord: 1})),
			want:   map[Verdict]int{Reused: 1}},
		{name: "FAILED_VISIBLE: a failed send delivered",
			events: h(ev(I, 0, m{ord: 1}), ev(F, 1, m{ord: 1}), ev(D, 2, m{ord: 1, mid: 101, seq: 1})),
			want:   map[Verdict]int{FailedVisible: 1}},
		{name: "FAILED_VISIBLE: a failed send in durable history",
			events: h(ev(I, 0, m{ord: 1}), ev(F, 1, m{ord: 1}), ev(S, 9, m{ord: 1, mid: 101, seq: 1})),
			want:   map[Verdict]int{FailedVisible: 1}},
		{name: "FAILED_VISIBLE: ok and fail for one send, delivered",
			events: h(ev(I, 0, m{ord: 1}), ev(O, 1, m{ord: 1, mid: 101, seq: 1}), ev(F, 2, m{ord: 1}), ev(D, 3, m{ord: 1, mid: 101, seq: 1})),
			want:   map[Verdict]int{FailedVisible: 1}},
		{name: "ORDER: invoked after an ack, got a lower seq",
			events: h(ev(I, 0, m{ord: 1}), ev(O, 1, m{ord: 1, mid: 101, seq: 5}), ev(D, 2, m{ord: 1, mid: 101, seq: 5}),
				ev(I, 10, m{ord: 2}), ev(O, 11, m{ord: 2, mid: 102, seq: 3}), ev(D, 12, m{ord: 2, mid: 102, seq: 3})),
			want: map[Verdict]int{Order: 1}},
		{name: "ORDER: the mailbox places a message after one sent only once it was acknowledged",
			events: h(ev(I, 0, m{ord: 1}), ev(O, 1, m{ord: 1, mid: 101, seq: 1}), ev(I, 2, m{ord: 2}), ev(O, 3, m{ord: 2, mid: 102, seq: 2}),
				ev(D, 4, m{ord: 2, mid: 102, seq: 2, mseq: 10}), ev(D, 5, m{ord: 1, mid: 101, seq: 1, mseq: 20})),
			want: map[Verdict]int{Order: 1}},
		{name: "LATE_COMMIT: a seq placed after a higher one, no real-time order broken, is info",
			events: h(ev(I, 0, m{ord: 1}), ev(I, 0, m{ord: 2}), ev(O, 1, m{ord: 1, mid: 101, seq: 1}), ev(O, 1, m{ord: 2, mid: 102, seq: 2}),
				ev(D, 2, m{ord: 2, mid: 102, seq: 2, mseq: 10}), ev(D, 3, m{ord: 1, mid: 101, seq: 1, mseq: 20})),
			info: map[Verdict]int{LateCommit: 1}, pass: true},
		{name: "ORDER: two messages of one conversation at one mailbox_seq",
			events: h(ev(I, 0, m{ord: 1}), ev(I, 0, m{ord: 2}), ev(O, 1, m{ord: 1, mid: 101, seq: 1}), ev(O, 1, m{ord: 2, mid: 102, seq: 2}),
				ev(D, 2, m{ord: 1, mid: 101, seq: 1, mseq: 10}), ev(D, 3, m{ord: 2, mid: 102, seq: 2, mseq: 10})),
			want: map[Verdict]int{Order: 1}},
		{name: "GAP: the sender's own copy never delivered",
			events: h(okSend(1, 0), okSend(2, 10), ev(D, 3, m{ord: 1, to: 1, mid: 101, seq: 1}),
				ev(S, 100, m{ord: 1, mid: 101, seq: 1}), ev(S, 100, m{ord: 2, mid: 102, seq: 2})),
			want: map[Verdict]int{Gap: 1}},
		{name: "GAP: a committed info send nobody received",
			events: h(ev(I, 0, sdk(m{ord: 1})), ev(U, 1, sdk(m{ord: 1})), ev(S, 100, sdk(m{ord: 1, mid: 101, seq: 1}))),
			want:   map[Verdict]int{Gap: 1}, info: map[Verdict]int{UnknownDelivered: 0, UnknownAbsent: 1}},
		{name: "PHANTOM: in durable history, never invoked",
			events: h(okSend(1, 0), ev(S, 100, m{ord: 1, mid: 101, seq: 1}), ev(S, 100, m{ord: 7, mid: 107, seq: 7})),
			want:   map[Verdict]int{Phantom: 1}},
		{name: "PHANTOM: delivered, never invoked",
			events: h(okSend(1, 0), ev(D, 5, m{ord: 7, mid: 107, seq: 7})),
			want:   map[Verdict]int{Phantom: 1}},
		{name: "STALLED: a mailbox held an acked message 15 s",
			events: h(ev(I, 0, m{ord: 1}), ev(O, 1, m{ord: 1, mid: 101, seq: 1}), ev(D, 15001, m{ord: 1, mid: 101, seq: 1})),
			want:   map[Verdict]int{Stalled: 1}},
		{name: "STALLED: after the heal", opt: heal20,
			events: h(ev(I, 0, m{ord: 1}), ev(O, 1, m{ord: 1, mid: 101, seq: 1}), ev(D, 35000, m{ord: 1, mid: 101, seq: 1})),
			want:   map[Verdict]int{Stalled: 1}},
		{name: "STALLED: the writer answered nothing for 11 s",
			events: h(ev(I, 0, m{ord: 1}), ev(I, 5000, m{ord: 2}), ev(I, 11000, m{ord: 3}),
				ev(O, 11001, m{ord: 1, mid: 101, seq: 1}), ev(O, 11001, m{ord: 2, mid: 102, seq: 2}), ev(O, 11001, m{ord: 3, mid: 103, seq: 3}),
				ev(D, 11002, m{ord: 1, mid: 101, seq: 1}), ev(D, 11002, m{ord: 2, mid: 102, seq: 2}), ev(D, 11002, m{ord: 3, mid: 103, seq: 3})),
			want: map[Verdict]int{Stalled: 1}},
		{name: "LOST and STALLED: observation went on 20 s past an undelivered ack", opt: Options{EndUs: sec(20)},
			events: h(ev(I, 0, m{ord: 1}), ev(O, 1, m{ord: 1, mid: 101, seq: 1})),
			want:   map[Verdict]int{Lost: 1, Stalled: 1}},
		{name: "STALLED: a send still unanswered 20 s later", opt: Options{EndUs: sec(20)},
			events: h(ev(I, 0, m{ord: 1})),
			want:   map[Verdict]int{Stalled: 1}, info: map[Verdict]int{UnknownAbsent: 1}},
		{name: "a pair that stopped after an info send is not stalled", opt: Options{EndUs: sec(20)},
			events: h(okSend(1, 0), ev(I, 10, m{ord: 2}), ev(U, 5010, m{ord: 2})), pass: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := mustCheck(t, tc.events, tc.opt)
			want := tc.want
			if want == nil {
				want = map[Verdict]int{}
			}
			if got := failures(res); !maps.Equal(got, want) {
				t.Errorf("verdicts %v, want %v; examples %v", got, want, res.Examples)
			}
			for v, n := range tc.info {
				if res.Counts[v] != n {
					t.Errorf("%s = %d, want %d", v, res.Counts[v], n)
				}
			}
			if res.Passed != tc.pass {
				t.Errorf("passed %v, want %v: %s", res.Passed, tc.pass, res.Summary())
			}
		})
	}
}
