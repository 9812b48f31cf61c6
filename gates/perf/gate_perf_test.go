package perf

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/qim-dev/qim/gates"
	"github.com/qim-dev/qim/gates/stack"
	"github.com/qim-dev/qim/gates/stack/stacktest"
	"github.com/qim-dev/qim/gates/svc"
	"github.com/qim-dev/qim/loadgen"
)

// perfFixture is a gate 5 environment on a fake stack (with a pid file, as the process provider
// writes them) and a loadgen stand-in that records the configs it was given.
type perfFixture struct {
	env     *gates.Env
	configs []loadgen.Config
	// shape decides the run's outcome per config: p99s and losses.
	shape func(cfg loadgen.Config) (ackP99, e2eP99 float64, missing int64)
}

func newPerfFixture(t *testing.T, opts gates.PerfOptions) *perfFixture {
	t.Helper()
	ep := stack.Endpoints{Dir: t.TempDir(), DispatchShards: 64}
	if err := os.MkdirAll(filepath.Join(ep.Dir, "pids"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ep.Dir, "pids", "redis-core.pid"), []byte("4242 777\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	set, err := svc.New("/nonexistent/qim", ep)
	if err != nil {
		t.Fatal(err)
	}
	// Every service's /metrics answers with a request counter, as the real services do: the
	// gate's "request counters" check fails a run whose counters cannot be read.
	for name := range set.Addrs.Metrics {
		set.Addrs.Metrics[name] = metricsServer(t, kafkaFamily+`qim_kafka_requests_total{api="Fetch",client="c"} 1`+"\n")
	}
	f := &perfFixture{shape: func(loadgen.Config) (float64, float64, int64) { return 10, 40, 0 }}
	f.env = &gates.Env{Progress: &bytes.Buffer{}, ReportDir: t.TempDir(), Perf: opts,
		Stack:      func(context.Context) (stack.Stack, error) { return stacktest.Fake{EP: ep}, nil },
		Deployment: func(context.Context) (*svc.Set, error) { return set, nil }}
	return f
}

func (f *perfFixture) gate() perfGate {
	return perfGate{
		quiet: func(context.Context, loadgen.QuietOptions, func(string)) loadgen.Quiet {
			return loadgen.Quiet{Reached: true, Load1: 0.4, IdlePct: 90, Samples: 1, Detail: "quiet"}
		},
		run: func(_ context.Context, cfg loadgen.Config) (*loadgen.Report, error) {
			f.configs = append(f.configs, cfg)
			ack, e2e, missing := f.shape(cfg)
			return fakeLoadReport(cfg, ack, e2e, missing), nil
		},
	}
}

// fakeLoadReport is what loadgen.Run would report for cfg with the given outcome; the verdicts
// come from the real loadgen.Evaluate.
func fakeLoadReport(cfg loadgen.Config, ackP99, e2eP99 float64, missing int64) *loadgen.Report {
	rep := &loadgen.Report{TargetRate: cfg.Rate, AchievedSendRate: cfg.Rate, ArrivalRatio: 1, AckRate: cfg.Rate,
		Counts:         loadgen.Counts{Sent: 100, Acked: 100, Delivered: 100 - missing, Missing: missing},
		FailuresByCode: map[string]int64{},
		Segments: map[string]loadgen.SegmentSummary{
			"send_ack":   {Count: 100, P50Ms: ackP99 / 2, P99Ms: ackP99, MaxMs: ackP99 * 2},
			"end_to_end": {Count: 100, P50Ms: e2eP99 / 2, P99Ms: e2eP99, MaxMs: e2eP99 * 2},
		},
		CPU: loadgen.CPUReport{WindowS: cfg.Duration.Seconds(), Complete: len(cfg.CPU) > 0, MsPerMessage: 0.3, TotalS: 1},
	}
	for _, p := range cfg.CPU {
		rep.CPU.Procs = append(rep.CPU.Procs, loadgen.ProcCPU{Name: p.Name, Pid: p.Pid, CPUS: 0.5})
	}
	if cfg.Mode == loadgen.ModeGroup { // every message in every member's mailbox, missing ones lost
		n := int64(cfg.GroupSize)
		rep.Group = &loadgen.GroupReport{GroupSize: cfg.GroupSize, Groups: cfg.Connections / cfg.GroupSize,
			ExpectedEntries: 100 * n, DeliveredEntries: 100*n - missing, LostEntries: missing, EntryRate: cfg.Rate * float64(n)}
		rep.CPU.MsPerEntry = 0.3 / float64(n)
	}
	switch {
	case cfg.SDKClientsPercent == 0:
		rep.SDKLane = loadgen.LaneReport{Detail: "disabled"}
	case cfg.SDKLane == nil:
		rep.SDKLane = loadgen.LaneReport{Enabled: true, Detail: loadgen.LaneNotAvailable}
	}
	rep.Verdicts = loadgen.Evaluate(rep, cfg.Thresholds)
	return rep
}

func checkNamed(r *gates.Result, name string) *gates.Check {
	for i := range r.Checks {
		if r.Checks[i].Name == name {
			return &r.Checks[i]
		}
	}
	return nil
}

// TestPerfGateRun: warm-up first, then one run with the flags' rate, duration and connections,
// CPU accounted for the stack's pid files, every verdict a check, artifacts in the report dir.
func TestPerfGateRun(t *testing.T) {
	f := newPerfFixture(t, gates.PerfOptions{Rate: 700, Duration: 42 * time.Second, Connections: 60})
	r := gates.RunOne(context.Background(), f.gate(), f.env, time.Hour)
	if !r.Passed {
		t.Fatalf("gate failed: %+v", r)
	}
	if len(f.configs) != 3 || f.configs[0].Label != "warm-up" || len(f.configs[0].CPU) != 0 {
		t.Fatalf("want two warm-ups then the run, got %+v", f.configs)
	}
	// The JIT warm-up runs the measured shape (rate capped at perfJITWarmMax) without the SDK lane.
	if jit := f.configs[1]; jit.Label != "warm-up (JIT)" || jit.Rate != 700 || jit.Duration != perfJITWarm ||
		jit.Connections != 60 || jit.SDKClientsPercent != 0 || jit.SDKLane != nil {
		t.Errorf("JIT warm-up config %+v", jit)
	}
	main := f.configs[2]
	if main.Rate != 700 || main.Duration != 42*time.Second || main.Connections != 60 || main.SDKClientsPercent != 0 {
		t.Errorf("run config %+v", main)
	}
	if len(main.CPU) != 1 || main.CPU[0] != (loadgen.Proc{Name: "redis-core", Pid: 4242}) {
		t.Errorf("CPU processes %+v, want the stack's pid file", main.CPU)
	}
	for _, name := range []string{"warm-up", "warm-up (JIT)", loadgen.CheckArrival, loadgen.CheckSendAck, loadgen.CheckEndToEnd,
		loadgen.CheckMissing, loadgen.CheckDuplicates, loadgen.CheckFailures, loadgen.CheckSDKLane} {
		if checkNamed(r, name) == nil {
			t.Errorf("no check %q", name)
		}
	}
	if len(r.Artifacts) != 2 {
		t.Fatalf("artifacts %v", r.Artifacts)
	}
	for _, a := range r.Artifacts {
		if st, err := os.Stat(a); err != nil || st.Size() == 0 {
			t.Errorf("artifact %s: %v", a, err)
		}
	}
	if checkNamed(r, loadgen.CheckCPU) != nil {
		t.Errorf("CPU judged without a budget")
	}
	if r.Metrics["quiet_reached"] != 1 || r.Metrics["send_ack_p99_ms"] != 10 || r.Metrics["cpu_s_redis-core"] != 0.5 ||
		r.Metrics["cpu_ms_per_msg"] != 0.3 || r.Metrics["cpu_ms_per_msg_redis-core"] != 0.15 ||
		r.Metrics["dispatch_shards"] != 64 {
		t.Errorf("metrics %v", r.Metrics)
	}
}

// The SDK lane asked for (the CLI default is 5 %) but not wired must fail the gate by name.
func TestPerfGateSDKLaneNotWired(t *testing.T) {
	f := newPerfFixture(t, gates.PerfOptions{Rate: 500, Duration: time.Second, SDKClients: 5})
	r := gates.RunOne(context.Background(), f.gate(), f.env, time.Hour)
	c := checkNamed(r, loadgen.CheckSDKLane)
	if r.Passed || c == nil || c.Passed || !strings.Contains(c.Detail, "SDK lane not available in this build") {
		t.Fatalf("passed=%v lane check %+v", r.Passed, c)
	}
	if f.configs[0].SDKClientsPercent != 0 || f.configs[1].SDKClientsPercent != 0 || f.configs[2].SDKClientsPercent != 5 {
		t.Errorf("SDK share: warm-ups %d%% %d%%, run %d%%", f.configs[0].SDKClientsPercent,
			f.configs[1].SDKClientsPercent, f.configs[2].SDKClientsPercent)
	}
}

// A lossy JIT warm-up stops the gate too (high latency there is not judged).
func TestPerfGateJITWarmUpMustNotLose(t *testing.T) {
	f := newPerfFixture(t, gates.PerfOptions{Rate: 5000})
	f.shape = func(cfg loadgen.Config) (float64, float64, int64) {
		if cfg.Label == "warm-up (JIT)" {
			if cfg.Rate != perfJITWarmMax {
				t.Errorf("JIT warm-up rate %v, want the cap %d", cfg.Rate, perfJITWarmMax)
			}
			return 900, 900, 2
		}
		return 10, 40, 0
	}
	r := gates.RunOne(context.Background(), f.gate(), f.env, time.Hour)
	if c := checkNamed(r, "warm-up (JIT)"); r.Passed || len(f.configs) != 2 || c == nil || c.Passed {
		t.Fatalf("passed=%v runs=%d check %+v", r.Passed, len(f.configs), c)
	}
}

// A dirty warm-up stops the gate before the measured run.
func TestPerfGateWarmUpMustBeClean(t *testing.T) {
	f := newPerfFixture(t, gates.PerfOptions{})
	f.shape = func(loadgen.Config) (float64, float64, int64) { return 10, 40, 1 }
	r := gates.RunOne(context.Background(), f.gate(), f.env, time.Hour)
	if r.Passed || len(f.configs) != 1 || checkNamed(r, "warm-up").Passed {
		t.Fatalf("passed=%v runs=%d", r.Passed, len(f.configs))
	}
}

// --find-max doubles from 100 msg/s until a step is outside the SLO, bisects to within 10 %,
// reports the highest rate within it, and fails a step only when it lost or duplicated something.
func TestPerfGateFindMax(t *testing.T) {
	for _, tc := range []struct {
		name     string
		lossy    bool
		wantPass bool
	}{{"slow above capacity", false, true}, {"lossy above capacity", true, false}} {
		t.Run(tc.name, func(t *testing.T) {
			f := newPerfFixture(t, gates.PerfOptions{FindMax: true, Duration: time.Hour, SDKClients: 0})
			f.shape = func(cfg loadgen.Config) (float64, float64, int64) {
				if cfg.Rate > 2000 {
					if tc.lossy {
						return 400, 900, 3
					}
					return 400, 900, 0
				}
				return 10, 40, 0
			}
			r := gates.RunOne(context.Background(), f.gate(), f.env, time.Hour)
			if r.Passed != tc.wantPass {
				t.Fatalf("passed=%v, want %v: %+v", r.Passed, tc.wantPass, r.Checks)
			}
			if got := r.Metrics["max_passing_rate"]; got != 1900 {
				t.Errorf("max passing rate %v, want 1900 (the boundary is 2000)", got)
			}
			var rates []float64
			for _, c := range f.configs[2:] {
				rates = append(rates, c.Rate)
				if c.Duration != perfStep {
					t.Errorf("step duration %s, want %s", c.Duration, perfStep)
				}
			}
			if want := []float64{100, 200, 400, 800, 1600, 3200, 2260, 1900, 2070}; !equalRates(rates, want) {
				t.Errorf("search ran %v, want %v", rates, want)
			}
			for _, name := range []string{"step 3200 msg/s", "step 2260 msg/s", "step 2070 msg/s"} {
				if c := checkNamed(r, name); c == nil || c.Passed == tc.lossy || !strings.Contains(c.Detail, "SLO broken") {
					t.Errorf("%s check %+v", name, c)
				}
			}
			if fm := checkNamed(r, "find-max"); fm == nil || !fm.Passed || !strings.Contains(fm.Detail, "1900 msg/s") ||
				!strings.Contains(fm.Detail, "lowest failing step: 2070 msg/s") {
				t.Errorf("find-max check %+v", fm)
			}
		})
	}
}

// TestPerfGateCPUBudget: a budget turns the reported CPU figure into a check, at the run's rate
// for a single run and at the capacity step for find-max; without a budget no CPU check exists.
func TestPerfGateCPUBudget(t *testing.T) { // the fake reports 0.3 ms/msg
	for _, tc := range []struct {
		name    string
		opts    gates.PerfOptions
		check   string
		passing bool
	}{
		{"single run within budget", gates.PerfOptions{Rate: 500, Duration: time.Second, CPUBudget: 0.5}, loadgen.CheckCPU, true},
		{"single run over budget", gates.PerfOptions{Rate: 500, Duration: time.Second, CPUBudget: 0.25}, loadgen.CheckCPU, false},
		{"capacity within budget", gates.PerfOptions{FindMax: true, Duration: time.Hour, CPUBudget: 0.5}, loadgen.CheckCPU + " at capacity", true},
		{"capacity over budget", gates.PerfOptions{FindMax: true, Duration: time.Hour, CPUBudget: 0.25}, loadgen.CheckCPU + " at capacity", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newPerfFixture(t, tc.opts)
			f.shape = func(cfg loadgen.Config) (float64, float64, int64) {
				if cfg.Rate > 1000 {
					return 400, 900, 0 // capacity: 1,000 msg/s
				}
				return 10, 40, 0
			}
			r := gates.RunOne(context.Background(), f.gate(), f.env, time.Hour)
			c := checkNamed(r, tc.check)
			if c == nil || c.Passed != tc.passing || r.Passed != tc.passing {
				t.Fatalf("check %q = %+v, gate passed %v, want %v", tc.check, c, r.Passed, tc.passing)
			}
			if tc.opts.FindMax && (r.Metrics["capacity_cpu_ms_per_msg"] != 0.3 || !strings.Contains(c.Detail, "at 951 msg/s")) {
				t.Errorf("capacity CPU metric %v, detail %q", r.Metrics["capacity_cpu_ms_per_msg"], c.Detail)
			}
		})
	}
}

func equalRates(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestPerfOptionsDefaults(t *testing.T) {
	o := options{}.withDefaults()
	if o.Rate != 250 || o.Duration != 180*time.Second || o.Connections != 400 || o.SDKClients != 0 {
		t.Fatalf("defaults %+v", o)
	}
}
