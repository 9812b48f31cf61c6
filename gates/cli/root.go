// Package cli holds the cobra commands of qim-gate. cmd/qim-gate only wires them to os.Args.
package cli

import (
	"github.com/spf13/cobra"

	"github.com/qim-dev/qim/gates/harnessvars"
	"github.com/qim-dev/qim/services/cmdline"
)

// NewRootCmd builds the qim-gate command tree.
func NewRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:   "qim-gate",
		Short: "Q-IM release gates and the real integration stack",
		Long: `qim-gate starts isolated real server stacks (Redis, Kafka, Cassandra) and runs the
release gates against them. A gate that cannot run fails; missing evidence is never a pass.

Examples:
  qim-gate list
  qim-gate run lint tests --report-dir out/gates
  qim-gate run --full
  qim-gate stack up --with-cql --json
  qim-gate stack down --project qim-it-1a2b3c
  qim-gate stack gc`,
		SilenceUsage: true,
	}
	root.AddCommand(newListCmd(), newRunCmd(&runOptions{}), newABCmd(&abOptions{}), newStackCmd(), newDemoCmd(), newHistoryCmd(&historyOptions{}))
	cmdline.Setup(root, cmdline.RefuseUnknownEnv(harnessvars.CheckEnviron))
	return root
}
