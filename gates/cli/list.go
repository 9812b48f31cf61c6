package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/qim-dev/qim/gates"
	"github.com/qim-dev/qim/gates/release"
)

func newListCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List the gates in release order",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			for i, g := range release.Registry() {
				fmt.Fprintf(cmd.OutOrStdout(), "%2d  %-16s %s\n", i+1, g.Name(), g.Title())
			}
			for _, g := range gates.OnDemand() {
				fmt.Fprintf(cmd.OutOrStdout(), " -  %-16s %s (by name only)\n", g.Name(), g.Title())
			}
			return nil
		},
	}
}
