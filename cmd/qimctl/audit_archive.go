package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/services"
	"github.com/qim-dev/qim/services/archiver"
	"github.com/qim-dev/qim/services/cmdline"
)

// auditArchiveOptions are the flags of `qimctl audit archive`; addresses fall back to the
// variables the HistoryArchiver reads.
type auditArchiveOptions struct {
	brokers     string // QIM_KAFKA_BROKERS
	cql         cqlFlags
	outboxTopic string
	from, to    int64
	timeout     time.Duration
	json        bool
}

func newAuditArchiveCmd(opts *auditArchiveOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "archive",
		Short: "Audit the Outbox against the CQL history archive",
		Long: `Reads the Outbox range and checks, for every committed (conversation, seq), that the archive
holds that very message, reading the archive's index and records as PULL_HISTORY would. It
counts archived, missing (committed, not archived — or indexed without its record), mismatch
(another message at the position), reused (the Outbox itself holds two contents for one
position) and expired (past its retention class: absent by design). Extra archived positions
inside an audited conversation's span are information. It only reads.

It does not wait for the archiver: audit a range the archiver's position has passed (its lag
is qim_archiver_lag_records), or messages committed since count as missing. The exit status is
non-zero when missing, mismatch or reused is non-zero, or the range could not be read.

Examples:
  QIM_KAFKA_BROKERS=127.0.0.1:9092 QIM_CQL_HOSTS=127.0.0.1:9042 qimctl audit archive
  qimctl audit archive --from 0 --to 120000 --json > archive-audit.json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runAuditArchive(cmd.Context(), opts, os.Getenv, cmd.OutOrStdout())
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.brokers, "brokers", "", "Kafka brokers host:port,… (default $QIM_KAFKA_BROKERS)")
	opts.cql.register(cmd)
	f.StringVar(&opts.outboxTopic, "outbox-topic", contract.TopicOutbox, "Outbox topic")
	f.Int64Var(&opts.from, "from", -1, "first Outbox offset (default: the log's start)")
	f.Int64Var(&opts.to, "to", -1, "Outbox end offset, exclusive (default: the log's end when the audit begins)")
	f.DurationVar(&opts.timeout, "timeout", 10*time.Minute, "give up after this long")
	f.BoolVar(&opts.json, "json", false, "print the result as JSON")
	return cmd
}

func (o *auditArchiveOptions) config(getenv func(string) string) (archiver.AuditConfig, error) {
	c := archiver.AuditConfig{OutboxTopic: o.outboxTopic, From: o.from, To: o.to}
	brokers := firstNonEmpty(o.brokers, getenv("QIM_KAFKA_BROKERS"))
	if brokers == "" {
		return c, fmt.Errorf("qimctl audit archive: no brokers: pass --brokers or set QIM_KAFKA_BROKERS")
	}
	c.KafkaBrokers = strings.Split(brokers, ",")
	auth, err := services.StoreAuthFrom(getenv)
	if err != nil {
		return c, fmt.Errorf("qimctl audit archive: %w", err)
	}
	c.KafkaAuth = auth.Kafka
	c.CQL, err = o.cql.resolve("qimctl audit archive", getenv)
	return c, err
}

func runAuditArchive(ctx context.Context, o *auditArchiveOptions, getenv func(string) string, out io.Writer) error {
	if ctx == nil {
		ctx = context.Background()
	}
	cfg, err := o.config(getenv)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	res, err := archiver.Audit(ctx, cfg)
	if err != nil {
		return fmt.Errorf("qimctl audit archive: %w", err)
	}
	if o.json {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		if err := enc.Encode(res); err != nil {
			return fmt.Errorf("qimctl audit archive: encode result: %w", err)
		}
	} else {
		fmt.Fprintf(out, "Outbox [%d, %d): %d records, %d messages in %d conversations\n", res.From, res.To,
			res.Records, res.Messages, res.Conversations)
		fmt.Fprintf(out, "archived %d  missing %d  mismatch %d  reused %d  expired %d  extra %d\n", res.Archived,
			res.Missing, res.Mismatch, res.Reused, res.Expired, res.Extra)
		for _, f := range res.Findings {
			fmt.Fprintf(out, "  %s\n", f)
		}
	}
	if !res.Passed() {
		return cmdline.Failure(fmt.Errorf("qimctl audit archive: FAILED: %d missing, %d mismatch, %d reused", res.Missing, res.Mismatch, res.Reused))
	}
	return nil
}
