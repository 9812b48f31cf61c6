package gates

import (
	"slices"
	"testing"
)

func TestServiceGoMaxProcs(t *testing.T) {
	for _, tc := range []struct {
		setting, cpus, procs int
		oneProcess           bool
		want                 int
	}{
		{0, 2, 5, false, 1},  // the project's machine: a core's share is below one
		{0, 16, 5, false, 3}, // 16 ÷ 5
		{0, 16, 6, false, 2}, // with the HistoryArchiver
		{0, 2, 5, true, 0},   // one runtime gets every core
		{-1, 2, 5, false, 0}, // Go's default asked for
		{4, 2, 5, false, 4},  // an explicit value wins
		{4, 2, 5, true, 4},
		{0, 2, 0, false, 0},
	} {
		if got := serviceGoMaxProcs(tc.setting, tc.cpus, tc.procs, tc.oneProcess); got != tc.want {
			t.Errorf("serviceGoMaxProcs(%d, %d cpus, %d procs, one process %v) = %d, want %d",
				tc.setting, tc.cpus, tc.procs, tc.oneProcess, got, tc.want)
		}
	}
	if got := goMaxProcsEnv(0); got != nil {
		t.Errorf("goMaxProcsEnv(0) = %v", got)
	}
	if got := goMaxProcsEnv(2); !slices.Equal(got, []string{"GOMAXPROCS=2"}) {
		t.Errorf("goMaxProcsEnv(2) = %v", got)
	}
}
