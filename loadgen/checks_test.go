package loadgen

import (
	"slices"
	"strings"
	"testing"
	"time"
)

// goodReport is a report that passes every check; tests break one thing at a time.
func goodReport() *Report {
	rep := &Report{
		SchemaVersion: SchemaVersion, Label: "fixture", StartedAt: time.Unix(1_800_000_000, 0).UTC(),
		Config:     ReportConfig{Gateway: "127.0.0.1:7000", Rate: 500, DurationS: 60, Connections: 400, PingConnections: 4},
		MeasuredS:  60.01,
		TargetRate: 500, AchievedSendRate: 499.9, ArrivalRatio: 499.9 / 500, AckRate: 499.8,
		Counts: Counts{Scheduled: 30000, Sent: 29994, SentInWindow: 29994, Acked: 29994, AckedInWindow: 29990,
			Delivered: 29994, Pushes: 59000, PushEvents: 59988, Pulls: 30000, OwnCopies: 29994, Pings: 2400},
		FailuresByCode: map[string]int64{},
		Segments:       map[string]SegmentSummary{},
		CPU: CPUReport{WindowS: 60, TotalS: 12, MsPerMessage: 0.4, Complete: true, MachineBusyCores: 0.9,
			Procs: []ProcCPU{{Name: "gateway", Pid: 10, CPUS: 3, Cores: 0.05}, {Name: "kafka", Pid: 11, CPUS: 9, Cores: 0.15}}},
		Settle:  SettleReport{WaitedS: 0.1, Complete: true},
		SDKLane: LaneReport{Detail: "disabled"},
	}
	for s := range numSegments {
		base := float64(s+1) * 2
		sum := SegmentSummary{Count: 29990, MinMs: base / 4, MeanMs: base, P50Ms: base, P90Ms: base * 2, P99Ms: base * 4, P999Ms: base * 6, MaxMs: base * 10}
		for _, p := range percentilePoints[:25] {
			sum.Percentiles = append(sum.Percentiles, PercentilePoint{Percentile: p, Ms: base * (1 + p/25)})
		}
		sum.Percentiles = append(sum.Percentiles, PercentilePoint{Percentile: 100, Ms: sum.MaxMs})
		rep.Segments[s.String()] = sum
	}
	for i := 1; i <= 12; i++ {
		w := Window{EndS: float64(5 * i), DurS: 5, Phase: "run", Sent: 2500, Acked: 2499, Delivered: 2499, SendRate: 500,
			AckRate: 499.8, DeliverRate: 499.8, Segments: map[string]WindowSegment{}}
		for s := range numSegments {
			if s == SegPing && i == 3 {
				continue // an empty window: a gap in the plot
			}
			w.Segments[s.String()] = WindowSegment{Count: 2500, P50Ms: float64(s + 1), P99Ms: float64(4 * (s + 1)), MaxMs: float64(10*(int(s)+1) + i)}
		}
		rep.Timeline = append(rep.Timeline, w)
	}
	rep.Verdicts = Evaluate(rep, Thresholds{})
	return rep
}

// TestEvaluate: each threshold breaks its own check and no other.
func TestEvaluate(t *testing.T) {
	for _, tc := range []struct {
		name  string
		mut   func(*Report)
		fails string // "" = all pass
	}{
		{"all good", func(*Report) {}, ""},
		{"arrival just under 99 %", func(r *Report) { r.AchievedSendRate, r.ArrivalRatio = 494.9, 494.9/500 }, CheckArrival},
		{"arrival exactly 99 %", func(r *Report) { r.AchievedSendRate, r.ArrivalRatio = 495, 0.99 }, ""},
		{"impossible rate", func(r *Report) { r.TargetRate, r.ArrivalRatio, r.Counts.Unsent = 100000, 0.05, 95000 }, CheckArrival},
		{"send→ACK p99 over 150 ms", func(r *Report) { setP99(r, SegSendAck, 150.1) }, CheckSendAck},
		{"send→ACK p99 at 150 ms", func(r *Report) { setP99(r, SegSendAck, 150) }, ""},
		{"no ACK samples", func(r *Report) { r.Segments[SegSendAck.String()] = SegmentSummary{} }, CheckSendAck},
		{"end-to-end p99 over 300 ms", func(r *Report) { setP99(r, SegEndToEnd, 301) }, CheckEndToEnd},
		{"no end-to-end samples", func(r *Report) { r.Segments[SegEndToEnd.String()] = SegmentSummary{} }, CheckEndToEnd},
		{"slow push alone passes", func(r *Report) { setP99(r, SegSendPush, 5000) }, ""},
		{"one missing", func(r *Report) { r.Counts.Missing = 1 }, CheckMissing},
		{"ack mismatch", func(r *Report) { r.Counts.AckMismatch = 1 }, CheckMissing},
		{"nothing acked", func(r *Report) { r.Counts.Acked = 0 }, CheckMissing},
		{"duplicate after dedup", func(r *Report) { r.Counts.DuplicatesAfterDedup = 1 }, CheckDuplicates},
		{"raw duplicates are allowed", func(r *Report) { r.Counts.RawDuplicates, r.Counts.PushDuplicates = 5, 9 }, ""},
		{"an error", func(r *Report) { r.Counts.Errors, r.FailuresByCode["UNAVAILABLE"] = 1, 1 }, CheckFailures},
		{"a timeout", func(r *Report) { r.Counts.Timeouts = 1 }, CheckFailures},
		{"a lost connection", func(r *Report) { r.Counts.ConnectionsLost = 1 }, CheckFailures},
		{"a pull error", func(r *Report) { r.Counts.PullErrors = 1 }, CheckFailures},
		{"cpu over budget", func(r *Report) { r.CPU.MsPerMessage = 0.51 }, CheckCPU},
		{"cpu incomplete", func(r *Report) { r.CPU.Complete = false; r.CPU.Procs[1].Error = "process restarted" }, CheckCPU},
		{"no cpu evidence", func(r *Report) { r.CPU = CPUReport{} }, CheckCPU},
		{"sdk lane asked for, not wired", func(r *Report) { r.SDKLane = LaneReport{Enabled: true, Clients: 20, Detail: LaneNotAvailable} }, CheckSDKLane},
		{"sdk lane lost an ordinal", func(r *Report) {
			r.SDKLane = LaneReport{Enabled: true, Available: true, Passed: true, Verified: true, Missing: 1}
		}, CheckSDKLane},
		{"sdk lane not verified", func(r *Report) {
			r.SDKLane = LaneReport{Enabled: true, Available: true, Passed: true}
		}, CheckSDKLane},
		{"sdk lane passing", func(r *Report) {
			r.SDKLane = LaneReport{Enabled: true, Available: true, Passed: true, Verified: true, Sent: 10, Acked: 10, Received: 10}
		}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep := goodReport()
			tc.mut(rep)
			vs := Evaluate(rep, Thresholds{CPUMsPerMessage: 0.5})
			if len(vs) != 8 {
				t.Fatalf("%d verdicts, want 8", len(vs))
			}
			for _, v := range vs {
				wantPass := v.Name != tc.fails
				if v.Passed != wantPass {
					t.Errorf("%s: passed=%v, want %v (%s)", v.Name, v.Passed, wantPass, v.Detail)
				}
			}
			if Passed(vs) != (tc.fails == "") {
				t.Errorf("Passed = %v", Passed(vs))
			}
		})
	}
}

// TestCPUVerdictSplitsByProcess: the CPU detail gives every process's share of the per-message
// figure, largest first (here 0.300 + 0.100 of the 0.4 ms/msg total).
func TestCPUVerdictSplitsByProcess(t *testing.T) {
	vs := Evaluate(goodReport(), Thresholds{CPUMsPerMessage: 0.5}) // gateway 3 CPU-s, kafka 9 CPU-s of 12; 0.4 ms/msg
	i := slices.IndexFunc(vs, func(v Verdict) bool { return v.Name == CheckCPU })
	if i < 0 {
		t.Fatal("no CPU verdict")
	}
	v := vs[i]
	want := "ms/msg: kafka 0.300, gateway 0.100"
	if !strings.Contains(v.Detail, want) {
		t.Fatalf("detail %q lacks %q", v.Detail, want)
	}
}

// TestCPUNotJudgedWithoutBudget: without a budget there is no CPU verdict at all — a run whose
// processes cannot be seen (remote target hardware, a demo) passes on its other evidence — while
// the report still carries the figure split by process.
func TestCPUNotJudgedWithoutBudget(t *testing.T) {
	for _, rep := range []*Report{goodReport(), func() *Report { r := goodReport(); r.CPU = CPUReport{}; return r }()} {
		vs := Evaluate(rep, Thresholds{})
		if len(vs) != 7 || slices.ContainsFunc(vs, func(v Verdict) bool { return v.Name == CheckCPU }) || !Passed(vs) {
			t.Fatalf("verdicts without a budget: %+v", vs)
		}
	}
	if got := CPUSummary(&goodReport().CPU); !strings.Contains(got, "0.400 ms CPU per ACKed message") ||
		!strings.Contains(got, "kafka 0.300, gateway 0.100") {
		t.Fatalf("summary %q", got)
	}
}

func setP99(r *Report, s Segment, ms float64) {
	v := r.Segments[s.String()]
	v.P99Ms = ms
	r.Segments[s.String()] = v
}

func TestLaneNotAvailableIsSaid(t *testing.T) {
	rep := goodReport()
	rep.SDKLane = (&runState{}).finishLane(t.Context(), nil, 20)
	v := Evaluate(rep, Thresholds{})[6]
	if v.Name != CheckSDKLane || v.Passed || !strings.Contains(v.Detail, LaneNotAvailable) {
		t.Fatalf("lane verdict %+v", v)
	}
	rep.SDKLane = (&runState{}).finishLane(t.Context(), nil, 0)
	if v := Evaluate(rep, Thresholds{})[6]; !v.Passed || !strings.Contains(v.Detail, "disabled") {
		t.Fatalf("disabled lane verdict %+v", v)
	}
}

func TestByCode(t *testing.T) {
	if got := ByCode(nil); got != "" {
		t.Errorf("ByCode(nil) = %q", got)
	}
	if got := ByCode(map[string]int64{"INTERNAL": 1, "UNAVAILABLE": 3, "CONFLICT": 1}); got != " (UNAVAILABLE 3, CONFLICT 1, INTERNAL 1)" {
		t.Errorf("ByCode = %q", got)
	}
}
