package mailbox

import (
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/qim-dev/qim/contract"
)

// Config is the MailboxNode's configuration. Each field maps 1:1 to the environment variable in
// its comment; FromEnv reads them and Validate fills defaults.
type Config struct {
	// RedisAddr (QIM_MAILBOX_REDIS_ADDR) is the mailbox Redis. Required. It must be standalone,
	// ≥ 7.0, AOF with appendfsync everysec or always, maxmemory-policy noeviction.
	RedisAddr string
	// KafkaBrokers (QIM_KAFKA_BROKERS, comma-separated) host qim.dispatch. Required.
	KafkaBrokers []string
	// ShardCount (QIM_MAILBOX_SHARD_COUNT) is the number of mailbox shards = qim.dispatch
	// partitions. Default contract.MailboxShardsDefault (64); a power of two in [1, 65536]. Writer,
	// fanout and mailbox must agree: start-up refuses a topic with another partition count.
	ShardCount int
	// OwnedShards (QIM_MAILBOX_OWNED_SHARDS, e.g. "0-31" or "0,4,8-11") are the shards this node
	// materializes. Default: all. Two nodes owning one shard fence each other through the
	// watermark compare-and-set: the loser stops.
	OwnedShards []uint32
	// ListenAddr (QIM_MAILBOX_LISTEN) is the gRPC address of the Mailbox service. Default
	// 127.0.0.1:7102. Opened only after every owned shard caught up with its log.
	ListenAddr string
	// MetricsAddr (QIM_MAILBOX_METRICS) serves /metrics, /healthz and pprof. Default
	// 127.0.0.1:9102.
	MetricsAddr string
	// GatewayPushAddr (QIM_GATEWAY_PUSH_ADDR) is the gateway's Push gRPC address. Optional: empty
	// disables push; offline delivery through PULL_MAILBOX is unaffected.
	GatewayPushAddr string
	// PushQueue (QIM_MAILBOX_PUSH_QUEUE) bounds the push targets waiting for the gateway.
	// Default 4,096. A full queue drops pushes (counted in qim_mailbox_push_dropped_total), never
	// blocks materialization: a dropped push costs latency, the pull recovers it.
	PushQueue int
	// MaterializeBatch (QIM_MAILBOX_MATERIALIZE_BATCH) is how many records of one shard's FIFO
	// go to Redis in one pipeline. Default 32, in [1, contract.MailboxShardFIFOCapacity]. Larger
	// batches amortise the round trip when a shard is behind; a lone record is never held back.
	MaterializeBatch int
}

// ErrConfig is wrapped by every validation error.
var ErrConfig = errors.New("mailbox: invalid config")

// Validate rejects bad values and fills documented defaults.
func (c *Config) Validate() error {
	if c.RedisAddr == "" {
		return fmt.Errorf("%w: QIM_MAILBOX_REDIS_ADDR is required", ErrConfig)
	}
	if len(c.KafkaBrokers) == 0 {
		return fmt.Errorf("%w: QIM_KAFKA_BROKERS is required", ErrConfig)
	}
	if c.ShardCount == 0 {
		c.ShardCount = contract.MailboxShardsDefault
	}
	n, err := contract.NewShardCount(c.ShardCount)
	if err != nil {
		return fmt.Errorf("%w: QIM_MAILBOX_SHARD_COUNT: %v", ErrConfig, err)
	}
	if len(c.OwnedShards) == 0 {
		c.OwnedShards = allShards(n)
	}
	c.OwnedShards = slices.Clone(c.OwnedShards)
	slices.Sort(c.OwnedShards)
	for i, s := range c.OwnedShards {
		if s >= uint32(n) || (i > 0 && c.OwnedShards[i-1] == s) {
			return fmt.Errorf("%w: owned shard %d duplicated or not below the shard count %d", ErrConfig, s, n)
		}
	}
	setDefault(&c.ListenAddr, "127.0.0.1:7102")
	setDefault(&c.MetricsAddr, "127.0.0.1:9102")
	for _, a := range []string{c.ListenAddr, c.MetricsAddr, c.GatewayPushAddr} {
		if _, _, err := net.SplitHostPort(a); a != "" && err != nil {
			return fmt.Errorf("%w: address %q: %v", ErrConfig, a, err)
		}
	}
	if c.PushQueue == 0 {
		c.PushQueue = 4096
	}
	if c.PushQueue < 1 || c.PushQueue > 1<<20 {
		return fmt.Errorf("%w: push queue %d not in [1, %d]", ErrConfig, c.PushQueue, 1<<20)
	}
	if c.MaterializeBatch == 0 {
		c.MaterializeBatch = 32
	}
	if c.MaterializeBatch < 1 || c.MaterializeBatch > contract.MailboxShardFIFOCapacity {
		return fmt.Errorf("%w: materialize batch %d not in [1, %d]", ErrConfig, c.MaterializeBatch, contract.MailboxShardFIFOCapacity)
	}
	return nil
}

func (c *Config) shards() contract.ShardCount { return contract.ShardCount(c.ShardCount) }

func allShards(n contract.ShardCount) []uint32 {
	out := make([]uint32, n)
	for i := range out {
		out[i] = uint32(i)
	}
	return out
}

func setDefault(s *string, v string) {
	if *s == "" {
		*s = v
	}
}

// ParseShardSet parses "0-31", "3", "0,4,8-11" (ranges inclusive). Empty means none (Validate
// then takes every shard). Bounds against the shard count are checked by Validate.
func ParseShardSet(s string) ([]uint32, error) {
	var out []uint32
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		lo, hi, isRange := strings.Cut(part, "-")
		a, err1 := strconv.ParseUint(strings.TrimSpace(lo), 10, 16)
		b := a
		var err2 error
		if isRange {
			b, err2 = strconv.ParseUint(strings.TrimSpace(hi), 10, 16)
		}
		if err1 != nil || err2 != nil || b < a {
			return nil, fmt.Errorf("%w: shard set %q: bad element %q", ErrConfig, s, part)
		}
		for v := a; v <= b; v++ {
			out = append(out, uint32(v))
		}
	}
	return out, nil
}

// FromEnv reads the QIM_* variables named on the fields. Unset variables leave defaults to
// Validate; malformed values are errors, never silently ignored.
func FromEnv() (Config, error) {
	c := Config{
		RedisAddr:       os.Getenv("QIM_MAILBOX_REDIS_ADDR"),
		ListenAddr:      os.Getenv("QIM_MAILBOX_LISTEN"),
		MetricsAddr:     os.Getenv("QIM_MAILBOX_METRICS"),
		GatewayPushAddr: os.Getenv("QIM_GATEWAY_PUSH_ADDR"),
	}
	if b := os.Getenv("QIM_KAFKA_BROKERS"); b != "" {
		c.KafkaBrokers = strings.Split(b, ",")
	}
	owned, err := ParseShardSet(os.Getenv("QIM_MAILBOX_OWNED_SHARDS"))
	if err != nil {
		return c, err
	}
	c.OwnedShards = owned
	for env, dst := range map[string]*int{
		"QIM_MAILBOX_SHARD_COUNT": &c.ShardCount, "QIM_MAILBOX_PUSH_QUEUE": &c.PushQueue,
		"QIM_MAILBOX_MATERIALIZE_BATCH": &c.MaterializeBatch,
	} {
		if v := os.Getenv(env); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil {
				return c, fmt.Errorf("%w: %s=%q: %v", ErrConfig, env, v, err)
			}
			*dst = n
		}
	}
	return c, nil
}
