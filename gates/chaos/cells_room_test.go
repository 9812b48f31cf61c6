package chaos

import (
	"testing"
	"time"

	"github.com/qim-dev/qim/loadgen"
)

// judgeRooms passes only the documented rule: every member dropped UNAVAILABLE, every one
// rejoined in bound with replay_truncated, nothing read twice, every event after the rejoins
// delivered, publishes refused only UNAVAILABLE. Each way to break it fails its check.
func TestJudgeRooms(t *testing.T) {
	start := time.Unix(1000, 0)
	good := func() *loadgen.Report {
		return &loadgen.Report{StartedAt: start, FailuresByCode: map[string]int64{"UNAVAILABLE": 90},
			Counts: loadgen.Counts{Failed: 90},
			Room: &loadgen.RoomReport{RoomSize: 10, Rooms: 4, UnavailableDrops: 40, Rejoins: 40, RejoinsTruncated: 40,
				AllJoinedAtS: 14.2, ExpectedAfterRejoin: 3000, DeliveredAfterRejoin: 3000}}
	}
	fr := &faultRun{faultAt: start.Add(8 * time.Second), healAt: start.Add(13 * time.Second)}
	tests := []struct {
		name  string
		edit  func(*loadgen.Report)
		fails string // the one failing check; "" none
	}{
		{"the rule held", func(*loadgen.Report) {}, ""},
		{"a member never told", func(r *loadgen.Report) { r.Room.UnavailableDrops, r.Room.Rejoins, r.Room.RejoinsTruncated = 39, 39, 39 },
			"every member told UNAVAILABLE"},
		{"a member left out", func(r *loadgen.Report) { r.Room.Rejoins, r.Room.RejoinsTruncated, r.Room.LeftAtEnd = 39, 39, 1 },
			"every member rejoined"},
		{"rejoined too late", func(r *loadgen.Report) { r.Room.AllJoinedAtS = 29 }, "every member rejoined"},
		{"a silent gap", func(r *loadgen.Report) { r.Room.RejoinsTruncated = 38 }, "the gap is visible"},
		{"an event read twice", func(r *loadgen.Report) { r.Room.Backwards = 1 }, "room_seq never read twice or backwards"},
		{"a delivery lost after the rejoins", func(r *loadgen.Report) { r.Room.DeliveredAfterRejoin = 2999 },
			"after the rejoins every event reaches every member"},
		{"nothing published after the rejoins", func(r *loadgen.Report) { r.Room.ExpectedAfterRejoin, r.Room.DeliveredAfterRejoin = 0, 0 },
			"after the rejoins every event reaches every member"},
		{"another refusal", func(r *loadgen.Report) { r.FailuresByCode["RATE_LIMITED"] = 1 }, "publishes refused only as UNAVAILABLE"},
		{"an unanswered publish", func(r *loadgen.Report) { r.Counts.Timeouts = 1 }, "publishes refused only as UNAVAILABLE"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rep := good()
			tc.edit(rep)
			res := &CellResult{}
			judgeRooms(res, rep, fr)
			var failed []string
			for _, c := range res.Checks {
				if !c.Passed {
					failed = append(failed, c.Name)
				}
			}
			if (tc.fails == "" && len(failed) > 0) || (tc.fails != "" && (len(failed) != 1 || failed[0] != tc.fails)) {
				t.Fatalf("failed %q, want %q", failed, tc.fails)
			}
		})
	}
}
