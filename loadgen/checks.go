package loadgen

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/qim-dev/qim/contract"
)

// Thresholds are the pass criteria of a run. Zero fields take the contract's SLO values.
type Thresholds struct {
	ArrivalRatio float64       // achieved / target send rate, default contract.SLOArrivalRatio
	SendAckP99   time.Duration // default contract.SLOSendAckP99
	EndToEndP99  time.Duration // default contract.SLOEndToEndP99
	// CPUMsPerMessage is the budget of CPU across the system under test (services, Redis,
	// Kafka) per ACKed message. 0 (the default) does not judge it: the figure is still measured
	// and reported split by process, but a run against target hardware whose processes the
	// generator cannot see, or a demo, must not fail on it. Judge it where the processes are
	// accounted and at the capacity rate (below saturation it mostly measures idle time filled
	// with small batches; docs/perf.md).
	CPUMsPerMessage float64
}

// Check names, shared by the gate and the CLI so reports line up.
const (
	CheckArrival    = "arrival rate"
	CheckSendAck    = "send→ACK p99"
	CheckEndToEnd   = "end-to-end p99"
	CheckMissing    = "missing"
	CheckLost       = "lost entries" // group mode's missing: per (message, member)
	CheckDuplicates = "duplicates after dedup"
	CheckFailures   = "failures"
	CheckCPU        = "cpu per message"
	CheckSDKLane    = "sdk lane"
)

// Verdict is one named check with the numbers behind it.
type Verdict struct {
	Name   string `json:"name"`
	Passed bool   `json:"passed"`
	Detail string `json:"detail"`
}

func (t Thresholds) withDefaults() Thresholds {
	if t.ArrivalRatio == 0 {
		t.ArrivalRatio = contract.SLOArrivalRatio
	}
	if t.SendAckP99 == 0 {
		t.SendAckP99 = contract.SLOSendAckP99
	}
	if t.EndToEndP99 == 0 {
		t.EndToEndP99 = contract.SLOEndToEndP99
	}
	return t
}

// Evaluate judges a report. Each verdict fails on its own evidence only, and missing evidence
// fails (no ACKs means no latency percentile, which is not a pass).
func Evaluate(rep *Report, th Thresholds) []Verdict {
	th = th.withDefaults()
	c := &rep.Counts
	ack, e2e := rep.Segments[SegSendAck.String()], rep.Segments[SegEndToEnd.String()]
	ackLimit, e2eLimit := msOf(th.SendAckP99), msOf(th.EndToEndP99)
	vs := []Verdict{
		{CheckArrival, rep.ArrivalRatio >= th.ArrivalRatio, fmt.Sprintf(
			"achieved %.1f of %.1f msg/s (%.2f %%, need ≥ %.0f %%); %d scheduled, %d sent in window, %d unsent, generator lag p99 %.1f ms",
			rep.AchievedSendRate, rep.TargetRate, 100*rep.ArrivalRatio, 100*th.ArrivalRatio, c.Scheduled, c.SentInWindow,
			c.Unsent, rep.Segments[SegGenLag.String()].P99Ms)},
		{CheckSendAck, ack.Count > 0 && ack.P99Ms <= ackLimit, fmt.Sprintf(
			"p99 %.1f ms (limit %.0f), p50 %.1f, max %.1f, %d samples", ack.P99Ms, ackLimit, ack.P50Ms, ack.MaxMs, ack.Count)},
		endToEndVerdict(rep, e2e, e2eLimit),
		lossVerdict(rep),
		{CheckDuplicates, c.DuplicatesAfterDedup == 0, fmt.Sprintf(
			"%d after dedup by message_id (%d raw re-deliveries of the same id, %d repeated pushes: allowed)",
			c.DuplicatesAfterDedup, c.RawDuplicates, c.PushDuplicates)},
		{CheckFailures, c.Errors == 0 && c.Timeouts == 0 && c.ConnectionsLost == 0 && c.PullErrors == 0 && c.FailedVisible == 0,
			fmt.Sprintf("%d errors%s, %d timeouts, %d connections lost, %d pull errors, %d failed-but-visible",
				c.Errors, ByCode(rep.FailuresByCode), c.Timeouts, c.ConnectionsLost, c.PullErrors, c.FailedVisible)},
		laneVerdict(&rep.SDKLane),
	}
	if th.CPUMsPerMessage > 0 {
		vs = append(vs, CPUVerdict(&rep.CPU, th.CPUMsPerMessage))
	}
	return vs
}

// endToEndVerdict judges the end-to-end p99: in group mode over every member's first pull of
// every message but the sender's own copy. A group of one has no member to deliver to; its
// verdict rests on the lost-entries check (its own copies) and passes without samples.
func endToEndVerdict(rep *Report, e2e SegmentSummary, limit float64) Verdict {
	v := Verdict{Name: CheckEndToEnd, Passed: e2e.Count > 0 && e2e.P99Ms <= limit, Detail: fmt.Sprintf(
		"p99 %.1f ms (limit %.0f), p50 %.1f, max %.1f, %d samples", e2e.P99Ms, limit, e2e.P50Ms, e2e.MaxMs, e2e.Count)}
	if g := rep.Group; g != nil {
		v.Detail += fmt.Sprintf(" (one per message and member other than the sender, groups of %d)", g.GroupSize)
		if g.GroupSize == 1 && e2e.Count == 0 {
			v.Passed, v.Detail = true, "groups of 1: no member other than the sender to deliver to (own copies: see "+CheckLost+")"
		}
	}
	return v
}

// lossVerdict is "missing" in direct mode (ACKed messages never pulled by their recipient) and
// "lost entries" in group mode (expected mailbox entries never pulled).
func lossVerdict(rep *Report) Verdict {
	c := &rep.Counts
	g := rep.Group
	if g == nil {
		return Verdict{CheckMissing, c.Acked > 0 && c.Missing == 0 && c.AckMismatch == 0, fmt.Sprintf(
			"%d of %d ACKed messages never pulled by the recipient after %.1f s settle; %d delivered under another message_id than ACKed",
			c.Missing, c.Acked, rep.Settle.WaitedS, c.AckMismatch)}
	}
	return Verdict{CheckLost, c.Acked > 0 && g.LostEntries == 0 && c.AckMismatch == 0, fmt.Sprintf(
		"%d of %d expected entries (%d ACKed messages × %d members) never pulled after %.1f s settle, %d of them own copies; "+
			"%d delivered (%.1f entries/s in the window); %d delivered under another message_id than ACKed; "+
			"%d body-less entries under a message_id no SEND_ACK named",
		g.LostEntries, g.ExpectedEntries, c.Acked, g.GroupSize, rep.Settle.WaitedS, g.LostOwnCopies,
		g.DeliveredEntries, g.EntryRate, c.AckMismatch, c.UnmatchedEntries)}
}

// CPUVerdict judges a run's CPU per ACKed message against budget (ms). Missing or incomplete
// readings fail: no evidence is never a pass.
func CPUVerdict(cpu *CPUReport, budget float64) Verdict {
	v := Verdict{Name: CheckCPU}
	switch {
	case len(cpu.Procs) == 0:
		v.Detail = "no processes to account: no CPU evidence"
	case !cpu.Complete:
		v.Detail = fmt.Sprintf("incomplete CPU readings (%.3f ms/msg is a lower bound): %s", cpu.MsPerMessage, procErrors(cpu))
	default:
		v.Passed = cpu.MsPerMessage <= budget && cpu.MsPerMessage > 0
		v.Detail = fmt.Sprintf("budget %.2f: %s", budget, CPUSummary(cpu))
	}
	return v
}

// CPUSummary is the CPU line of a report: ms per ACKed message, the CPU-seconds behind it and
// the split by process, largest first.
func CPUSummary(cpu *CPUReport) string {
	if len(cpu.Procs) == 0 {
		return "no processes accounted (the system under test runs elsewhere)"
	}
	s := fmt.Sprintf("%.3f ms CPU per ACKed message: %.1f CPU-s over %.0f s across %d processes (%s); machine %.2f cores busy",
		cpu.MsPerMessage, cpu.TotalS, cpu.WindowS, len(cpu.Procs), procShares(cpu), cpu.MachineBusyCores)
	if cpu.MsPerEntry > 0 {
		s += fmt.Sprintf("; %.4f ms CPU per delivered %s", cpu.MsPerEntry, cmp.Or(cpu.EntryUnit, "mailbox entry"))
	}
	if !cpu.Complete {
		s += "; incomplete readings (a lower bound): " + procErrors(cpu)
	}
	return s
}

// ProcShare is one process's part of the CPU per message, in ms.
func (cpu *CPUReport) ProcShare(p ProcCPU) float64 {
	if cpu.TotalS <= 0 {
		return 0
	}
	return cpu.MsPerMessage * p.CPUS / cpu.TotalS
}

// procShares splits MsPerMessage over the processes, largest first, so a failed budget says at
// once where it went (a broker over the whole budget on its own reads differently from an even
// spread, and calls for a different fix).
func procShares(cpu *CPUReport) string {
	ps := slices.Clone(cpu.Procs)
	slices.SortStableFunc(ps, func(a, b ProcCPU) int { return cmp.Compare(b.CPUS, a.CPUS) })
	parts := make([]string, 0, len(ps))
	for _, p := range ps {
		parts = append(parts, fmt.Sprintf("%s %.3f", p.Name, cpu.ProcShare(p)))
	}
	return "ms/msg: " + strings.Join(parts, ", ")
}

func procErrors(cpu *CPUReport) string {
	s := ""
	for _, p := range cpu.Procs {
		if p.Error != "" {
			s += fmt.Sprintf("%s: %s; ", p.Name, p.Error)
		}
	}
	return s
}

func laneVerdict(l *LaneReport) Verdict {
	v := Verdict{Name: CheckSDKLane, Detail: l.Detail}
	switch {
	case !l.Enabled:
		v.Passed = true
	case !l.Available:
		v.Detail = LaneNotAvailable
	default:
		v.Passed = l.Passed && l.Verified && l.Missing == 0 && l.Repeated == 0
		v.Detail = fmt.Sprintf("%d clients: %d sent, %d acked, %d received, %d missing, %d repeated; %s",
			l.Clients, l.Sent, l.Acked, l.Received, l.Missing, l.Repeated, l.Detail)
	}
	return v
}

func msOf(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// Passed reports whether every verdict passed (and there is at least one).
func Passed(vs []Verdict) bool {
	for _, v := range vs {
		if !v.Passed {
			return false
		}
	}
	return len(vs) > 0
}

// ByCode renders errors by code for a check's detail: "" when there are none, else
// " (UNAVAILABLE 3, INTERNAL 1)", the most frequent first.
func ByCode(m map[string]int64) string {
	if len(m) == 0 {
		return ""
	}
	codes := slices.Collect(maps.Keys(m))
	slices.SortFunc(codes, func(a, b string) int {
		if m[a] != m[b] {
			return cmp.Compare(m[b], m[a])
		}
		return strings.Compare(a, b)
	})
	parts := make([]string, len(codes))
	for i, c := range codes {
		parts[i] = fmt.Sprintf("%s %d", c, m[c])
	}
	return " (" + strings.Join(parts, ", ") + ")"
}
