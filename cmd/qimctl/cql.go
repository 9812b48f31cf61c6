package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/qim-dev/qim/services/archiver"
)

// cqlMigrateOptions are the flags of `qimctl cql migrate`. Hosts and keyspace fall back to the
// variables the HistoryArchiver reads, so its environment is enough.
type cqlMigrateOptions struct {
	cql        cqlFlags
	rf         int
	datacenter string
	timeout    time.Duration
}

func newCQLCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "cql", Short: "The CQL history archive"}
	cmd.AddCommand(newCQLMigrateCmd(&cqlMigrateOptions{}))
	return cmd
}

func newCQLMigrateCmd(opts *cqlMigrateOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "migrate",
		Short: "Create or upgrade the history archive's keyspace and tables to this binary's schema version",
		Long: `Brings the archive keyspace to the schema version this binary speaks: creates the keyspace if it
does not exist (NetworkTopologyStrategy, --replication-factor replicas in --datacenter, by default
the contact node's own datacenter), then applies every migration not yet recorded in its
schema_migrations table. Every statement is idempotent: running it again, or after a migration
that died half way, is safe, also while archivers run. A keyspace at a newer version than this
binary's is refused. An existing keyspace's replication is never changed.

The HistoryArchiver refuses to start on any other version than its own, naming this command.

Examples:
  QIM_CQL_HOSTS=127.0.0.1:9042 qimctl cql migrate --replication-factor 1
  qimctl cql migrate --cql-hosts 10.0.0.7:9042,10.0.0.8:9042,10.0.0.9:9042 --replication-factor 3`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runCQLMigrate(cmd.Context(), opts, os.Getenv, cmd.OutOrStdout())
		},
	}
	f := cmd.Flags()
	opts.cql.register(cmd)
	f.IntVar(&opts.rf, "replication-factor", 3, "replicas per datacenter of a NEW keyspace (3 in production; 1 for one dev node, whose commitlog_sync must then be group or batch: the archiver refuses a single replica in periodic mode)")
	f.StringVar(&opts.datacenter, "datacenter", "", "datacenter of a new keyspace (default: the contact node's)")
	f.DurationVar(&opts.timeout, "timeout", 2*time.Minute, "give up after this long")
	return cmd
}

func runCQLMigrate(ctx context.Context, opts *cqlMigrateOptions, getenv func(string) string, out io.Writer) error {
	cfg, err := opts.cql.resolve("qimctl cql migrate", getenv)
	if err != nil {
		return err
	}
	cfg.ReplicationFactor, cfg.Datacenter = opts.rf, opts.datacenter
	ctx, cancel := context.WithTimeout(ctx, opts.timeout)
	defer cancel()
	applied, err := archiver.Migrate(ctx, cfg)
	if err != nil {
		return fmt.Errorf("qimctl cql migrate: %w", err)
	}
	ks := firstNonEmpty(cfg.Keyspace, archiver.DefaultKeyspace)
	if len(applied) == 0 {
		fmt.Fprintf(out, "keyspace %s is at schema version %d: nothing to do\n", ks, archiver.SchemaVersion())
		return nil
	}
	fmt.Fprintf(out, "keyspace %s: applied migrations %v; now at schema version %d\n", ks, applied, archiver.SchemaVersion())
	return nil
}
