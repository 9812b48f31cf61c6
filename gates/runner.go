package gates

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/qim-dev/qim/gates/stack"
)

// RunOptions configures one `qim-gate run`.
type RunOptions struct {
	Root string // repository root (default ".")
	// SUTRoot is the checkout the qim binary under test is built from (default Root): an A/B
	// run measures an older commit's services with this harness (ab.go).
	SUTRoot string
	// OneProcess deploys the services as one `qim all` process; copied into Env.OneProcess.
	OneProcess bool
	// GoMaxProcs is the services' GOMAXPROCS; copied into Env.GoMaxProcs.
	GoMaxProcs int
	// Instances is the deployment's instances of each scaled service; copied into Env.Instances.
	Instances int
	ReportDir string    // required; created if missing
	Progress  io.Writer // default os.Stderr
	// NewStack builds the run's stack on first use (default: the process provider).
	NewStack func() stack.Stack
	// Heartbeat is how often a long gate prints "still running" (default 30 s).
	Heartbeat time.Duration
	// Perf configures gate 5 (perf); copied into Env.Perf.
	Perf PerfOptions
	// Chaos configures the chaos gate; copied into Env.Chaos.
	Chaos ChaosOptions
	// Soak configures the soak gate; copied into Env.Soak.
	Soak SoakOptions
	// Skip names gates not to run, each with its reason (required). A skipped gate is reported
	// as skipped with the reason, never as passed, and does not fail the run.
	Skip map[string]string
}

// Summary is the outcome of a run. Passed means every gate that ran passed and at least one ran;
// Skipped lists the gates that did not run.
type Summary struct {
	Passed  bool      `json:"passed"`
	Skipped []string  `json:"skipped,omitempty"`
	Results []*Result `json:"results"`
	// Source is the command, commit and machine of the run; FinishedAt when the report was written.
	Source     RunSource `json:"source"`
	FinishedAt time.Time `json:"finished_at"`
	// reportDir is where report.html goes: its links to the gates' own reports are relative to it.
	reportDir string
}

// Run executes gates in order, writes <ReportDir>/<gate>.json for each and report.html for the
// run, and tears down the stack it started. It keeps going after a failing gate so the report
// shows everything, but the run fails if any gate failed.
func Run(ctx context.Context, gs []Gate, o RunOptions) (Summary, error) {
	if o.ReportDir == "" {
		return Summary{}, fmt.Errorf("gates: report dir is required")
	}
	if err := os.MkdirAll(o.ReportDir, 0o755); err != nil {
		return Summary{}, fmt.Errorf("gates: create report dir: %w", err)
	}
	if o.Root == "" {
		o.Root = "."
	}
	if o.Progress == nil {
		o.Progress = os.Stderr
	}
	if o.Heartbeat <= 0 {
		o.Heartbeat = 30 * time.Second
	}
	lazy := &lazyStack{newStack: o.NewStack}
	defer lazy.down(o.Progress)
	if o.SUTRoot == "" {
		o.SUTRoot = o.Root
	}
	env := &Env{Root: o.Root, SUTRoot: o.SUTRoot, OneProcess: o.OneProcess, GoMaxProcs: o.GoMaxProcs, Instances: o.Instances, ReportDir: o.ReportDir, Progress: o.Progress, Stack: lazy.get, Perf: o.Perf, Chaos: o.Chaos, Soak: o.Soak}
	deploy := &lazyDeployment{env: env}
	defer deploy.stop(o.Progress) // runs before the stack goes down
	env.Deployment = deploy.get

	sum := Summary{Source: DescribeRun(ctx, o.Root), reportDir: o.ReportDir}
	ran := 0
	for i, g := range gs {
		fmt.Fprintf(o.Progress, "[%d/%d] %s — %s\n", i+1, len(gs), g.Name(), g.Title())
		if reason, skip := o.Skip[g.Name()]; skip {
			r := &Result{Gate: g.Name(), Title: g.Title(), StartedAt: time.Now().UTC(), Skipped: true, SkipReason: reason,
				Metrics: map[string]float64{}, Checks: []Check{}}
			fmt.Fprintf(o.Progress, "[%d/%d] %s SKIPPED: %s\n", i+1, len(gs), g.Name(), reason)
			if err := writeJSON(filepath.Join(o.ReportDir, g.Name()+".json"), r); err != nil {
				return sum, err
			}
			sum.Skipped = append(sum.Skipped, g.Name())
			sum.Results = append(sum.Results, r)
			continue
		}
		ran++
		if ran == 1 {
			sum.Passed = true
		}
		r := RunOne(ctx, g, env, o.Heartbeat)
		status := "PASS"
		if !r.Passed {
			status = "FAIL"
			sum.Passed = false
		}
		fmt.Fprintf(o.Progress, "[%d/%d] %s %s in %.1fs (%d checks)%s\n", i+1, len(gs), g.Name(), status,
			r.DurationS, len(r.Checks), errSuffix(r.Error))
		if err := writeJSON(filepath.Join(o.ReportDir, g.Name()+".json"), r); err != nil {
			return sum, err
		}
		sum.Results = append(sum.Results, r)
	}
	sum.FinishedAt = time.Now().UTC()
	if err := writeHTML(filepath.Join(o.ReportDir, "report.html"), sum); err != nil {
		return sum, err
	}
	fmt.Fprintf(o.Progress, "report: %s\n", filepath.Join(o.ReportDir, "report.html"))
	for _, f := range sum.Failures() { // last, where a truncated CI log still shows them
		fmt.Fprintf(o.Progress, "FAILED %s\n", f)
	}
	return sum, nil
}

func errSuffix(e string) string {
	if e == "" {
		return ""
	}
	return ": " + e
}

// RunOne runs a gate with a heartbeat and turns a panic into a failed gate.
func RunOne(ctx context.Context, g Gate, env *Env, every time.Duration) (r *Result) {
	start := time.Now()
	r = &Result{Gate: g.Name(), Title: g.Title(), StartedAt: start.UTC()}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				fmt.Fprintf(env.Progress, "  … %s still running (%s)\n", g.Name(), time.Since(start).Round(time.Second))
			}
		}
	}()
	defer func() {
		if p := recover(); p != nil {
			r.Fail(fmt.Errorf("gates: %s panicked: %v", g.Name(), p))
		}
		close(done)
		wg.Wait()
		r.finish(start)
	}()
	g.Run(ctx, env, r)
	return r
}

func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("gates: encode %s: %w", path, err)
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("gates: write %s: %w", path, err)
	}
	return nil
}

// lazyStack starts the run's stack on first use and stops it when the run ends.
type lazyStack struct {
	mu       sync.Mutex
	newStack func() stack.Stack
	s        stack.Stack
	err      error
}

func (l *lazyStack) get(ctx context.Context) (stack.Stack, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.s != nil || l.err != nil {
		return l.s, l.err
	}
	if l.newStack == nil {
		l.err = fmt.Errorf("gates: no stack provider configured")
		return nil, l.err
	}
	s := l.newStack()
	if err := s.Up(ctx); err != nil {
		_ = s.Down(context.Background())
		l.err = fmt.Errorf("gates: stack up: %w", err)
		return nil, l.err
	}
	l.s = s
	return s, nil
}

func (l *lazyStack) down(progress io.Writer) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.s == nil {
		return
	}
	if err := l.s.Down(context.Background()); err != nil {
		fmt.Fprintf(progress, "stack down: %v\n", err)
	}
}
