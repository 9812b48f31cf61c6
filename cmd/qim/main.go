// Command qim runs the Q-IM server processes. Each subcommand runs one service configured from
// QIM_* environment variables (see each service's Config); `qim all` runs every service in one
// process for demos, still against the real Redis and Kafka endpoints it is given.
package main

import (
	"context"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
	"golang.org/x/sync/errgroup"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := newRootCmd().ExecuteContext(ctx)
	stop()
	if err != nil {
		os.Exit(1)
	}
}

func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:          "qim",
		Short:        "Q-IM server processes",
		SilenceUsage: true,
	}
	for _, s := range services() {
		root.AddCommand(serviceCmd(s))
	}
	root.AddCommand(newAllCmd())
	return root
}

func newLogger(service string) *slog.Logger {
	return slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo})).With("proc", service)
}

// service is one runnable service: configuration from the environment, then Run until ctx ends.
type service struct {
	name, short, long string
	run               func(ctx context.Context, log *slog.Logger) error
}

func serviceCmd(s service) *cobra.Command {
	return &cobra.Command{
		Use:   s.name,
		Short: s.short,
		Long:  s.long,
		Args:  cobra.NoArgs,
		RunE:  func(cmd *cobra.Command, _ []string) error { return s.run(cmd.Context(), newLogger(s.name)) },
	}
}

func newAllCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "all",
		Short: "Run every service in one process (demos; production runs one service per process)",
		Long: `Runs the writer, mailbox, fanout, session and gateway in one process, each configured from
the same environment as its own subcommand (the gateway needs QIM_WRITER_ADDR, QIM_MAILBOX_ADDR and
QIM_SESSION_ADDR pointing at the others). Any service stopping stops them all.

Example:
  eval "$(qim-gate stack up)"; QIM_TOKEN_SECRET=... qim all`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			g, ctx := errgroup.WithContext(cmd.Context())
			for _, s := range services() {
				g.Go(func() error { return s.run(ctx, newLogger(s.name)) })
			}
			return g.Wait()
		},
	}
}
