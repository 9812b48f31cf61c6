package perf

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/qim-dev/qim/gates"
	"github.com/qim-dev/qim/loadgen"
)

// findMax runs the steps rateSearch names (double from a low start until a step fails, then
// bisect to within 10 %). A step is within SLO when arrival, both latency checks, missing,
// duplicates and failures pass (CPU and the SDK lane do not define capacity); each step is a
// check that passes when nothing was lost or duplicated — above capacity the system may be slow,
// never lossy. CPU per message is reported for the capacity step (the highest within SLO), and
// judged there when a budget is set: below saturation it mostly measures idle time.
func (g perfGate) findMax(ctx context.Context, env *gates.Env, r *gates.Result, base loadgen.Config, o options) {
	step := min(perfStep, o.Duration)
	best, failAt, stop := 0.0, 0.0, ""
	var lane *loadgen.Verdict
	var capacity *loadgen.Report
	search := newRateSearch(o.findMaxStartRate())
	for i := 0; ; i++ {
		rate, more := search.next()
		if !more {
			break
		}
		within := time.Duration(0) // the default bound before the first step
		if i > 0 {
			within = 30 * time.Second // our own previous step is what the machine is cooling from
		}
		g.quietWait(ctx, env, r, within)
		cfg := base
		cfg.Rate, cfg.Duration, cfg.Label = rate, step, fmt.Sprintf("find-max step %s", o.what(rate))
		if g.newLane != nil {
			cfg.SDKLane = g.newLane() // base's lane may serve one run only
		}
		env.Progressf("find-max step %d: %s for %s", i+1, o.what(rate), step)
		calls := g.countCalls(ctx, env)
		rep, err := g.run(ctx, cfg)
		if err != nil {
			r.Fail(fmt.Errorf("gates: find-max step %s: %w", o.rate(rate), err))
			return
		}
		writeLoadArtifacts(env, r, stepArtifact(rate), rep)
		perfMetrics(r, "step_"+rateKey(rate)+"_", rep)
		g.reportCalls(ctx, env, r, "step_"+rateKey(rate)+"_", "step "+o.rate(rate), calls, rep)
		ok, broken, safe := stepVerdict(rep.Verdicts)
		if lane == nil {
			lane = verdictNamed(rep.Verdicts, loadgen.CheckSDKLane)
		}
		summary := fmt.Sprintf("achieved %.1f msg/s, send→ACK p99 %.1f ms, end-to-end p99 %.1f ms, %d missing, %d dup after dedup, %.3f CPU ms/msg%s",
			rep.AchievedSendRate, rep.Segments["send_ack"].P99Ms, rep.Segments["end_to_end"].P99Ms,
			rep.Counts.Missing, rep.Counts.DuplicatesAfterDedup, rep.CPU.MsPerMessage, entriesNote(rep))
		if rep.Room != nil { // no mailbox: end to end, missing and dedup say nothing about a room
			summary = fmt.Sprintf("achieved %.1f events/s, send→ACK p99 %.1f ms, %.3f CPU ms/event published%s",
				rep.AchievedSendRate, rep.Segments["send_ack"].P99Ms, rep.CPU.MsPerMessage, entriesNote(rep))
		}
		if ok {
			summary = "within SLO: " + summary
			if rate > best {
				best, capacity = rate, rep
			}
		} else {
			summary = "SLO broken (" + broken + "): " + summary
			if failAt == 0 || rate < failAt {
				failAt, stop = rate, fmt.Sprintf("%s (%s)", o.rate(rate), broken)
			}
		}
		r.Check("step "+o.rate(rate), safe, "%s", summary)
		search.record(rate, ok)
	}
	r.Metric("max_passing_rate", best)
	capEntries := ""
	if capacity != nil && capacity.Group != nil {
		r.Metric("max_passing_entry_rate", capacity.Group.EntryRate)
		capEntries = fmt.Sprintf(" (%.1f delivered entries/s, groups of %d)", capacity.Group.EntryRate, capacity.Group.GroupSize)
	}
	if capacity != nil && capacity.Room != nil {
		r.Metric("max_passing_delivered_events_per_s", capacity.Room.DeliveredRate)
		capEntries = fmt.Sprintf(" (%.0f delivered events/s, rooms of %d, broadcast p99 %.1f ms, %.4f CPU ms per delivered event)",
			capacity.Room.DeliveredRate, capacity.Room.RoomSize, capacity.Segments["broadcast"].P99Ms, capacity.Room.CPUMsPerEvent)
	}
	r.Check("find-max", best > 0, "highest rate within SLO: %s%s; lowest failing step: %s", o.rate(best), capEntries, orNone(stop))
	if lane != nil {
		r.Check(lane.Name, lane.Passed, "%s", lane.Detail)
	}
	capacityCPU(env, r, capacity, o)
	if capacity != nil {
		capacityCalls(r, "step_"+rateKey(best)+"_")
	}
}

// capacityCalls repeats the capacity step's request counts and CPU per message by process as
// capacity_<name>: at saturation, where batches are largest, is where requests and CPU per
// message are judged (below it, every stage fills idle CPU with small batches).
func capacityCalls(r *gates.Result, step string) {
	for k, v := range r.Metrics {
		name, ok := strings.CutPrefix(k, step)
		if ok && (strings.HasPrefix(name, "kafka_requests_per_msg") || strings.HasPrefix(name, "redis_cmds_per_msg_") ||
			strings.HasPrefix(name, "redis_script_calls_per_msg_") || strings.HasPrefix(name, "cpu_ms_per_msg_")) {
			r.Metric("capacity_"+name, v)
		}
	}
}

// capacityCPU reports the CPU per message at the capacity step and judges it when asked.
func capacityCPU(env *gates.Env, r *gates.Result, capacity *loadgen.Report, o options) {
	budget := o.CPUBudget
	if capacity == nil {
		if budget > 0 {
			r.Check(loadgen.CheckCPU+" at capacity", false, "no step within SLO: no capacity rate to judge CPU at")
		}
		return
	}
	r.Metric("capacity_cpu_ms_per_msg", capacity.CPU.MsPerMessage)
	if capacity.Group != nil {
		r.Metric("capacity_cpu_ms_per_entry", capacity.CPU.MsPerEntry)
	}
	reportCPU(env, fmt.Sprintf(" at capacity (%s)", o.rate(capacity.TargetRate)), capacity, budget)
	if budget > 0 {
		v := loadgen.CPUVerdict(&capacity.CPU, budget)
		r.Check(v.Name+" at capacity", v.Passed, "at %s: %s", o.rate(capacity.TargetRate), v.Detail)
	}
}

// stepVerdict splits a step's verdicts: within SLO (the capacity criteria), the names of those
// broken, and safe (nothing lost or duplicated).
func stepVerdict(vs []loadgen.Verdict) (within bool, broken string, safe bool) {
	within, safe = true, true
	var names []string
	for _, v := range vs {
		switch v.Name {
		case loadgen.CheckCPU, loadgen.CheckSDKLane:
			continue
		case loadgen.CheckMissing, loadgen.CheckLost, loadgen.CheckDuplicates:
			safe = safe && v.Passed
		}
		if !v.Passed {
			within = false
			names = append(names, v.Name)
		}
	}
	return within, strings.Join(names, ", "), safe
}

func verdictNamed(vs []loadgen.Verdict, name string) *loadgen.Verdict {
	for i := range vs {
		if vs[i].Name == name {
			return &vs[i]
		}
	}
	return nil
}
