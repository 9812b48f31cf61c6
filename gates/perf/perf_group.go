package perf

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/qim-dev/qim/gates"
	"github.com/qim-dev/qim/loadgen"
)

// Group mode of gate 5 (`qim-gate run perf --mode group --group-size N`): the same warm-ups,
// quiet wait, verdicts and find-max climb as the 1:1 run, with loadgen's group mode as the
// measured configuration. The 3 s warm-up stays 1:1 (it readies the chain, and 20 connections
// cannot hold a large group); the JIT warm-up and every measured run are group runs. The SDK
// lane is off: it drives 1:1 pairs.

// sig3 rounds x (> 0) to 3 significant digits.
func sig3(x float64) float64 {
	scale := math.Pow(10, 2-math.Floor(math.Log10(x)))
	return math.Round(x*scale) / scale
}

// rateLabel prints a rate as the check names and progress lines show it: whole rates as
// before ("1250"), fractional ones of group mode's scaled ladder with their decimals ("2.5").
func rateLabel(rate float64) string { return strconv.FormatFloat(rate, 'f', -1, 64) }

// rateKey is rateLabel fit for metric and artifact names ("2.5" → "2_5").
func rateKey(rate float64) string { return strings.ReplaceAll(rateLabel(rate), ".", "_") }

// stepArtifact names a find-max step's report files: perf-step-01250, perf-step-00002_5.
func stepArtifact(rate float64) string {
	whole, frac, _ := strings.Cut(rateKey(rate), "_")
	name := fmt.Sprintf("perf-step-%05s", whole)
	if frac != "" {
		name += "_" + frac
	}
	return name
}

// what describes the measured load for labels and progress lines.
func (o options) what(rate float64) string {
	if o.Mode == loadgen.ModeGroup {
		return fmt.Sprintf("%s msg/s to groups of %d", rateLabel(rate), o.GroupSize)
	}
	if o.Mode == loadgen.ModeRoom {
		return fmt.Sprintf("%s events/s into rooms of %d", rateLabel(rate), o.RoomSize)
	}
	return fmt.Sprintf("%s msg/s", rateLabel(rate))
}

// rate names a rate in the mode's unit: room events published per second in room mode,
// messages per second otherwise (a group message is one message).
func (o options) rate(r float64) string {
	if o.Mode == loadgen.ModeRoom {
		return rateLabel(r) + " events/s"
	}
	return rateLabel(r) + " msg/s"
}

// groupMetrics copies a group run's delivery numbers into the gate result.
func groupMetrics(r *gates.Result, prefix string, rep *loadgen.Report) {
	g := rep.Group
	if g == nil {
		return
	}
	m := func(k string, v float64) { r.Metric(prefix+k, v) }
	m("group_size", float64(g.GroupSize))
	m("groups", float64(g.Groups))
	m("entry_rate", g.EntryRate)
	m("expected_entries", float64(g.ExpectedEntries))
	m("delivered_entries", float64(g.DeliveredEntries))
	m("lost_entries", float64(g.LostEntries))
	m("lost_own_copies", float64(g.LostOwnCopies))
	m("cpu_ms_per_entry", rep.CPU.MsPerEntry)
}

// roomMetrics copies a room run's delivery numbers into the gate result.
func roomMetrics(r *gates.Result, prefix string, rep *loadgen.Report) {
	g := rep.Room
	if g == nil {
		return
	}
	m := func(k string, v float64) { r.Metric(prefix+k, v) }
	m("room_size", float64(g.RoomSize))
	m("rooms", float64(g.Rooms))
	m("room_expected_events", float64(g.ExpectedEvents))
	m("room_delivered_events", float64(g.DeliveredEvents))
	m("room_delivered_events_per_s", g.DeliveredRate)
	m("room_gaps", float64(g.Gaps))
	m("room_slow_consumer_drops", float64(g.SlowConsumerDrops))
	m("cpu_ms_per_delivered_event", g.CPUMsPerEvent)
}

// entriesNote is the entries part of a find-max step's summary, "" in 1:1 mode.
func entriesNote(rep *loadgen.Report) string {
	if g := rep.Room; g != nil {
		return fmt.Sprintf(", %.0f delivered events/s, broadcast p99 %.1f ms, %d of %d delivered, %d dropped members, %.4f CPU ms/event",
			g.DeliveredRate, rep.Segments["broadcast"].P99Ms, g.DeliveredEvents, g.ExpectedEvents, g.SlowConsumerDrops, g.CPUMsPerEvent)
	}
	if g := rep.Group; g != nil {
		return fmt.Sprintf(", %.1f entries/s, %d lost entries, %.4f CPU ms/entry", g.EntryRate, g.LostEntries, rep.CPU.MsPerEntry)
	}
	return ""
}
