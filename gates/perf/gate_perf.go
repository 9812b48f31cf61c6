package perf

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/gates"
	"github.com/qim-dev/qim/loadgen"
	"github.com/qim-dev/qim/loadgen/sdklane"
)

// options are options with the perf gate's defaults and derived values as methods.
type options gates.PerfOptions

// Gate 5 tuning (harness values, not contract values).
const (
	// perfDefaultRate is what `qim-gate run --full` certifies without --rate: conservative for a
	// 2-core machine that carries every server, service and the load (docs/perf.md). Target
	// hardware passes its own --rate.
	perfDefaultRate  = 250
	perfDefaultConns = 400
	perfStep         = 30 * time.Second // find-max step length
	perfWarmRate     = 100              // warm-up: 300 real messages through the whole chain
	perfWarmDuration = 3 * time.Second
	perfWarmConns    = 20
	// The second warm-up phase runs the measured configuration for perfJITWarm at the target
	// rate (at most perfJITWarmMax msg/s) so the broker's JVM has compiled its hot paths: on this
	// 2-core machine a cold Kafka used 0.63-0.76 cores at 1,000 msg/s in the first 30 s and
	// 0.33-0.42 in the next, which would charge JIT compilation to the system under test.
	perfJITWarm    = 20 * time.Second
	perfJITWarmMax = 1000
)

// perfGate is gate 5 (docs/architecture.md, section 7): the arrival-rate / SLO run on the run's
// deployment, against the bar in docs/perf.md.
//
// Invariants: the measured run is preceded by a warm-up of real messages through the gateway
// (so the writer's idempotent producer and every connection pool are ready: a cold start was
// measured costing ~14k slow ACKs, docs/adr/0013-perf-runs-warm-up-and-quiet-machine.md) — never
// by fake Outbox records; the measured run waits for
// a quiet machine first, boundedly, and the wait's outcome is recorded as metrics either way;
// every loadgen verdict becomes a check, so a lane that did not run, missing CPU evidence or
// one lost message fails the gate.
//
// How: loadgen.Run against the deployment's gateway with the CPU of every service process and
// of Redis and Kafka (the stack's pid files) accounted over the window; JSON and HTML reports
// are written to the report dir as artifacts. --find-max searches in 30 s steps (perf_search.go).
//
// Rejected alternative: reusing gates/e2e's paced load. It is a closed model (each pair waits
// for its ACK before the next send), so a stall lowers the offered rate instead of showing up as
// latency, and the arrival-rate check could never fail.
type perfGate struct {
	// newLane builds an SDK lane (Registry wires sdklane.New); a lane is one run's ledger, so
	// every loadgen run gets a fresh one. nil means the SDK lane is not wired in this build,
	// which fails the "sdk lane" check whenever SDK clients > 0.
	newLane func() loadgen.Lane
	run     func(context.Context, loadgen.Config) (*loadgen.Report, error)          // default loadgen.Run
	quiet   func(context.Context, loadgen.QuietOptions, func(string)) loadgen.Quiet // default loadgen.WaitQuiet
}

func (perfGate) Name() string  { return "perf" }
func (perfGate) Title() string { return "180 s arrival-rate / SLO run" }

func (o options) withDefaults() options {
	if o.Rate <= 0 {
		o.Rate = perfDefaultRate
	}
	if o.Duration <= 0 {
		o.Duration = contract.SLODuration
	}
	if o.Connections <= 0 {
		o.Connections = perfDefaultConns
	}
	return o
}

func (g perfGate) withDefaults() perfGate {
	if g.run == nil {
		g.run = loadgen.Run
	}
	if g.quiet == nil {
		g.quiet = loadgen.WaitQuiet
	}
	return g
}

func (g perfGate) Run(ctx context.Context, env *gates.Env, r *gates.Result) {
	g = g.withDefaults()
	o := options(env.Perf).withDefaults()
	base, procs, err := perfTarget(ctx, env)
	if err != nil {
		r.Fail(err)
		return
	}
	if st, err := env.Stack(ctx); err == nil { // the configuration measured belongs in the report
		r.Metric("dispatch_shards", float64(st.Endpoints().DispatchShards))
		r.Metric("service_instances", float64(env.NumInstances()))
		r.Metric("service_gomaxprocs", float64(gates.DeployedGoMaxProcs(env, gates.ServiceProcs(st.Endpoints(), env.NumInstances())))) // 0: Go's default
		if env.OneProcess {
			r.Metric("one_process", 1)
		}
		if set, err := env.Deployment(ctx); err == nil && set.MTLS() { // absent: plaintext (an A/B baseline from before the boundary)
			r.Metric("rpc_mtls", 1)
		}
	}
	if o.ConnectWebhook {
		if err := useWebhook(ctx, env, &base); err != nil {
			r.Fail(err)
			return
		}
		r.Metric("connect_webhook", 1)
	}
	if o.ModerationHook {
		if err := useModeration(ctx, env, &base); err != nil {
			r.Fail(err)
			return
		}
		r.Metric("moderation_hook", 1)
	}
	base.Connections, base.SDKClientsPercent, base.Progress = o.Connections, o.SDKClients, env.Progress
	base.Mode, base.GroupSize, base.RoomSize = o.Mode, o.GroupSize, o.RoomSize
	if g.newLane != nil && o.Mode == loadgen.ModeDirect {
		if g.newLane, err = withWebLane(ctx, env, g.newLane, o.WebSDKShare); err != nil {
			r.Fail(err)
			return
		}
		base.SDKLane = g.newLane()
	}
	if err := validateMeasured(base, o); err != nil {
		r.Fail(err)
		return
	}
	if !g.warmUp(ctx, env, r, base) {
		return
	}
	base.CPU = procs
	if o.FindMax {
		g.findMax(ctx, env, r, base, o)
		return
	}
	g.quietWait(ctx, env, r, 0)
	cfg := base
	cfg.Rate, cfg.Duration, cfg.Label = o.Rate, o.Duration, fmt.Sprintf("perf %s for %s", o.what(o.Rate), o.Duration)
	cfg.Thresholds.CPUMsPerMessage = o.CPUBudget
	env.Progressf("load: %s for %s over %d connections", o.what(o.Rate), o.Duration, o.Connections)
	waitProfiles := g.startProfiles(ctx, env, o)
	probe := startArchiveProbe(ctx, env)
	calls := g.countCalls(ctx, env)
	rep, err := g.run(ctx, cfg)
	if err != nil {
		probe.halt()
		r.Fail(err)
		return
	}
	g.reportCalls(ctx, env, r, "", "", calls, rep)
	if o.ConnectWebhook {
		reportWebhook(ctx, env, r)
	}
	if o.ModerationHook {
		reportModeration(ctx, env, r)
	}
	probe.finish(ctx, env, r)
	writeLoadArtifacts(env, r, "perf-loadgen", rep)
	if waitProfiles != nil {
		paths, err := waitProfiles()
		r.Artifacts = append(r.Artifacts, paths...)
		r.Check("profiles", err == nil, "%d artifacts in %s; error: %v", len(paths), env.ReportDir, err)
	}
	for _, v := range rep.Verdicts {
		r.Check(v.Name, v.Passed, "%s", v.Detail)
	}
	perfMetrics(r, "", rep)
	reportCPU(env, "", rep, o.CPUBudget)
}

// validateMeasured checks the measured run's configuration before the warm-ups spend a minute
// of load on a run that cannot take place (a group larger than the connections, ...).
func validateMeasured(base loadgen.Config, o options) error {
	cfg := base
	cfg.Rate, cfg.Duration = o.Rate, o.Duration
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("gates: perf: %w", err)
	}
	return nil
}

// reportCPU prints the CPU line of a run (always: split by process), saying whether it was
// judged.
func reportCPU(env *gates.Env, what string, rep *loadgen.Report, budget float64) {
	judged := "not judged (no --cpu-budget)"
	if budget > 0 {
		judged = fmt.Sprintf("budget %.2f ms", budget)
	}
	env.Progressf("cpu%s: %s; %s", what, loadgen.CPUSummary(&rep.CPU), judged)
}

// startProfiles starts the CPU profile capture when asked for; nil when not.
func (g perfGate) startProfiles(ctx context.Context, env *gates.Env, o options) func() ([]string, error) {
	if !o.Profile {
		return nil
	}
	set, err := env.Deployment(ctx)
	if err != nil {
		return func() ([]string, error) { return nil, err }
	}
	p := newProfileCapture(set, o.Duration)
	env.Progressf("profiles: every service for %s, starting %s into the window", p.length, p.lead)
	return p.start(ctx, env.ReportDir)
}

// perfTarget is the deployment's gateway and the processes whose CPU is accounted: every
// service of the deployment plus every server of the stack with a pid file (process provider).
func perfTarget(ctx context.Context, env *gates.Env) (loadgen.Config, []loadgen.Proc, error) {
	set, err := env.Deployment(ctx)
	if err != nil {
		return loadgen.Config{}, nil, err
	}
	st, err := env.Stack(ctx)
	if err != nil {
		return loadgen.Config{}, nil, err
	}
	cfg := loadgen.Config{Gateway: set.Addrs.GatewayTCP, MoreGateways: set.GatewayTCPs()[1:], TokenSecret: []byte(set.Addrs.TokenSecret)}
	var procs []loadgen.Proc
	seen := map[int]bool{}
	for _, name := range set.Services() {
		if pid := set.Pid(name); pid > 0 && !seen[pid] { // one process may run several services
			seen[pid] = true
			procs = append(procs, loadgen.Proc{Name: set.Process(name), Pid: pid})
		}
	}
	return cfg, append(procs, stackPids(st.Endpoints().Dir)...), nil
}

// stackPids reads <dir>/pids/<server>.pid ("<pid> <starttime>") of a process stack. A containers
// stack has none, which leaves the CPU check without evidence (it fails, as it should).
func stackPids(dir string) []loadgen.Proc {
	files, _ := filepath.Glob(filepath.Join(dir, "pids", "*.pid"))
	var out []loadgen.Proc
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		var pid int
		if _, err := fmt.Sscanf(string(b), "%d", &pid); err == nil && pid > 0 {
			out = append(out, loadgen.Proc{Name: strings.TrimSuffix(filepath.Base(f), ".pid"), Pid: pid})
		}
	}
	return out
}

// warmUp sends a few hundred real messages through the chain; it must itself be clean.
func (g perfGate) warmUp(ctx context.Context, env *gates.Env, r *gates.Result, base loadgen.Config) bool {
	cfg := base
	cfg.Rate, cfg.Duration, cfg.Connections, cfg.PingConnections = perfWarmRate, perfWarmDuration, perfWarmConns, 1
	cfg.Mode, cfg.GroupSize, cfg.RoomSize = loadgen.ModeDirect, 0, 0 // readies the chain; see perf_group.go
	cfg.SDKClientsPercent, cfg.SDKLane, cfg.Progress, cfg.Window, cfg.Label = 0, nil, nil, time.Second, "warm-up"
	env.Progressf("warm-up: %d msg/s for %s", perfWarmRate, perfWarmDuration)
	rep, err := g.run(ctx, cfg)
	if err != nil {
		r.Fail(fmt.Errorf("gates: perf warm-up: %w", err))
		return false
	}
	c := rep.Counts
	ok := c.Acked > 0 && c.Missing == 0 && c.DuplicatesAfterDedup == 0 && c.Errors == 0 && c.Timeouts == 0
	if !r.Check("warm-up", ok, "%d sent, %d acked, %d delivered, %d missing, %d errors%s, %d timeouts; send→ACK p99 %.1f ms",
		c.Sent, c.Acked, c.Delivered, c.Missing, c.Errors, loadgen.ByCode(rep.FailuresByCode), c.Timeouts, rep.Segments["send_ack"].P99Ms) {
		return false
	}
	return g.jitWarmUp(ctx, env, r, base)
}

// jitWarmUp runs the measured connection count at the target rate (capped) for perfJITWarm.
// Latency is not judged (the JVM is compiling); loss is.
func (g perfGate) jitWarmUp(ctx context.Context, env *gates.Env, r *gates.Result, base loadgen.Config) bool {
	o := options(env.Perf).withDefaults()
	cfg := base
	cfg.Rate, cfg.Duration, cfg.SDKClientsPercent, cfg.SDKLane, cfg.Progress = o.jitWarmRate(), perfJITWarm, 0, nil, nil
	cfg.Label = "warm-up (JIT)"
	env.Progressf("warm-up (JIT): %s for %s over %d connections", o.what(cfg.Rate), cfg.Duration, cfg.Connections)
	rep, err := g.run(ctx, cfg)
	if err != nil {
		r.Fail(fmt.Errorf("gates: perf JIT warm-up: %w", err))
		return false
	}
	c := rep.Counts
	ok := c.Acked > 0 && c.Missing == 0 && c.DuplicatesAfterDedup == 0
	if rep.Room != nil { // rooms: nothing durable to miss; every member must still read every event
		ok = c.Acked > 0 && rep.Room.DeliveredEvents == rep.Room.ExpectedEvents
	}
	return r.Check("warm-up (JIT)", ok, "%d sent, %d acked, %d missing, %d dup after dedup; send→ACK p99 %.1f ms (latency not judged while the broker compiles)",
		c.Sent, c.Acked, c.Missing, c.DuplicatesAfterDedup, rep.Segments["send_ack"].P99Ms)
}

// jitWarmRate is the JIT warm-up's rate: the run's rate capped at perfJITWarmMax, in mailbox
// entries per second in group mode (a group message is GroupSize entries, a 1:1 one two), and
// with FindMax in group mode the search's first step — the default rate means 1:1 messages, and
// 250 messages/s to groups of 1,000 would be a quarter of a million entries a second.
func (o options) jitWarmRate() float64 {
	if o.Mode == loadgen.ModeRoom { // events, each RoomSize deliveries: the search's first step at most
		if o.FindMax {
			return o.findMaxStartRate()
		}
		return min(o.Rate, o.findMaxStartRate())
	}
	if o.Mode != loadgen.ModeGroup {
		return min(o.Rate, perfJITWarmMax)
	}
	if o.FindMax {
		return o.findMaxStartRate()
	}
	return min(o.Rate, sig3(perfJITWarmMax*2/float64(max(o.GroupSize, 2))))
}

// quietWait waits for a quiet machine (bounded) and records what it saw as metrics.
func (g perfGate) quietWait(ctx context.Context, env *gates.Env, r *gates.Result, within time.Duration) {
	q := g.quiet(ctx, loadgen.QuietOptions{Within: within}, func(s string) { env.Progressf("%s", s) })
	env.Progressf("%s", q.Detail)
	r.Metric("quiet_reached", b2f(q.Reached))
	r.Metric("quiet_wait_s", q.WaitedS)
	r.Metric("quiet_load1", q.Load1)
	r.Metric("quiet_idle_pct", q.IdlePct)
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

func orNone(s string) string {
	if s == "" {
		return "none (the ladder topped out)"
	}
	return s
}

// New is gate 5 as the release run deploys it: with the SDK lane wired (a bare perfGate has
// none, and every run with SDK clients fails its "sdk lane" check).
func New() gates.Gate { return perfGate{newLane: sdklane.New} }

// HasSDKLane reports whether g is gate 5 with its SDK lane wired.
func HasSDKLane(g gates.Gate) bool {
	p, ok := g.(perfGate)
	return ok && p.newLane != nil
}
