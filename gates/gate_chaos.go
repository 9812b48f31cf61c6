package gates

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/qim-dev/qim/gates/chaos"
	"github.com/qim-dev/qim/gates/stack"
	"github.com/qim-dev/qim/gates/svc"
)

// ChaosOptions configure the chaos gate from `qim-gate run` flags.
type ChaosOptions struct {
	// Cells selects cells by name ("quick" for the one-kill-per-process subset, "nightly" for the
	// cells kept out of the release run); empty runs every cell but the nightly ones.
	Cells []string
	// CQL gives the chaos stack a CQL node, so every cell's deployment runs the tiered backend and
	// the HistoryArchiver as the release deployment does, and the archive cells run (without it
	// they are reported skipped). Set from --with-cql.
	CQL bool
	// Repeat runs the selection that many times, pass after pass, and reports each cell's
	// stability (runs passed of runs made) and each pass's verdict; the report directory then
	// holds chaos/stability.md. Set from --repeat; default 1.
	Repeat int
}

// chaosGate runs the fault matrix (chaos/) on a stack of its own: its cells kill the broker and
// both Redis servers, which the run's shared deployment must not see.
//
// Invariants: the qim binary is built with -tags failpoints into the chaos stack's directory
// (never the shared deployment's binary, which has none); every cell's verdict comes from the
// history checker, the orphan audit over its Outbox range and gate 8's invariant judgement of
// its own deployment; a cell that did not run fails the gate.
//
// Rejected: running the cells on the run's shared stack. The release gates after this one would
// judge a deployment whose servers the matrix killed, so a defect would be blamed on the wrong
// gate (or hidden by a restart).
type chaosGate struct{}

func (chaosGate) Name() string { return "chaos" }
func (chaosGate) Title() string {
	return "fault matrix under load: history checker, orphan audit, invariants"
}

func (chaosGate) Run(ctx context.Context, env *Env, r *Result) {
	disks, err := chaos.SmallDisks(env.Chaos.Cells)
	if err != nil {
		r.Fail(err)
		return
	}
	opts := []stack.Option{stack.WithCQL(env.Chaos.CQL), stack.WithProgress(env.Progress)}
	for _, server := range disks {
		opts = append(opts, stack.WithSmallDisk(server, chaos.SmallDiskSize(server)))
	}
	st := stack.NewProcess(opts...)
	defer func() { _ = st.Down(context.Background()) }()
	env.Progressf("starting the chaos stack")
	if err := st.Up(ctx); err != nil {
		r.Fail(err)
		return
	}
	env.Progressf("building qim with failpoints")
	bin, err := svc.Build(ctx, env.Root, st.Endpoints().Dir, "failpoints")
	if err != nil {
		r.Fail(err)
		return
	}
	rep, err := chaos.Run(ctx, chaos.Options{Root: env.Root, Bin: bin, Stack: st, Cells: env.Chaos.Cells, ReportDir: env.ReportDir,
		Repeat: env.Chaos.Repeat, Source: runSource(ctx, env.Root), Progress: env.Progress, Invariants: invariantsJudge})
	if err != nil {
		r.Fail(err)
		return
	}
	r.Artifacts = append(r.Artifacts, filepath.Join("chaos", "chaos.html"), filepath.Join("chaos", "chaos.json"))
	r.Metric("cells", float64(len(rep.Cells)))
	if len(rep.Stability) > 0 {
		r.Artifacts = append(r.Artifacts, filepath.Join("chaos", "stability.md"))
	}
	for _, c := range rep.Cells {
		name := c.Name
		if env.Chaos.Repeat > 1 {
			name = fmt.Sprintf("%s#%d", c.Name, c.Pass)
		}
		if c.Skipped != "" {
			r.Skip(name, "%s", c.Skipped)
			continue
		}
		r.Check(name, c.Passed, "%s", c.Summary())
		r.Metric(name+".recovery_ack_ms", c.RecoveryAckMs)
		r.Metric(name+".drain_ms", c.DrainMs)
		r.Metric(name+".unknown", float64(c.Load.Unknown))
	}
}

// runSource names the command, tree and machine of a run for its stability table.
func runSource(ctx context.Context, root string) chaos.StabilityRun {
	src := DescribeRun(ctx, root)
	return chaos.StabilityRun{Command: src.Command, Commit: src.Commit, Machine: src.Machine}
}

// invariantsJudge is gate 8's judgement of one deployment, for the chaos cells.
func invariantsJudge(ctx context.Context, set *svc.Set) (bool, string) {
	r := &Result{}
	judgeDeployment(ctx, r, set, nil)
	var failed []string
	for _, c := range r.Checks {
		if !c.Passed && !c.Skipped {
			failed = append(failed, c.Name+": "+c.Detail)
		}
	}
	if len(r.Checks) == 0 {
		return false, "no invariant evidence"
	}
	if len(failed) > 0 {
		return false, strings.Join(failed, "; ")
	}
	return true, fmt.Sprintf("%d checks: every always-zero counter 0, every /healthz 200", len(r.Checks))
}
