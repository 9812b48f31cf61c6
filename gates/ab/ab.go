package ab

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/qim-dev/qim/gates"
	"github.com/qim-dev/qim/gates/perf"
	"github.com/qim-dev/qim/gates/release"
	"github.com/qim-dev/qim/gates/stack"
)

// ABOptions configure an A/B perf comparison (`qim-gate ab BASELINE`).
type ABOptions struct {
	// Root is the repository (the harness: gates and loadgen are this checkout's). Default ".".
	Root string
	// Baseline is the commit compared against (any git revision). Required.
	Baseline string
	// Candidate is the commit measured against it. Default "HEAD".
	Candidate string
	// Rounds of one baseline and one candidate run each, default 3. Odd rounds run the baseline
	// first, even rounds the candidate first, so a machine that drifts over the sitting (a busy
	// neighbour, a warming disk) does not favour one side.
	Rounds int
	// ReportDir receives one report dir per run, the two source trees, ab.json and ab.html.
	ReportDir string
	Progress  io.Writer
	// Perf is the perf gate's configuration, the same for every run.
	Perf gates.PerfOptions
	// NewStack builds one fresh stack per run.
	NewStack func() stack.Stack
	// OneProcess deploys both sides as one `qim all` process; CandidateOneProcess only the
	// candidate (the topology is then what the comparison measures).
	OneProcess, CandidateOneProcess bool
	// GoMaxProcs is every run's Env.GoMaxProcs.
	GoMaxProcs int
}

// ErrAB is wrapped by every A/B set-up error.
var ErrAB = errors.New("gates: A/B")

// abSide is one of the two builds compared.
type abSide struct {
	Name   string `json:"name"` // "baseline" or "candidate"
	Ref    string `json:"ref"`
	Commit string `json:"commit"`
	// OneProcess: this side's services ran as one `qim all` process.
	OneProcess bool `json:"one_process"`
	dir        string
}

// label is the side's commit and, when it is not a process per service, its topology.
func (s abSide) label() string {
	if s.OneProcess {
		return short(s.Commit) + " (qim all)"
	}
	return short(s.Commit)
}

// AB runs the perf gate alternately on a fresh stack with the baseline's and the candidate's
// services, the harness (this checkout's gates, loadgen and stack) unchanged, and writes one
// comparison report.
//
// Invariants: both sides are built from clean git worktrees of their commits (never from the
// working tree, whose uncommitted state no commit names); every run gets a fresh stack and the
// same options; a run that fails is reported with its failures, never dropped from the table.
//
// Rejected: comparing a run of today with a number in docs/perf.md. This machine's class
// changes from day to day, so only runs of one sitting, alternated, compare.
func AB(ctx context.Context, o ABOptions) (*ABReport, error) {
	if o.Root == "" {
		o.Root = "."
	}
	if o.Candidate == "" {
		o.Candidate = "HEAD"
	}
	if o.Rounds <= 0 {
		o.Rounds = 3
	}
	if o.Baseline == "" || o.ReportDir == "" || o.NewStack == nil {
		return nil, fmt.Errorf("%w: a baseline, a report dir and a stack are required", ErrAB)
	}
	if o.Progress == nil {
		o.Progress = os.Stderr
	}
	sides, cleanup, err := checkoutSides(ctx, o)
	if err != nil {
		return nil, err
	}
	defer cleanup()
	rep := &ABReport{StartedAt: time.Now().UTC(), Baseline: sides[0], Candidate: sides[1], Perf: abPerfOptions(o.Perf)}
	for round := 1; round <= o.Rounds; round++ {
		order := []abSide{sides[0], sides[1]}
		if round%2 == 0 {
			order[0], order[1] = order[1], order[0]
		}
		for _, side := range order {
			run, err := abRun(ctx, o, side, round)
			if err != nil {
				return rep, err
			}
			rep.Runs = append(rep.Runs, run)
			fmt.Fprintf(o.Progress, "ab: round %d/%d %s (%s): %s\n", round, o.Rounds, side.Name, side.label(), run.line())
		}
	}
	rep.DurationS = time.Since(rep.StartedAt).Seconds()
	if err := rep.write(o.ReportDir); err != nil {
		return rep, err
	}
	fmt.Fprintf(o.Progress, "\n%s\nab: %s\n", rep.Markdown(), filepath.Join(o.ReportDir, "ab.html"))
	return rep, nil
}

// abGate is the registry's perf gate, the one `qim-gate run perf` runs: a perf gate without the
// SDK lane made every ab run with --sdk-clients above 0 fail "SDK lane not available".
func abGate() (gates.Gate, error) {
	g, ok := release.Lookup(perf.New().Name())
	if !ok {
		return nil, fmt.Errorf("%w: the registry has no perf gate", ErrAB)
	}
	return g, nil
}

// abRun is one perf gate run of one side on a fresh stack.
func abRun(ctx context.Context, o ABOptions, side abSide, round int) (ABRun, error) {
	dir := filepath.Join(o.ReportDir, fmt.Sprintf("round%d-%s", round, side.Name))
	fmt.Fprintf(o.Progress, "ab: round %d/%d: %s %s on a fresh stack\n", round, o.Rounds, side.Name, short(side.Commit))
	perf, err := abGate()
	if err != nil {
		return ABRun{}, err
	}
	sum, err := gates.Run(ctx, []gates.Gate{perf}, gates.RunOptions{Root: o.Root, SUTRoot: side.dir, OneProcess: side.OneProcess, GoMaxProcs: o.GoMaxProcs,
		ReportDir: dir, Progress: o.Progress, NewStack: o.NewStack, Perf: o.Perf})
	if err != nil {
		return ABRun{}, fmt.Errorf("%w: round %d %s: %w", ErrAB, round, side.Name, err)
	}
	run := ABRun{Round: round, Side: side.Name, Commit: side.Commit, Dir: filepath.Base(dir)}
	if len(sum.Results) == 1 {
		r := sum.Results[0]
		run.Passed, run.Metrics, run.Error = r.Passed, r.Metrics, r.Error
		for _, c := range r.FailedChecks() {
			run.Failed = append(run.Failed, c.Name+": "+c.Detail)
		}
	}
	return run, nil
}

// checkoutSides resolves both revisions and adds a detached worktree of each under the report
// dir; cleanup removes them.
func checkoutSides(ctx context.Context, o ABOptions) ([2]abSide, func(), error) {
	sides := [2]abSide{{Name: "baseline", Ref: o.Baseline, OneProcess: o.OneProcess},
		{Name: "candidate", Ref: o.Candidate, OneProcess: o.OneProcess || o.CandidateOneProcess}}
	var added []string
	cleanup := func() {
		for _, d := range added {
			_, _ = gates.Git(ctx, o.Root, "worktree", "remove", "--force", d)
		}
	}
	for i := range sides {
		sha, err := gates.Git(ctx, o.Root, "rev-parse", "--verify", sides[i].Ref+"^{commit}")
		if err != nil {
			cleanup()
			return sides, nil, fmt.Errorf("%w: %s is not a commit: %w", ErrAB, sides[i].Ref, err)
		}
		sides[i].Commit = sha
		dir, err := filepath.Abs(filepath.Join(o.ReportDir, "src", sides[i].Name))
		if err != nil {
			cleanup()
			return sides, nil, err
		}
		if _, err := gates.Git(ctx, o.Root, "worktree", "add", "--detach", "--force", dir, sha); err != nil {
			cleanup()
			return sides, nil, fmt.Errorf("%w: check out %s: %w", ErrAB, sides[i].Ref, err)
		}
		added, sides[i].dir = append(added, dir), dir
	}
	return sides, cleanup, nil
}

func short(sha string) string { return sha[:min(len(sha), 7)] }
