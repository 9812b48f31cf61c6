package cli

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/qim-dev/qim/chaos/check"
	"github.com/qim-dev/qim/chaos/history"
)

type historyOptions struct {
	faultUs, healUs int64
	stallAfter      time.Duration
	examples        int
}

// newHistoryCmd re-judges a recorded chaos history: the checker is pure, so a cell's verdict
// can be reproduced (and a finding's examples read) from its log alone.
func newHistoryCmd(o *historyOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "check-history FILE",
		Short: "Run the chaos checker over a recorded history (<cell>.history.log.zst)",
		Long: `Reads a history a chaos cell wrote (zstd text log, one event per line) and prints the
checker's summary and the examples of every verdict it found. Pass the cell's fault_us and
heal_us from chaos.json to judge stalls the way the cell did (without them, the fault itself
shows up as STALLED). Exit status 1 if the history fails.

Examples:
  qim-gate check-history out/release/chaos/kafka-kill.history.log.zst
  zstdcat out/release/chaos/kafka-kill.history.log.zst | grep ' 01a22fd2bbaf0000031a'`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ev, err := history.ReadFile(args[0])
			if err != nil {
				return err
			}
			res, err := check.Check(ev, check.Options{FaultUs: o.faultUs, HealUs: o.healUs, StallAfter: o.stallAfter, Examples: o.examples})
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "%d events: %s\n", len(ev), res.Summary())
			for v, ex := range res.Examples {
				for _, f := range ex {
					fmt.Fprintf(out, "  %s %s\n", v, f)
				}
			}
			if !res.Passed {
				return ErrGatesFailed
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.Int64Var(&o.faultUs, "fault-us", 0, "when the fault was injected, Unix µs (0: no fault)")
	f.Int64Var(&o.healUs, "heal-us", 0, "when the fault healed, Unix µs")
	f.DurationVar(&o.stallAfter, "stall-after", check.DefaultStallAfter, "no progress this long after the heal is STALLED")
	f.IntVar(&o.examples, "examples", check.DefaultExamples, "examples printed per verdict")
	return cmd
}
