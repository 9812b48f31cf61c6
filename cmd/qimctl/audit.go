package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/spf13/cobra"

	"github.com/qim-dev/qim/audit"
	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/services"
	"github.com/qim-dev/qim/services/cmdline"
	"github.com/qim-dev/qim/services/fanout"
)

// auditDispatchOptions are the flags of `qimctl audit dispatch`. Addresses and the shard count
// fall back to the variables the services read, so an operator's service environment is enough.
type auditDispatchOptions struct {
	brokers       string // QIM_KAFKA_BROKERS
	mailboxRedis  string // QIM_MAILBOX_REDIS_ADDR
	shards        int    // QIM_MAILBOX_SHARD_COUNT
	outboxTopic   string
	dispatchTopic string
	from, to      int64
	since, until  string
	group         string
	wait          time.Duration
	noMailbox     bool
	json          bool
	window        int
}

func newAuditCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "audit",
		Short: "Independent checks of what the durable logs and stores hold",
	}
	cmd.AddCommand(newAuditDispatchCmd(&auditDispatchOptions{}), newAuditArchiveCmd(&auditArchiveOptions{}))
	return cmd
}

func newAuditDispatchCmd(opts *auditDispatchOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "dispatch",
		Short: "Audit the Outbox against the dispatch log and the mailboxes (the orphan audit)",
		Long: `Reads the Outbox (committed messages and their frozen audience), the dispatch log and the
mailbox Redis, derives every dispatch the contract requires, and counts what disagrees:
committed without dispatch, dispatch without commit, mismatch, wrong partition, and entries
not materialized (or not yet materialized) in their recipient's mailbox. Replayed copies,
expired and trimmed entries are reported as information. It only reads.

Before auditing it waits (at most --wait) until the fanout group's position reaches the Outbox
end and every shard's watermark reaches its dispatch partition's end, and audits exactly that
prefix; --wait 0 audits the logs as they are. The range defaults to everything ever written:
records already deleted by retention make it incomplete, which fails, until you narrow it with
--from/--to (Outbox offsets) or --since/--until (RFC 3339 times, or a duration before now).

The summary (or --json) goes to stdout, progress to stderr. The exit status is non-zero when any
failure count is non-zero or the range could not be read completely.

Examples:
  QIM_KAFKA_BROKERS=127.0.0.1:9092 QIM_MAILBOX_REDIS_ADDR=127.0.0.1:6380 QIM_MAILBOX_SHARD_COUNT=64 \
      qimctl audit dispatch
  qimctl audit dispatch --brokers 10.0.0.5:9092 --mailbox-redis 10.0.0.6:6379 --shards 64 \
      --since 24h --json > audit.json
  qimctl audit dispatch --from 120000 --to 130000 --wait 0 --no-mailbox`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runAuditDispatch(cmd.Context(), opts, os.Getenv, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.brokers, "brokers", "", "Kafka brokers host:port,… (default $QIM_KAFKA_BROKERS)")
	f.StringVar(&opts.mailboxRedis, "mailbox-redis", "", "mailbox Redis host:port (default $QIM_MAILBOX_REDIS_ADDR)")
	f.IntVar(&opts.shards, "shards", 0, fmt.Sprintf("mailbox shard count (default $QIM_MAILBOX_SHARD_COUNT, else %d)", contract.MailboxShardsDefault))
	f.StringVar(&opts.outboxTopic, "outbox-topic", contract.TopicOutbox, "Outbox topic")
	f.StringVar(&opts.dispatchTopic, "dispatch-topic", contract.TopicDispatch, "dispatch topic")
	f.Int64Var(&opts.from, "from", 0, "first Outbox offset")
	f.Int64Var(&opts.to, "to", 0, "Outbox end offset, exclusive (default: the end the wait reached)")
	f.StringVar(&opts.since, "since", "", "first record time: RFC 3339, or a duration before now such as 24h")
	f.StringVar(&opts.until, "until", "", "end record time: RFC 3339, or a duration before now")
	f.StringVar(&opts.group, "fanout-group", fanout.DefaultConfig().Group, "the fanout's group, whose Outbox position the wait watches")
	f.DurationVar(&opts.wait, "wait", 2*time.Minute, "longest wait for the fanout and the watermarks to catch up (0: do not wait)")
	f.BoolVar(&opts.noMailbox, "no-mailbox", false, "skip the materialization pass (no mailbox Redis needed)")
	f.BoolVar(&opts.json, "json", false, "print the result as JSON")
	f.IntVar(&opts.window, "window", 0, "Outbox records per join window (default 16384; memory grows with it)")
	return cmd
}

// auditPlan is the options resolved against the environment.
type auditPlan struct {
	cfg   audit.Config
	rng   audit.Range
	group string
	wait  time.Duration
}

// resolve applies the environment fallbacks and validates everything before any I/O.
func (o *auditDispatchOptions) resolve(getenv func(string) string, now time.Time) (auditPlan, error) {
	p := auditPlan{group: o.group, wait: o.wait, rng: audit.Range{From: o.from, To: o.to}}
	brokers := firstNonEmpty(o.brokers, getenv("QIM_KAFKA_BROKERS"))
	if brokers == "" {
		return p, errors.New("qimctl: no brokers: pass --brokers or set QIM_KAFKA_BROKERS")
	}
	shards, err := o.shardCount(getenv)
	if err != nil {
		return p, err
	}
	auth, err := services.StoreAuthFrom(getenv)
	if err != nil {
		return p, fmt.Errorf("qimctl: %w", err)
	}
	security, err := auth.Kafka.Opts()
	if err != nil {
		return p, fmt.Errorf("qimctl: %w", err)
	}
	p.cfg = audit.Config{Brokers: strings.Split(brokers, ","), Security: security, Shards: shards, OutboxTopic: o.outboxTopic,
		DispatchTopic: o.dispatchTopic, Window: o.window}
	if !o.noMailbox {
		if p.cfg.Mailbox, err = mailboxClient(firstNonEmpty(o.mailboxRedis, getenv("QIM_MAILBOX_REDIS_ADDR")), auth); err != nil {
			return p, err
		}
	}
	if (o.since != "" || o.until != "") && (o.from != 0 || o.to != 0) {
		return p, errors.New("qimctl: give the range by offsets (--from/--to) or by time (--since/--until), not both")
	}
	if p.rng.Since, err = parseWhen(o.since, now); err != nil {
		return p, fmt.Errorf("qimctl: --since: %w", err)
	}
	if p.rng.Until, err = parseWhen(o.until, now); err != nil {
		return p, fmt.Errorf("qimctl: --until: %w", err)
	}
	if o.wait < 0 {
		return p, fmt.Errorf("qimctl: --wait must not be negative (got %v)", o.wait)
	}
	return p, nil
}

func (o *auditDispatchOptions) shardCount(getenv func(string) string) (contract.ShardCount, error) {
	n := o.shards
	if n == 0 {
		n = contract.MailboxShardsDefault
		if v := getenv("QIM_MAILBOX_SHARD_COUNT"); v != "" {
			var err error
			if n, err = strconv.Atoi(v); err != nil {
				return 0, fmt.Errorf("qimctl: QIM_MAILBOX_SHARD_COUNT=%q: %w", v, err)
			}
		}
	}
	s, err := contract.NewShardCount(n)
	if err != nil {
		return 0, fmt.Errorf("qimctl: shard count: %w", err)
	}
	return s, nil
}

func mailboxClient(addr string, auth services.StoreAuth) (*redis.Client, error) {
	if addr == "" {
		return nil, errors.New("qimctl: no mailbox Redis: pass --mailbox-redis, set QIM_MAILBOX_REDIS_ADDR, or --no-mailbox")
	}
	o := &redis.Options{Addr: addr}
	if err := auth.Redis.Apply(o); err != nil {
		return nil, fmt.Errorf("qimctl: %w", err)
	}
	return redis.NewClient(o), nil
}

// parseWhen reads an RFC 3339 time or a duration before now; "" is the zero time.
func parseWhen(s string, now time.Time) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if d, err := time.ParseDuration(s); err == nil && d >= 0 {
		return now.Add(-d), nil
	}
	return time.Parse(time.RFC3339, s)
}

func firstNonEmpty(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// runAuditDispatch waits (bounded), audits, prints, and returns an error for any failure.
func runAuditDispatch(ctx context.Context, o *auditDispatchOptions, getenv func(string) string, out, progress io.Writer) error {
	if ctx == nil {
		ctx = context.Background()
	}
	p, err := o.resolve(getenv, time.Now())
	if err != nil {
		return err
	}
	if p.cfg.Mailbox != nil {
		defer p.cfg.Mailbox.Close()
	}
	if p.wait > 0 {
		fmt.Fprintf(progress, "audit: waiting (at most %s) for fanout group %s and the mailbox watermarks to reach the log ends\n", p.wait, p.group)
		ends, err := audit.WaitCaughtUp(ctx, p.cfg, p.group, p.wait)
		if err != nil {
			return fmt.Errorf("qimctl: %w (nothing audited; --wait 0 audits the logs as they are)", err)
		}
		p.rng.Ends = ends
	}
	p.cfg.Progress = func(pr audit.Progress) {
		fmt.Fprintf(progress, "audit: %s pass: %d records in %s, %.0f records/s\n", pr.Pass, pr.Records,
			pr.Elapsed.Round(time.Millisecond), pr.Rate)
	}
	res, err := audit.Run(ctx, p.cfg, p.rng)
	if err != nil {
		return fmt.Errorf("qimctl: %w", err)
	}
	if o.json {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		if err := enc.Encode(res); err != nil {
			return fmt.Errorf("qimctl: encode result: %w", err)
		}
	} else if err := writeAuditSummary(out, res, p.cfg); err != nil {
		return err
	}
	return cmdline.Failure(res.Err())
}
