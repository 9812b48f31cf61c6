package fanout

import (
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/services/internal/config"
	"github.com/qim-dev/qim/services/internal/storeauth"
)

// Bounds checked by Validate that are not contract values.
const (
	maxCommitInterval = 10 * time.Second
	maxUnreadyAfter   = 1000
	maxRetryBackoff   = time.Minute
)

// Config is the FanoutCoordinator's configuration: one field per QIM_* variable (the tags give
// its name, unit and help line; docs/config.md and `qim fanout --help` are generated from them).
// Defaults live in DefaultConfig; the comments here give each knob's trade-off.
type Config struct {
	// KafkaBrokers host qim.outbox and qim.dispatch.
	KafkaBrokers []string `env:"QIM_KAFKA_BROKERS" required:"true" doc:"Kafka-protocol brokers (host:port,…) hosting qim.outbox and qim.dispatch"`
	// Store credentials and TLS (all optional; services/internal/storeauth).
	KafkaAuth storeauth.Kafka
	kafkaSec  []kgo.Opt // KafkaAuth's client options, built by Validate
	// ShardCount is the mailbox shard count, which is also the partition count qim.dispatch must
	// have; a power of two in [1, 65536]. Writer, fanout and mailbox must be started with the
	// same value: a fanout that routes with another count puts dispatches on shards whose
	// MailboxNode rejects them.
	ShardCount int `env:"QIM_MAILBOX_SHARD_COUNT" unit:"shards" doc:"mailbox shard count = qim.dispatch partition count (power of two; same on writer, fanout and mailbox)"`
	// BatchSize is the most Outbox records planned and acknowledged as one batch. A batch is never
	// held back to fill: larger only amortises the ack wait and the offset commit under load, at
	// the price of a larger replay after a crash.
	BatchSize int `env:"QIM_FANOUT_BATCH_SIZE" unit:"records" doc:"most Outbox records planned and acknowledged as one batch (1..1024)"`
	// Group names where the Outbox position is stored (Kafka's group offset API). No group
	// membership is ever joined. Two fanouts with one group would both dispatch every record:
	// run exactly one per group.
	Group string `env:"QIM_FANOUT_GROUP" doc:"group under which the Outbox position is stored; run exactly one fanout per group"`
	// MetricsAddr serves /metrics, /healthz and pprof.
	MetricsAddr string `env:"QIM_FANOUT_METRICS" doc:"address of /metrics, /healthz and /debug/pprof"`
	// OutboxTopic is the log fanout reads. Only tests and migrations point elsewhere; it must
	// still have exactly one partition.
	OutboxTopic string `env:"QIM_FANOUT_OUTBOX_TOPIC" doc:"Outbox topic (exactly one partition)"`
	// DispatchTopic is the log fanout writes; it must have exactly ShardCount partitions.
	DispatchTopic string `env:"QIM_FANOUT_DISPATCH_TOPIC" doc:"dispatch topic (exactly QIM_MAILBOX_SHARD_COUNT partitions)"`
	// RetryBackoffMin and RetryBackoffMax bound the wait between attempts of a failed batch or
	// commit, doubling from min to max (at most 1 min). Shorter retries recover faster from a
	// leader move; longer ones put less load on a broker that is already failing. The batch is
	// retried forever: it is never skipped.
	RetryBackoffMin time.Duration `env:"QIM_FANOUT_RETRY_BACKOFF_MIN" doc:"first wait before retrying a failed batch or commit (doubles up to the max)"`
	RetryBackoffMax time.Duration `env:"QIM_FANOUT_RETRY_BACKOFF_MAX" doc:"longest wait between retries of a failed batch or commit (at most 1m)"`
	// UnreadyAfter is how many consecutive failed attempts of one batch make /healthz report 503
	// until a batch succeeds. The default of 3 keeps one retriable blip (a leader election) from
	// flapping the probe, while a broker that stays down does turn it red.
	UnreadyAfter int `env:"QIM_FANOUT_UNREADY_AFTER" unit:"attempts" doc:"consecutive failed attempts before /healthz reports 503 (1..1000)"`
	// CommitInterval is the least time between two commits of the Outbox position; 0 (the
	// default) commits after every batch, at most 10 s. A commit only ever stores a position
	// whose dispatches are all acknowledged; the interval decides how many acknowledged batches
	// one commit covers. Longer: fewer OffsetCommit requests and batch cycles that do not wait
	// for a commit, but also smaller batches, and a crash replays up to that much more of the
	// Outbox (the MailboxNode converges it by dispatch_id). Measured at 1,000 msg/s on the
	// project's 2-core machine (qim_kafka_requests_total): 100 ms cut OffsetCommit from 101 to 9
	// requests/s, but fanout then cycled 270 instead of 102 times a second, and broker requests
	// overall rose from 772 to 1,395/s (dispatch produce 104 → 270, each consumer's fetches
	// ~104 → 233) with no measured change in CPU or latency. Consider it where a commit is slow
	// compared to a produce, e.g. a remote group coordinator.
	CommitInterval time.Duration `env:"QIM_FANOUT_COMMIT_INTERVAL" doc:"least time between two Outbox position commits (0: after every batch; at most 10s)"`
	// DisableIdempotence turns off the idempotent dispatch producer (commitlog's default is
	// idempotent). Off saves the producer-id round trip at start and 0.1–0.3 ms of the median
	// batch acknowledgement wait (measured on the 2-core development machine), and keeps one
	// request in flight per broker, so a partition is still never reordered; protocol retries
	// may then duplicate a dispatch inside the log. That is safe because the MailboxNode
	// converges duplicates by dispatch_id + payload_digest anyway: it must, for every replayed
	// batch. It stays on by default because the saving is small and duplicates cost convergence.
	DisableIdempotence bool `env:"QIM_FANOUT_DISABLE_PRODUCER_IDEMPOTENCE" doc:"turn off the idempotent dispatch producer (duplicates in the log are converged by the MailboxNode)"`
}

// DefaultConfig is the configuration with every default set and the required fields empty.
func DefaultConfig() Config {
	return Config{
		ShardCount:      contract.MailboxShardsDefault,
		BatchSize:       contract.FanoutBatchDefault,
		Group:           "qim-fanout",
		MetricsAddr:     "127.0.0.1:9106",
		OutboxTopic:     contract.TopicOutbox,
		DispatchTopic:   contract.TopicDispatch,
		RetryBackoffMin: 100 * time.Millisecond,
		RetryBackoffMax: 5 * time.Second,
		UnreadyAfter:    3,
	}
}

// ErrConfig is wrapped by every configuration error.
var ErrConfig = errors.New("fanout: invalid config")

// FromEnv reads the QIM_* variables over DefaultConfig. Malformed values are errors naming the
// variable. (A retired variable still set is refused by qim's environment check, with its
// replacement: services/toolvars.go.)
func FromEnv() (Config, error) {
	return config.FromEnv(DefaultConfig(), ErrConfig)
}

// Validate fills the defaults of zero fields and rejects bad values.
func (c *Config) Validate() error {
	if err := config.Prepare(c, DefaultConfig(), ErrConfig); err != nil {
		return err
	}
	var serr error
	if c.kafkaSec, serr = c.KafkaAuth.Opts(); serr != nil {
		return fmt.Errorf("%w: %w", ErrConfig, serr)
	}
	for _, b := range c.KafkaBrokers {
		if _, _, err := net.SplitHostPort(b); err != nil {
			return fmt.Errorf("%w: QIM_KAFKA_BROKERS: broker %q: %v", ErrConfig, b, err)
		}
	}
	if _, _, err := net.SplitHostPort(c.MetricsAddr); err != nil {
		return fmt.Errorf("%w: QIM_FANOUT_METRICS=%q: %v", ErrConfig, c.MetricsAddr, err)
	}
	if _, err := contract.NewShardCount(c.ShardCount); err != nil {
		return fmt.Errorf("%w: QIM_MAILBOX_SHARD_COUNT=%d: %w", ErrConfig, c.ShardCount, err)
	}
	switch {
	case c.BatchSize < contract.FanoutBatchMin || c.BatchSize > contract.FanoutBatchMax:
		return fmt.Errorf("%w: QIM_FANOUT_BATCH_SIZE=%d not in [%d, %d]", ErrConfig, c.BatchSize,
			contract.FanoutBatchMin, contract.FanoutBatchMax)
	case c.OutboxTopic == c.DispatchTopic:
		return fmt.Errorf("%w: QIM_FANOUT_OUTBOX_TOPIC and QIM_FANOUT_DISPATCH_TOPIC are both %q", ErrConfig, c.OutboxTopic)
	case c.CommitInterval < 0 || c.CommitInterval > maxCommitInterval:
		return fmt.Errorf("%w: QIM_FANOUT_COMMIT_INTERVAL=%v not in [0, %v]", ErrConfig, c.CommitInterval, maxCommitInterval)
	case c.UnreadyAfter < 1 || c.UnreadyAfter > maxUnreadyAfter:
		return fmt.Errorf("%w: QIM_FANOUT_UNREADY_AFTER=%d not in [1, %d]", ErrConfig, c.UnreadyAfter, maxUnreadyAfter)
	}
	return c.validateBackoff()
}

// validateBackoff checks 0 < min <= max <= maxRetryBackoff, naming the variable at fault.
func (c *Config) validateBackoff() error {
	switch {
	case c.RetryBackoffMin < 0:
		return fmt.Errorf("%w: QIM_FANOUT_RETRY_BACKOFF_MIN=%v is negative", ErrConfig, c.RetryBackoffMin)
	case c.RetryBackoffMax > maxRetryBackoff:
		return fmt.Errorf("%w: QIM_FANOUT_RETRY_BACKOFF_MAX=%v above %v", ErrConfig, c.RetryBackoffMax, maxRetryBackoff)
	case c.RetryBackoffMax < c.RetryBackoffMin:
		return fmt.Errorf("%w: QIM_FANOUT_RETRY_BACKOFF_MAX=%v below QIM_FANOUT_RETRY_BACKOFF_MIN=%v", ErrConfig,
			c.RetryBackoffMax, c.RetryBackoffMin)
	}
	return nil
}

// shards is the validated shard count; call only after Validate.
func (c *Config) shards() contract.ShardCount {
	n, _ := contract.NewShardCount(c.ShardCount)
	return n
}
