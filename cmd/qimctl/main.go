// Command qimctl is the Q-IM operator tool. main only wires the subcommands; each lives in its own
// file with an options struct bound to its flags.
package main

import (
	"os"

	"github.com/spf13/cobra"

	"github.com/qim-dev/qim/services/buildinfo"
)

func main() {
	if err := newRootCmd().Execute(); err != nil {
		os.Exit(1)
	}
}

func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:          "qimctl",
		Short:        "Q-IM operator tool",
		SilenceUsage: true,
	}
	root.AddCommand(newTokenCmd(), newAuditCmd(), newMembershipCmd(), newCQLCmd(), newHistoryCmd(), newCertsCmd(),
		newKafkaCmd(), newHealthzCmd(&healthzOptions{}))
	buildinfo.SetVersion(root)
	return root
}
