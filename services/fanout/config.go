package fanout

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/qim-dev/qim/contract"
)

// Defaults filled by Validate that are not contract values.
const (
	defaultGroup           = "qim-fanout"
	defaultMetricsAddr     = "127.0.0.1:9106"
	defaultRetryBackoffMin = 100 * time.Millisecond
	defaultRetryBackoffMax = 5 * time.Second
	defaultUnreadyAfter    = 3
	maxCommitInterval      = 10 * time.Second
	maxUnreadyAfter        = 1000
	maxRetryBackoff        = time.Minute
)

// Config is the FanoutCoordinator's configuration. Each field maps 1:1 to the environment
// variable in its comment; FromEnv reads them and Validate fills the defaults.
type Config struct {
	// KafkaBrokers (QIM_KAFKA_BROKERS, comma-separated) host qim.outbox and qim.dispatch. Required.
	KafkaBrokers []string
	// ShardCount (QIM_MAILBOX_SHARD_COUNT) is the mailbox shard count, which is also the partition
	// count qim.dispatch must have. Default contract.MailboxShardsDefault (64); a power of two in
	// [1, 65536]. Writer, fanout and mailbox must be started with the same value: a fanout that
	// routes with another count puts dispatches on shards whose MailboxNode rejects them.
	ShardCount int
	// BatchSize (QIM_FANOUT_BATCH_SIZE) is the most Outbox records planned and acknowledged as one
	// batch. Default contract.FanoutBatchDefault (512), valid [contract.FanoutBatchMin,
	// contract.FanoutBatchMax]. A batch is never held back to fill: larger only amortises the ack
	// wait and the offset commit under load, at the price of a larger replay after a crash.
	BatchSize int
	// Group (QIM_FANOUT_GROUP) names where the Outbox position is stored (Kafka's group offset
	// API). No group membership is ever joined. Default "qim-fanout". Two fanouts with one group
	// would both dispatch every record: run exactly one per group.
	Group string
	// MetricsAddr (QIM_FANOUT_METRICS) serves /metrics, /healthz and pprof. Default 127.0.0.1:9106.
	MetricsAddr string
	// OutboxTopic (QIM_FANOUT_OUTBOX_TOPIC) defaults to contract.TopicOutbox. Only tests and
	// migrations point elsewhere; it must still have exactly one partition.
	OutboxTopic string
	// DispatchTopic (QIM_FANOUT_DISPATCH_TOPIC) defaults to contract.TopicDispatch. It must have
	// exactly ShardCount partitions.
	DispatchTopic string
	// RetryBackoffMin and RetryBackoffMax (QIM_FANOUT_RETRY_BACKOFF_MIN/MAX) bound the wait
	// between attempts of a failed batch, doubling from min to max. Defaults 100 ms and 5 s, max
	// 1 min. Shorter retries recover faster from a leader move; longer ones put less load on a
	// broker that is already failing. The batch is retried forever: it is never skipped.
	RetryBackoffMin time.Duration
	RetryBackoffMax time.Duration
	// UnreadyAfter (QIM_FANOUT_UNREADY_AFTER) is how many consecutive failed attempts of one batch
	// make /healthz report 503 until a batch succeeds. Default 3: one retriable blip (a leader
	// election) does not flap the probe, a broker that stays down does.
	UnreadyAfter int
	// CommitInterval (QIM_FANOUT_COMMIT_INTERVAL) is the least time between two commits of the
	// Outbox position. Default 0: commit after every batch; valid [0, 10 s]. A commit only ever
	// stores a position whose dispatches are all acknowledged; the interval decides how many
	// acknowledged batches one commit covers. Longer: fewer OffsetCommit requests and batch
	// cycles that do not wait for a commit, but also smaller batches, and a crash replays up to
	// that much more of the Outbox (the MailboxNode converges it by dispatch_id). Measured at
	// 1,000 msg/s on the project's 2-core machine (qim_kafka_requests_total): 100 ms cut
	// OffsetCommit from 101 to 9 requests/s, but fanout then cycled 270 instead of 102 times a
	// second, and broker requests overall rose from 772 to 1,395/s (dispatch produce 104 → 270,
	// each consumer's fetches ~104 → 233) with no measured change in CPU or latency. Consider it
	// where a commit is slow compared to a produce, e.g. a remote group coordinator.
	CommitInterval time.Duration
	// DisableIdempotence (QIM_FANOUT_PRODUCER_IDEMPOTENCE=false) turns off the idempotent dispatch
	// producer. Default idempotent (commitlog's default). Off saves the producer-id round trip at
	// start and keeps one request in flight per broker; protocol retries may then duplicate a
	// dispatch inside the log, which the MailboxNode converges like any replay (seed ADR-0017).
	DisableIdempotence bool
}

// ErrConfig is wrapped by every validation error.
var ErrConfig = errors.New("fanout: invalid config")

// Validate rejects bad values and fills the documented defaults.
func (c *Config) Validate() error {
	if len(c.KafkaBrokers) == 0 {
		return fmt.Errorf("%w: QIM_KAFKA_BROKERS is required", ErrConfig)
	}
	for _, b := range c.KafkaBrokers {
		if _, _, err := net.SplitHostPort(b); err != nil {
			return fmt.Errorf("%w: broker %q: %v", ErrConfig, b, err)
		}
	}
	c.ShardCount = orDefault(c.ShardCount, contract.MailboxShardsDefault)
	if _, err := contract.NewShardCount(c.ShardCount); err != nil {
		return fmt.Errorf("%w: QIM_MAILBOX_SHARD_COUNT: %w", ErrConfig, err)
	}
	c.BatchSize = orDefault(c.BatchSize, contract.FanoutBatchDefault)
	if c.BatchSize < contract.FanoutBatchMin || c.BatchSize > contract.FanoutBatchMax {
		return fmt.Errorf("%w: QIM_FANOUT_BATCH_SIZE %d not in [%d, %d]", ErrConfig, c.BatchSize,
			contract.FanoutBatchMin, contract.FanoutBatchMax)
	}
	c.Group = orDefault(c.Group, defaultGroup)
	c.MetricsAddr = orDefault(c.MetricsAddr, defaultMetricsAddr)
	if _, _, err := net.SplitHostPort(c.MetricsAddr); err != nil {
		return fmt.Errorf("%w: QIM_FANOUT_METRICS %q: %v", ErrConfig, c.MetricsAddr, err)
	}
	c.OutboxTopic = orDefault(c.OutboxTopic, contract.TopicOutbox)
	c.DispatchTopic = orDefault(c.DispatchTopic, contract.TopicDispatch)
	if c.OutboxTopic == c.DispatchTopic {
		return fmt.Errorf("%w: outbox and dispatch topic are both %q", ErrConfig, c.OutboxTopic)
	}
	c.RetryBackoffMin = orDefault(c.RetryBackoffMin, defaultRetryBackoffMin)
	c.RetryBackoffMax = orDefault(c.RetryBackoffMax, defaultRetryBackoffMax)
	if c.RetryBackoffMin < 0 || c.RetryBackoffMax < c.RetryBackoffMin || c.RetryBackoffMax > maxRetryBackoff {
		return fmt.Errorf("%w: retry backoff [%v, %v] must satisfy 0 < min <= max <= %v", ErrConfig,
			c.RetryBackoffMin, c.RetryBackoffMax, maxRetryBackoff)
	}
	if c.CommitInterval < 0 || c.CommitInterval > maxCommitInterval {
		return fmt.Errorf("%w: QIM_FANOUT_COMMIT_INTERVAL %v not in [0, %v]", ErrConfig, c.CommitInterval,
			maxCommitInterval)
	}
	c.UnreadyAfter = orDefault(c.UnreadyAfter, defaultUnreadyAfter)
	if c.UnreadyAfter < 1 || c.UnreadyAfter > maxUnreadyAfter {
		return fmt.Errorf("%w: QIM_FANOUT_UNREADY_AFTER %d not in [1, %d]", ErrConfig, c.UnreadyAfter, maxUnreadyAfter)
	}
	return nil
}

// shards is the validated shard count; call only after Validate.
func (c *Config) shards() contract.ShardCount {
	n, _ := contract.NewShardCount(c.ShardCount)
	return n
}

func orDefault[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

// FromEnv reads the QIM_* variables named on the fields. Unset variables leave the defaults to
// Validate; malformed values are errors, never silently ignored.
func FromEnv() (Config, error) {
	c := Config{
		Group:         os.Getenv("QIM_FANOUT_GROUP"),
		MetricsAddr:   os.Getenv("QIM_FANOUT_METRICS"),
		OutboxTopic:   os.Getenv("QIM_FANOUT_OUTBOX_TOPIC"),
		DispatchTopic: os.Getenv("QIM_FANOUT_DISPATCH_TOPIC"),
	}
	if b := os.Getenv("QIM_KAFKA_BROKERS"); b != "" {
		c.KafkaBrokers = strings.Split(b, ",")
	}
	for env, dst := range map[string]*int{
		"QIM_MAILBOX_SHARD_COUNT": &c.ShardCount, "QIM_FANOUT_BATCH_SIZE": &c.BatchSize,
		"QIM_FANOUT_UNREADY_AFTER": &c.UnreadyAfter,
	} {
		if v := os.Getenv(env); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil {
				return c, fmt.Errorf("%w: %s=%q: %v", ErrConfig, env, v, err)
			}
			*dst = n
		}
	}
	for env, dst := range map[string]*time.Duration{
		"QIM_FANOUT_RETRY_BACKOFF_MIN": &c.RetryBackoffMin, "QIM_FANOUT_RETRY_BACKOFF_MAX": &c.RetryBackoffMax,
		"QIM_FANOUT_COMMIT_INTERVAL": &c.CommitInterval,
	} {
		if v := os.Getenv(env); v != "" {
			d, err := time.ParseDuration(v)
			if err != nil {
				return c, fmt.Errorf("%w: %s=%q: %v", ErrConfig, env, v, err)
			}
			*dst = d
		}
	}
	if v := os.Getenv("QIM_FANOUT_PRODUCER_IDEMPOTENCE"); v != "" {
		on, err := strconv.ParseBool(v)
		if err != nil {
			return c, fmt.Errorf("%w: QIM_FANOUT_PRODUCER_IDEMPOTENCE=%q: %v", ErrConfig, v, err)
		}
		c.DisableIdempotence = !on
	}
	return c, nil
}
