package gates

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/qim-dev/qim/gates/stack"
	"github.com/qim-dev/qim/gates/svc"
)

// Check is one piece of evidence a gate recorded.
type Check struct {
	Name   string `json:"name"`
	Passed bool   `json:"passed"`
	Detail string `json:"detail"`
	// Skipped: the check could not run here (Detail says why). It is not a pass, and it does not
	// fail the gate; the reports show it as SKIPPED.
	Skipped bool `json:"skipped,omitempty"`
}

// Result is what <report-dir>/<gate>.json holds. Passed is computed by Finish, never set by a gate.
type Result struct {
	Gate      string             `json:"gate"`
	Title     string             `json:"title"`
	Passed    bool               `json:"passed"`
	DurationS float64            `json:"duration_s"`
	StartedAt time.Time          `json:"started_at"`
	Metrics   map[string]float64 `json:"metrics"`
	Checks    []Check            `json:"checks"`
	Error     string             `json:"error,omitempty"`
	Artifacts []string           `json:"artifacts,omitempty"`
	// Skipped gates did not run: the caller named them with a reason (SkipReason). A skipped
	// gate never counts as passed; it only does not fail the run, and every report says so.
	Skipped    bool   `json:"skipped,omitempty"`
	SkipReason string `json:"skip_reason,omitempty"`

	reportDir string // report.html's directory, which its links to Artifacts are relative to
}

// Check appends a piece of evidence and returns ok, so gates can write `if !r.Check(...) {...}`.
func (r *Result) Check(name string, ok bool, format string, args ...any) bool {
	r.Checks = append(r.Checks, Check{Name: name, Passed: ok, Detail: fmt.Sprintf(format, args...)})
	return ok
}

// Skip records a check that could not run on this stack, with the reason.
func (r *Result) Skip(name, format string, args ...any) {
	r.Checks = append(r.Checks, Check{Name: name, Skipped: true, Detail: "SKIPPED: " + fmt.Sprintf(format, args...)})
}

// Metric records a numeric measurement.
func (r *Result) Metric(name string, v float64) {
	if r.Metrics == nil {
		r.Metrics = map[string]float64{}
	}
	r.Metrics[name] = v
}

// FailedChecks returns the checks that ran and failed, in the order they were recorded.
func (r *Result) FailedChecks() []Check {
	var out []Check
	for _, c := range r.Checks {
		if !c.Skipped && !c.Passed {
			out = append(out, c)
		}
	}
	return out
}

// Fail records the error that stopped the gate.
func (r *Result) Fail(err error) {
	if err != nil && r.Error == "" {
		r.Error = err.Error()
	}
}

// finish decides Passed: no error, at least one check, every check passed. Missing evidence is a
// failure, never a pass.
func (r *Result) finish(start time.Time) {
	r.DurationS = time.Since(start).Seconds()
	ran := 0
	r.Passed = r.Error == ""
	for _, c := range r.Checks {
		if !c.Skipped {
			r.Passed = r.Passed && c.Passed
			ran++
		}
	}
	r.Passed = r.Passed && ran > 0
	if r.Metrics == nil {
		r.Metrics = map[string]float64{}
	}
	if r.Checks == nil {
		r.Checks = []Check{}
	}
}

// Env is what a gate gets from the runner.
type Env struct {
	Root    string // repository root
	SUTRoot string // the checkout the deployment's qim binary is built from ("" = Root)
	// OneProcess deploys the services as one `qim all` process (svc.StartOneProcess), the
	// small-deployment topology, instead of a process per service.
	OneProcess bool
	// GoMaxProcs is the GOMAXPROCS of each service process: 0 its share of the machine's cores
	// (serviceGoMaxProcs), N > 0 exactly N, negative Go's default.
	GoMaxProcs int
	// Instances is how many ConversationWriters, MailboxNodes and SessionProjections the
	// deployment runs (svc.NewInstances; 0 means 1).
	Instances int
	ReportDir string    // where artifacts go
	Progress  io.Writer // human progress lines
	// Stack returns the run's stack, starting it on first use; gates that need no servers never
	// pay for one. Every run gets a fresh qim-it-* stack, torn down when the run ends.
	Stack func(ctx context.Context) (stack.Stack, error)
	// Deployment returns every service started on the run's stack, building and starting them on
	// first use; gates share one deployment per run.
	Deployment func(ctx context.Context) (*svc.Set, error)
	// Perf configures gate 5 (perf) from `qim-gate run` flags.
	Perf PerfOptions
	// Chaos configures the chaos gate from `qim-gate run` flags.
	Chaos ChaosOptions
	// Soak configures the soak gate (gate_soak.go) from `qim-gate run soak` flags.
	Soak SoakOptions
}

// deployedStack is the run's deployment and the stack under it (each started on first use).
func (e *Env) deployedStack(ctx context.Context) (*svc.Set, stack.Stack, error) {
	set, err := e.Deployment(ctx)
	if err != nil {
		return nil, nil, err
	}
	st, err := e.Stack(ctx)
	if err != nil {
		return nil, nil, err
	}
	return set, st, nil
}

// Progressf writes one progress line.
func (e *Env) Progressf(format string, args ...any) {
	if e.Progress != nil {
		fmt.Fprintf(e.Progress, "  · "+format+"\n", args...)
	}
}

// Gate is one release gate.
type Gate interface {
	Name() string  // short id used on the command line and as the report file name
	Title() string // one line for people
	Run(ctx context.Context, env *Env, r *Result)
}
