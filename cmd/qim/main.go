// Command qim runs the Q-IM server processes. Each subcommand runs one service configured from
// QIM_* environment variables (see each service's Config).
package main

import (
	"context"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/qim-dev/qim/services/writer"
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
	root.AddCommand(newWriterCmd())
	return root
}

func newLogger() *slog.Logger {
	return slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
}

func newWriterCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "writer",
		Short: "Run the ConversationWriter (durable commit path, Outbox, history reads)",
		Long: `Runs the ConversationWriter. Configuration comes from the environment:

  QIM_REDIS_ADDR      core Redis with commit facts (AOF, appendfsync always)   required
  QIM_KAFKA_BROKERS   Kafka-protocol brokers hosting qim.outbox                required
  QIM_WRITER_LISTEN   gRPC address (default 127.0.0.1:7101)
  QIM_WRITER_METRICS  /metrics and /healthz address (default 127.0.0.1:9101)
  QIM_REGION_ID, QIM_WRITER_ID, QIM_WRITER_REQUEST_INFLIGHT_LIMIT, QIM_WRITER_BATCH_MAX

Example:
  QIM_REDIS_ADDR=127.0.0.1:6380 QIM_KAFKA_BROKERS=127.0.0.1:9092 qim writer`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := writer.FromEnv()
			if err != nil {
				return err
			}
			svc, err := writer.New(cfg, newLogger())
			if err != nil {
				return err
			}
			return svc.Run(cmd.Context())
		},
	}
}
