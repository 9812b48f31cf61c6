package loadgen

import "testing"

// TestFlowLedger drives one flow through event sequences and checks what the checker derives.
// Each row is an invariant of flow.go: missing = acked ∧ never pulled (in either order of ACK and
// delivery), a repeated message_id is a raw duplicate, a second message_id for one ordinal is a
// duplicate that survives dedup, a definite failure that shows up is failed-visible.
func TestFlowLedger(t *testing.T) {
	a, b := []byte("aaaaaaaaaaaaaaaa"), []byte("bbbbbbbbbbbbbbbb")
	type ev struct {
		op    string // "ack", "fail", "unknown", "pull", "push"
		ord   uint64
		mid   []byte
		first bool // expected return of pull/push
	}
	for _, tc := range []struct {
		name string
		sent int
		evs  []ev
		want tally
	}{
		{"acked and delivered", 1, []ev{{"ack", 0, a, false}, {"pull", 0, a, true}},
			tally{sent: 1, acked: 1, delivered: 1}},
		{"delivered before the ACK is read", 1, []ev{{"pull", 0, a, true}, {"ack", 0, a, false}},
			tally{sent: 1, acked: 1, delivered: 1}},
		{"acked never delivered is missing", 2, []ev{{"ack", 0, a, false}, {"ack", 1, b, false}, {"pull", 1, b, true}},
			tally{sent: 2, acked: 2, delivered: 1, missing: 1}},
		{"same id twice is a raw duplicate", 1, []ev{{"ack", 0, a, false}, {"pull", 0, a, true}, {"pull", 0, a, false}},
			tally{sent: 1, acked: 1, delivered: 1, flowStats: flowStats{rawDuplicates: 1}}},
		{"another id for the same send survives dedup", 1, []ev{{"ack", 0, a, false}, {"pull", 0, a, true}, {"pull", 0, b, false}},
			tally{sent: 1, acked: 1, delivered: 1, flowStats: flowStats{dupAfterDedup: 1}}},
		{"delivered under another id than acked", 1, []ev{{"ack", 0, a, false}, {"pull", 0, b, true}},
			tally{sent: 1, acked: 1, delivered: 1, flowStats: flowStats{ackMismatch: 1}}},
		{"mismatch when the ACK comes second", 1, []ev{{"pull", 0, b, true}, {"ack", 0, a, false}},
			tally{sent: 1, acked: 1, delivered: 1, flowStats: flowStats{ackMismatch: 1}}},
		{"a definite failure that is visible", 1, []ev{{"fail", 0, nil, false}, {"pull", 0, a, true}},
			tally{sent: 1, failed: 1, delivered: 1, flowStats: flowStats{failedVisible: 1}}},
		{"unknown outcome delivered is fine", 1, []ev{{"unknown", 0, nil, false}, {"pull", 0, a, true}},
			tally{sent: 1, unknown: 1, delivered: 1}},
		{"late ACK after a timeout upgrades to acked and counts as missing", 1, []ev{{"unknown", 0, nil, false}, {"ack", 0, a, false}},
			tally{sent: 1, acked: 1, missing: 1}},
		{"an answer after ACK does not downgrade", 1, []ev{{"ack", 0, a, false}, {"unknown", 0, nil, false}, {"pull", 0, a, true}},
			tally{sent: 1, acked: 1, delivered: 1}},
		{"ordinal never sent is foreign", 1, []ev{{"pull", 5, a, false}, {"push", 7, nil, false}},
			tally{sent: 1, unknown: 1, flowStats: flowStats{foreign: 2}}},
		{"pushes: first counts, repeats are informational", 1, []ev{{"push", 0, nil, true}, {"push", 0, nil, false}, {"ack", 0, a, false}},
			tally{sent: 1, acked: 1, missing: 1, flowStats: flowStats{pushDuplicates: 1}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var f flow
			for range tc.sent {
				f.add()
			}
			for _, e := range tc.evs {
				switch e.op {
				case "ack":
					f.answer(e.ord, stateAcked, e.mid)
				case "fail":
					f.answer(e.ord, stateFailed, nil)
				case "unknown":
					f.answer(e.ord, stateUnknown, nil)
				case "pull":
					if got := f.pulled(e.ord, e.mid); got != e.first {
						t.Errorf("pull %d first = %v, want %v", e.ord, got, e.first)
					}
				case "push":
					if got := f.pushed(e.ord); got != e.first {
						t.Errorf("push %d first = %v, want %v", e.ord, got, e.first)
					}
				}
			}
			if got := f.tally(); got != tc.want {
				t.Errorf("tally\n got %+v\nwant %+v", got, tc.want)
			}
			if int64(f.missing()) != tc.want.missing {
				t.Errorf("missing() = %d, tally says %d", f.missing(), tc.want.missing)
			}
		})
	}
}

func TestBodyRoundTrip(t *testing.T) {
	b := make([]byte, 64)
	h := bodyHeader{run: 0xfeedface, sentUs: 1_700_000_000_123_456, sender: 41, ordinal: 1 << 40}
	putBody(b, h)
	got, err := parseBody(b)
	if err != nil || got != h {
		t.Fatalf("round trip: %+v, %v; want %+v", got, err, h)
	}
	if _, err := parseBody(b[:bodyHeaderBytes-1]); err == nil {
		t.Fatal("short body accepted")
	}
}
