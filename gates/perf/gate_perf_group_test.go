package perf

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/qim-dev/qim/gates"
	"github.com/qim-dev/qim/loadgen"
)

// TestPerfGateGroupRun: group mode keeps the 1:1 warm-up (20 connections cannot hold a large
// group), runs the JIT warm-up and the measured run as group runs without the SDK lane (wired
// or not), judges lost entries, and reports the entry rate and CPU per entry.
func TestPerfGateGroupRun(t *testing.T) {
	f := newPerfFixture(t, gates.PerfOptions{Mode: loadgen.ModeGroup, GroupSize: 10, Rate: 50, Duration: 20 * time.Second, Connections: 400})
	g := f.gate()
	g.newLane = func() loadgen.Lane { t.Fatal("SDK lane built in group mode"); return nil }
	r := gates.RunOne(context.Background(), g, f.env, time.Hour)
	if !r.Passed || len(f.configs) != 3 {
		t.Fatalf("passed=%v after %d runs: %+v", r.Passed, len(f.configs), r)
	}
	if w := f.configs[0]; w.Mode != loadgen.ModeDirect || w.GroupSize != 0 || w.Connections != perfWarmConns {
		t.Errorf("warm-up %+v", w)
	}
	for _, c := range f.configs[1:] {
		if c.Mode != loadgen.ModeGroup || c.GroupSize != 10 || c.Rate != 50 || c.SDKClientsPercent != 0 || c.SDKLane != nil {
			t.Errorf("%s: %+v", c.Label, c)
		}
	}
	if main := f.configs[2]; main.Label != "perf 50 msg/s to groups of 10 for 20s" {
		t.Errorf("label %q", main.Label)
	}
	if c := checkNamed(r, loadgen.CheckLost); c == nil || !c.Passed || checkNamed(r, loadgen.CheckMissing) != nil {
		t.Errorf("loss check %+v", c)
	}
	if r.Metrics["entry_rate"] != 500 || r.Metrics["cpu_ms_per_entry"] != 0.03 || r.Metrics["groups"] != 40 ||
		r.Metrics["lost_entries"] != 0 {
		t.Errorf("metrics %v", r.Metrics)
	}
}

// TestPerfGateGroupConfigRefused: a group mode the measured run could not take fails the gate
// with the reason before any load is offered.
func TestPerfGateGroupConfigRefused(t *testing.T) {
	for _, tc := range []struct {
		opts gates.PerfOptions
		want string
	}{
		{gates.PerfOptions{Mode: loadgen.ModeGroup, GroupSize: 500, Connections: 400}, "400 connections cannot hold a group of 500"},
		{gates.PerfOptions{Mode: loadgen.ModeGroup, GroupSize: 10, SDKClients: 5}, "SDK lane drives 1:1 pairs"},
		{gates.PerfOptions{Mode: loadgen.ModeGroup}, "group size 0 not in [1, 1000]"},
	} {
		f := newPerfFixture(t, tc.opts)
		r := gates.RunOne(context.Background(), f.gate(), f.env, time.Hour)
		if r.Passed || len(f.configs) != 0 || !strings.Contains(r.Error, tc.want) {
			t.Errorf("%+v: passed=%v after %d runs, error %q", tc.opts, r.Passed, len(f.configs), r.Error)
		}
	}
}

// TestPerfGateGroupFindMax: the search starts at the group rate that offers the 1:1 start's
// entries, names steps by their message rate, and reports the capacity's entry rate; a lost
// entry above capacity fails its step.
func TestPerfGateGroupFindMax(t *testing.T) {
	f := newPerfFixture(t, gates.PerfOptions{Mode: loadgen.ModeGroup, GroupSize: 10, FindMax: true, Duration: time.Hour})
	f.shape = func(cfg loadgen.Config) (float64, float64, int64) {
		if cfg.Rate > 300 {
			return 400, 900, 2
		}
		return 10, 40, 0
	}
	r := gates.RunOne(context.Background(), f.gate(), f.env, time.Hour)
	var rates []float64
	for _, c := range f.configs[2:] {
		rates = append(rates, c.Rate)
	}
	if want := []float64{20, 40, 80, 160, 320, 226, 269, 293}; !slices.Equal(rates, want) {
		t.Fatalf("search ran %v, want %v", rates, want)
	}
	if lossy := checkNamed(r, "step 320 msg/s"); r.Passed || lossy == nil || lossy.Passed || !strings.Contains(lossy.Detail, "lost entries") {
		t.Errorf("passed=%v, lossy step %+v", r.Passed, lossy)
	}
	if fm := checkNamed(r, "find-max"); fm == nil || !strings.Contains(fm.Detail, "293 msg/s (2930.0 delivered entries/s, groups of 10)") {
		t.Errorf("find-max check %+v", fm)
	}
	if r.Metrics["max_passing_rate"] != 293 || r.Metrics["max_passing_entry_rate"] != 2930 || r.Metrics["step_293_entry_rate"] != 2930 {
		t.Errorf("metrics %v", r.Metrics)
	}
}

func TestFindMaxStartAndNames(t *testing.T) {
	for _, tc := range []struct {
		o    gates.PerfOptions
		want float64
	}{
		{gates.PerfOptions{}, 100},
		{gates.PerfOptions{Mode: loadgen.ModeGroup, GroupSize: 2}, 100},
		{gates.PerfOptions{Mode: loadgen.ModeGroup, GroupSize: 10}, 20},
		{gates.PerfOptions{Mode: loadgen.ModeGroup, GroupSize: 3}, 66.7},
		{gates.PerfOptions{Mode: loadgen.ModeGroup, GroupSize: 1000}, 0.2},
	} {
		if got := options(tc.o).findMaxStartRate(); got != tc.want {
			t.Errorf("findMaxStartRate(%+v) = %v, want %v", tc.o, got, tc.want)
		}
	}
	// Step names carry the mode's unit: a room step of 62 is events, not messages.
	for _, tc := range []struct {
		o    gates.PerfOptions
		want string
	}{
		{gates.PerfOptions{}, "500 msg/s"},
		{gates.PerfOptions{Mode: loadgen.ModeGroup, GroupSize: 10}, "500 msg/s"},
		{gates.PerfOptions{Mode: loadgen.ModeRoom, RoomSize: 1000}, "500 events/s"},
	} {
		if got := options(tc.o).rate(500); got != tc.want {
			t.Errorf("rate(500) in %s mode = %q, want %q", tc.o.Mode, got, tc.want)
		}
	}
	for rate, want := range map[float64]string{1250: "perf-step-01250", 2.5: "perf-step-00002_5", 15000: "perf-step-15000"} {
		if got := stepArtifact(rate); got != want {
			t.Errorf("stepArtifact(%v) = %q, want %q", rate, got, want)
		}
	}
}

func TestJITWarmRateScalesToGroups(t *testing.T) {
	for _, c := range []struct {
		o    gates.PerfOptions
		want float64
	}{
		{gates.PerfOptions{Rate: 250}, 250},
		{gates.PerfOptions{Rate: 5000}, perfJITWarmMax},
		{gates.PerfOptions{Rate: 250, Mode: loadgen.ModeGroup, GroupSize: 1000}, 2},
		{gates.PerfOptions{Rate: 1, Mode: loadgen.ModeGroup, GroupSize: 1000}, 1},
		{gates.PerfOptions{Rate: 250, Mode: loadgen.ModeGroup, GroupSize: 100, FindMax: true}, 2},
	} {
		if got := options(c.o).jitWarmRate(); got != c.want {
			t.Errorf("%+v: warm-up rate %v, want %v", c.o, got, c.want)
		}
	}
}
