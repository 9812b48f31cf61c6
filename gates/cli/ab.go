package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/gates/ab"
	"github.com/qim-dev/qim/gates/stack"
)

type abOptions struct {
	run       runOptions
	candidate string
	rounds    int
	// candidateOneProcess deploys only the candidate as one `qim all` process.
	candidateOneProcess bool
}

func newABCmd(o *abOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "ab BASELINE",
		Short: "Compare the perf gate of two commits, alternating runs on fresh stacks, in one report",
		Long: `Builds the services of BASELINE and of --candidate (default HEAD) from clean git worktrees and runs
the perf gate on a fresh stack for each, alternating (baseline first in odd rounds, the candidate
first in even ones), with this checkout's harness and the same options for every run. Writes
<report-dir>/ab.json, ab.html (a bar per run) and prints a table: each run's value, each side's
median and candidate ÷ baseline, for the SLO verdict, find-max, latencies, CPU per message by
process, Redis commands and broker requests per message. Only runs of one sitting compare: this machine's class
changes from day to day.

Examples:
  qim-gate ab 475a8d3 --rounds 3 --rate 250 --duration 180s
  qim-gate ab 475a8d3 --rounds 3 --find-max --sdk-clients 0
  qim-gate ab HEAD --candidate-one-process --rounds 3 --find-max   # the qim all topology`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return o.runAB(cmd, args[0]) },
	}
	f := cmd.Flags()
	f.StringVar(&o.candidate, "candidate", "HEAD", "the commit compared against BASELINE")
	f.IntVar(&o.rounds, "rounds", 3, "rounds of one baseline and one candidate run")
	f.StringVar(&o.run.reportDir, "report-dir", "", "report directory (default out/ab/<UTC timestamp>)")
	f.StringVar(&o.run.root, "root", ".", "repository root (the harness)")
	f.BoolVar(&o.run.withCQL, "with-cql", false, "run both sides with a CQL node and the HistoryArchiver (the baseline must have them)")
	f.IntVar(&o.run.shards, "dispatch-shards", contract.MailboxShardsDefault, "partitions of qim.dispatch of every run's stack")
	addPerfFlags(f, &o.run)
	f.BoolVar(&o.candidateOneProcess, "candidate-one-process", false,
		"deploy only the candidate as one `qim all` process (compares the topology too; --one-process: both sides)")
	return cmd
}

func (o *abOptions) runAB(cmd *cobra.Command, baseline string) error {
	if err := o.run.perfModeOf(cmd); err != nil {
		return err
	}
	if err := o.run.checkOneProcess(nil); err != nil {
		return err
	}
	if o.candidateOneProcess && o.run.perf.Profile {
		return fmt.Errorf("%w: --profile needs a process per service", errOneProcess)
	}
	if o.run.reportDir == "" {
		o.run.reportDir = filepath.Join(o.run.root, "out", "ab", time.Now().UTC().Format("20060102T150405Z"))
	}
	if err := os.MkdirAll(o.run.reportDir, 0o755); err != nil {
		return fmt.Errorf("qim-gate ab: %w", err)
	}
	_, err := ab.AB(cmd.Context(), ab.ABOptions{Root: o.run.root, Baseline: baseline, Candidate: o.candidate,
		Rounds: o.rounds, ReportDir: o.run.reportDir, Progress: os.Stderr, Perf: o.run.perf,
		OneProcess: o.run.oneProcess, CandidateOneProcess: o.candidateOneProcess, GoMaxProcs: o.run.goMaxProcs,
		NewStack: func() stack.Stack {
			return stack.NewProcess(stack.WithCQL(o.run.withCQL), stack.WithDispatchShards(o.run.shards), stack.WithProgress(os.Stderr))
		}})
	return err
}
