package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/qim-dev/qim/services"
	"github.com/qim-dev/qim/services/archiver"
)

// historyBackfillOptions are the flags of `qimctl history backfill`; addresses fall back to the
// variables the writer and the HistoryArchiver read.
type historyBackfillOptions struct {
	redis   string // QIM_REDIS_ADDR
	cql     cqlFlags
	scan    int64
	timeout time.Duration
}

func newHistoryCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "history", Short: "The tiered message history"}
	cmd.AddCommand(newHistoryBackfillCmd(&historyBackfillOptions{}))
	return cmd
}

func newHistoryBackfillCmd(opts *historyBackfillOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "backfill",
		Short: "Copy the hot history in Redis into the CQL archive, then register it for the hot-tier trim",
		Long: `Scans every hot history record in the core Redis, writes it to the archive (record before
index, as the HistoryArchiver does) and only then gives each record that has none a trim
candidate, so the writer's trim may remove it. Run it once after upgrading a deployment whose
Redis holds history from before the trim (it is never trimmed otherwise, and holds its
conversation's hot floor), or whose history is older than the Outbox's retention (the
archiver can no longer read it). Idempotent: it can be run again, also while everything runs.
Progress goes to stderr; the exit status is non-zero on any failure.

Examples:
  QIM_REDIS_ADDR=127.0.0.1:6379 QIM_CQL_HOSTS=127.0.0.1:9042 qimctl history backfill
  qimctl history backfill --redis 10.0.0.5:6379 --cql-hosts 10.0.0.7:9042,10.0.0.8:9042`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runHistoryBackfill(cmd.Context(), opts, os.Getenv, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.redis, "redis", "", "core Redis host:port (default $QIM_REDIS_ADDR)")
	opts.cql.register(cmd)
	f.Int64Var(&opts.scan, "scan-count", 1000, "SCAN COUNT hint: hot records per step (one archive batch)")
	f.DurationVar(&opts.timeout, "timeout", time.Hour, "give up after this long")
	return cmd
}

func runHistoryBackfill(ctx context.Context, o *historyBackfillOptions, getenv func(string) string, out, progress io.Writer) error {
	if ctx == nil {
		ctx = context.Background()
	}
	c := archiver.BackfillConfig{RedisAddr: firstNonEmpty(o.redis, getenv("QIM_REDIS_ADDR")), ScanCount: o.scan}
	if c.RedisAddr == "" {
		return fmt.Errorf("qimctl history backfill: no core Redis: pass --redis or set QIM_REDIS_ADDR")
	}
	var err error
	if c.CQL, err = o.cql.resolve("qimctl history backfill", getenv); err != nil {
		return err
	}
	auth, err := services.StoreAuthFrom(getenv)
	if err != nil {
		return fmt.Errorf("qimctl history backfill: %w", err)
	}
	c.RedisAuth = auth.Redis
	start, last := time.Now(), time.Now()
	c.Progress = func(r archiver.BackfillResult) {
		if time.Since(last) >= 2*time.Second {
			last = time.Now()
			fmt.Fprintf(progress, "backfill: %d hot records archived so far (%.0f/s)\n", r.Scanned, float64(r.Scanned)/time.Since(start).Seconds())
		}
	}
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	res, err := archiver.Backfill(ctx, c)
	if err != nil {
		return fmt.Errorf("qimctl history backfill: after %d records: %w", res.Scanned, err)
	}
	fmt.Fprintf(out, "scanned %d hot records: %d archive rows written, %d past retention, %d newly registered for the trim (%s)\n",
		res.Scanned, res.Archived, res.Expired, res.Registered, time.Since(start).Round(time.Millisecond))
	return nil
}
