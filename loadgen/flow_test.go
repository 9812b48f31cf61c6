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
			for i, e := range tc.evs {
				at := int64(i+1) * 1000
				switch e.op {
				case "ack":
					f.ackedAt(e.ord, at)
					f.answer(e.ord, stateAcked, e.mid)
				case "fail":
					f.answer(e.ord, stateFailed, nil)
				case "unknown":
					f.answer(e.ord, stateUnknown, nil)
				case "pull":
					if got, _ := f.pulled(e.ord, e.mid, at); got != e.first {
						t.Errorf("pull %d first = %v, want %v", e.ord, got, e.first)
					}
				case "push":
					if got, _ := f.pushed(e.ord, at); got != e.first {
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

// The hop times behind the ack_push and push_pull segments: measured from the first ACK and the
// first push only, and -1 (no sample) when the earlier event had not happened yet.
func TestFlowHopTimes(t *testing.T) {
	var f flow
	f.add()
	f.add()
	a := []byte("aaaaaaaaaaaaaaaa")
	f.ackedAt(0, 1000)
	f.ackedAt(0, 9000) // a late second answer does not move the stamp
	if first, d := f.pushed(0, 1500); !first || d != 500 {
		t.Fatalf("push after ACK: first %v, since ACK %d; want true, 500", first, d)
	}
	if first, d := f.pushed(0, 1700); first || d != -1 {
		t.Fatalf("repeated push: first %v, since ACK %d; want false, -1", first, d)
	}
	if first, d := f.pulled(0, a, 2300); !first || d != 800 {
		t.Fatalf("pull after push: first %v, since push %d; want true, 800 (from the first push)", first, d)
	}
	if first, d := f.pulled(0, a, 2400); first || d != -1 {
		t.Fatalf("repeated pull: first %v, since push %d; want false, -1", first, d)
	}
	if first, d := f.pushed(1, 1000); !first || d != -1 {
		t.Fatalf("push before the ACK: first %v, since ACK %d; want true, -1", first, d)
	}
	f.ackedAt(1, 1200)
	var g flow
	g.add()
	if first, d := g.pulled(0, a, 500); !first || d != -1 {
		t.Fatalf("pull without a push: first %v, since push %d; want true, -1", first, d)
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
