package sdklane

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/qim-dev/qim/contract"
)

func cmid(n uint64) contract.ClientMessageID { return contract.ClientMessageID{Hi: 1, Lo: n} }
func mid(n uint64) contract.MessageID        { return contract.MessageID{Hi: 2, Lo: n} }

// cleanFlow records n sends, each committed and received once; edit then breaks it.
func cleanFlow(n uint64, edit func(f *flowLog)) *flowLog {
	f := newFlowLog()
	for i := range n {
		f.recordReceived(i, mid(i)) // a receipt may precede the Send's return: order is free
		f.recordCommitted(cmid(i))
		f.recordSend(cmid(i), i, nil)
	}
	if edit != nil {
		edit(f)
	}
	return f
}

func TestVerifyFlagsEveryDeviation(t *testing.T) {
	tests := []struct {
		name string
		edit func(f *flowLog)
		want flowCounts
		ok   bool
	}{
		{"clean", nil, flowCounts{Sent: 5, Committed: 5, Received: 5}, true},
		{"missing ordinal", func(f *flowLog) { delete(f.received, 3) },
			flowCounts{Sent: 5, Committed: 5, Received: 4, Missing: 1, FirstMissing: []uint64{3}}, false},
		{"same message_id surfaced twice", func(f *flowLog) { f.recordReceived(2, mid(2)) },
			flowCounts{Sent: 5, Committed: 5, Received: 5, Repeated: 1, FirstRepeated: []uint64{2}}, false},
		{"ordinal surfaced under a second message_id", func(f *flowLog) { f.recordReceived(4, mid(99)) },
			flowCounts{Sent: 5, Committed: 5, Received: 5, Repeated: 1, DoubleIDs: 1, FirstRepeated: []uint64{4}}, false},
		{"failed send", func(f *flowLog) {
			delete(f.committed, cmid(1))
			delete(f.received, 1)
			f.recordFailed(cmid(1), contract.ErrorCode(3))
		}, flowCounts{Sent: 5, Committed: 4, Failed: 1, Received: 4}, false},
		{"never committed", func(f *flowLog) { delete(f.committed, cmid(0)) },
			flowCounts{Sent: 5, Committed: 4, Pending: 1, Received: 5}, false},
		{"send refused by the SDK", func(f *flowLog) { f.recordSend(contract.ClientMessageID{}, 5, errors.New("closed")) },
			flowCounts{Sent: 5, Committed: 5, Failed: 1, Received: 5}, false},
		{"ordinal never sent", func(f *flowLog) { f.recordReceived(7, mid(7)) },
			flowCounts{Sent: 5, Committed: 5, Received: 5, Stray: 1}, false},
		{"foreign body from the peer", func(f *flowLog) { f.recordStray() },
			flowCounts{Sent: 5, Committed: 5, Received: 5, Stray: 1}, false},
		{"nothing sent", func(f *flowLog) { *f = *newFlowLog() }, flowCounts{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := cleanFlow(5, tt.edit).verify()
			if got.FirstMissing == nil {
				got.FirstMissing = []uint64{}
			}
			if tt.want.FirstMissing == nil {
				tt.want.FirstMissing = []uint64{}
			}
			if got.Sent != tt.want.Sent || got.Committed != tt.want.Committed || got.Failed != tt.want.Failed ||
				got.Pending != tt.want.Pending || got.Received != tt.want.Received || got.Missing != tt.want.Missing ||
				got.Repeated != tt.want.Repeated || got.DoubleIDs != tt.want.DoubleIDs || got.Stray != tt.want.Stray ||
				!slices.Equal(got.FirstMissing, tt.want.FirstMissing) || !slices.Equal(got.FirstRepeated, tt.want.FirstRepeated) {
				t.Errorf("verify = %+v, want %+v", got, tt.want)
			}
			if got.ok() != tt.ok {
				t.Errorf("ok = %v, want %v", got.ok(), tt.ok)
			}
		})
	}
}

// TestReportFailsOnMissingAndRepeated: one pair whose A→B direction lost ordinal 1 and
// surfaced ordinal 2 twice fails the lane with both counted and named in the detail.
func TestReportFailsOnMissingAndRepeated(t *testing.T) {
	ab := cleanFlow(4, func(f *flowLog) {
		delete(f.received, 1)
		f.recordReceived(2, mid(2))
	}).verify()
	ba := cleanFlow(4, nil).verify()
	rep := buildReport([]flowCounts{ab, ba}, reportInfo{clients: 2, verified: true, complete: false,
		waited: time.Second, dir: "/tmp/x"})
	if rep.Passed || rep.Sent != 8 || rep.Acked != 8 || rep.Received != 7 || rep.Missing != 1 || rep.Repeated != 1 {
		t.Fatalf("report %+v", rep)
	}
	for _, want := range []string{"1 of 2 directions clean", "client 0→1", "1 missing (ordinals [1])", "1 repeated (ordinals [2]", "/tmp/x"} {
		if !strings.Contains(rep.Detail, want) {
			t.Errorf("detail %q lacks %q", rep.Detail, want)
		}
	}
	clean := buildReport([]flowCounts{ba, ba}, reportInfo{clients: 2, verified: true, complete: true})
	if !clean.Passed {
		t.Errorf("clean lane failed: %s", clean.Detail)
	}
	interrupted := buildReport([]flowCounts{ba, ba}, reportInfo{clients: 2, verified: false})
	if interrupted.Passed {
		t.Errorf("an unverified lane passed: %s", interrupted.Detail)
	}
}

func TestBodyRoundTrip(t *testing.T) {
	in := body{run: 0xdeadbeef01, sentUs: 1_800_000_000_000_000, sender: 7, ordinal: 1 << 40}
	out, ok := parseBody(in.encode())
	if !ok || out != in {
		t.Fatalf("round trip %+v → %+v (%v)", in, out, ok)
	}
	if _, ok := parseBody(make([]byte, bodyBytes-1)); ok {
		t.Fatal("short body parsed")
	}
}
