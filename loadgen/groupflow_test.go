package loadgen

import (
	"errors"
	"testing"
)

// TestGroupFlowLedger drives one sender's group ledger (3 members, the sender is member 1)
// through event sequences. Each row is an invariant of groupflow.go: lost = Σ acked (members −
// members that pulled), own copy included; a repeated id at one member is a raw duplicate,
// another id a duplicate that survives dedup; a member's delivery under another id than
// SEND_ACK's is a mismatch; a definite failure that shows up is failed-visible.
func TestGroupFlowLedger(t *testing.T) {
	a, b := []byte("aaaaaaaaaaaaaaaa"), []byte("bbbbbbbbbbbbbbbb")
	type ev struct {
		op     string // "ack", "fail", "unknown", "pull", "push"
		ord    uint64
		member int
		mid    []byte
		first  bool // expected return of pull/push
	}
	for _, tc := range []struct {
		name string
		sent int
		evs  []ev
		want tally
	}{
		{"every member pulled", 1, []ev{{"ack", 0, 0, a, false}, {"pull", 0, 0, a, true}, {"pull", 0, 1, a, true}, {"pull", 0, 2, a, true}},
			tally{sent: 1, acked: 1, delivered: 3, expected: 3}},
		{"pulled before the ACK", 1, []ev{{"pull", 0, 0, a, true}, {"pull", 0, 1, a, true}, {"ack", 0, 0, a, false}},
			tally{sent: 1, acked: 1, delivered: 2, missing: 1, expected: 3}},
		{"one member lost", 2, []ev{{"ack", 0, 0, a, false}, {"ack", 1, 0, b, false}, {"pull", 0, 0, a, true}, {"pull", 0, 1, a, true},
			{"pull", 1, 0, b, true}, {"pull", 1, 1, b, true}, {"pull", 1, 2, b, true}},
			tally{sent: 2, acked: 2, delivered: 5, missing: 1, expected: 6}},
		{"own copy lost", 1, []ev{{"ack", 0, 0, a, false}, {"pull", 0, 0, a, true}, {"pull", 0, 2, a, true}},
			tally{sent: 1, acked: 1, delivered: 2, missing: 1, expected: 3, lostOwn: 1}},
		{"same id twice at one member is raw", 1, []ev{{"ack", 0, 0, a, false}, {"pull", 0, 2, a, true}, {"pull", 0, 2, a, false}},
			tally{sent: 1, acked: 1, delivered: 1, missing: 2, expected: 3, lostOwn: 1, flowStats: flowStats{rawDuplicates: 1}}},
		{"another id at one member survives dedup", 1, []ev{{"ack", 0, 0, a, false}, {"pull", 0, 2, a, true}, {"pull", 0, 2, b, false}},
			tally{sent: 1, acked: 1, delivered: 1, missing: 2, expected: 3, lostOwn: 1, flowStats: flowStats{dupAfterDedup: 1}}},
		{"the same id at two members is no duplicate", 1, []ev{{"ack", 0, 0, a, false}, {"pull", 0, 0, a, true}, {"pull", 0, 2, a, true}},
			tally{sent: 1, acked: 1, delivered: 2, missing: 1, expected: 3, lostOwn: 1}},
		{"a member got another id than acked", 1, []ev{{"ack", 0, 0, a, false}, {"pull", 0, 0, b, true}},
			tally{sent: 1, acked: 1, delivered: 1, missing: 2, expected: 3, lostOwn: 1, flowStats: flowStats{ackMismatch: 1}}},
		{"members disagree before the ACK", 1, []ev{{"pull", 0, 0, a, true}, {"pull", 0, 2, b, true}, {"ack", 0, 0, a, false}},
			tally{sent: 1, acked: 1, delivered: 2, missing: 1, expected: 3, lostOwn: 1, flowStats: flowStats{ackMismatch: 1}}},
		{"a definite failure that is visible", 1, []ev{{"fail", 0, 0, nil, false}, {"pull", 0, 0, a, true}},
			tally{sent: 1, failed: 1, delivered: 1, flowStats: flowStats{failedVisible: 1}}},
		{"unknown outcome is expected nowhere", 1, []ev{{"unknown", 0, 0, nil, false}, {"pull", 0, 0, a, true}},
			tally{sent: 1, unknown: 1, delivered: 1}},
		{"foreign ordinal or member", 1, []ev{{"pull", 5, 0, a, false}, {"pull", 0, 3, a, false}, {"push", 0, -1, nil, false}},
			tally{sent: 1, unknown: 1, flowStats: flowStats{foreign: 3}}},
		{"pushes per member", 1, []ev{{"push", 0, 0, nil, true}, {"push", 0, 2, nil, true}, {"push", 0, 0, nil, false}},
			tally{sent: 1, unknown: 1, flowStats: flowStats{pushDuplicates: 1}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newGroupFlow(3, 1)
			for range tc.sent {
				f.add()
			}
			for i, e := range tc.evs {
				if err := applyGroupEvent(f, e.op, e.ord, e.member, e.mid, int64(i+1)*1000, e.first); err != nil {
					t.Error(err)
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

func applyGroupEvent(f *groupFlow, op string, ord uint64, member int, mid []byte, at int64, first bool) error {
	var got bool
	switch op {
	case "ack":
		f.ackedAt(ord, at)
		f.answer(ord, stateAcked, mid)
		return nil
	case "fail":
		f.answer(ord, stateFailed, nil)
		return nil
	case "unknown":
		f.answer(ord, stateUnknown, nil)
		return nil
	case "pull":
		got = f.pulled(ord, member, mid)
	case "push":
		got, _, _ = f.pushed(ord, member, at)
	}
	if got != first {
		return errors.New(op + ": first answer differs from the table")
	}
	return nil
}

// TestGroupFlowWideGroup: member bits beyond the first word (a 1,000-member group) are kept per
// member and per record.
func TestGroupFlowWideGroup(t *testing.T) {
	f := newGroupFlow(1000, 999)
	mid := []byte("aaaaaaaaaaaaaaaa")
	for range 3 {
		f.add()
	}
	f.answer(1, stateAcked, mid)
	for m := range 1000 {
		if m != 640 && !f.pulled(1, m, mid) {
			t.Fatalf("member %d: not a first pull", m)
		}
	}
	if f.pulled(1, 999, mid) || !f.pulled(2, 999, mid) {
		t.Fatal("bits leak between members or records")
	}
	if got := f.tally(); got.missing != 1 || got.lostOwn != 0 || got.expected != 1000 || got.delivered != 1000 {
		t.Fatalf("tally %+v", got)
	}
	if first, sinceAck, pulled := f.pushed(1, 640, 5); !first || sinceAck != -1 || pulled {
		t.Fatalf("push to the member that lost it: %v %d %v", first, sinceAck, pulled)
	}
}
