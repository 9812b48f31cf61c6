package mailbox

import (
	"errors"
	"fmt"
	"net"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/services/internal/config"
	"github.com/qim-dev/qim/services/internal/rpcauth"
	"github.com/qim-dev/qim/services/internal/shardset"
	"github.com/qim-dev/qim/services/internal/storeauth"
)

// Config is the MailboxNode's configuration: one field per QIM_* variable (the tags give its
// name, unit and help line; docs/config.md and `qim mailbox --help` are generated from them).
// Defaults live in DefaultConfig; the comments here give each knob's trade-off.
type Config struct {
	// RedisAddr is the mailbox Redis (entries, shard watermarks, device cursors). Start-up
	// refuses one that may lose more than a second or evict: it must be standalone, ≥ 7.0, AOF
	// with appendfsync everysec or always, maxmemory-policy noeviction.
	RedisAddr string `env:"QIM_MAILBOX_REDIS_ADDR" required:"true" doc:"mailbox Redis (host:port); must be standalone, >= 7.0, AOF everysec or always, maxmemory-policy noeviction"`
	// KafkaBrokers host qim.dispatch, whose partitions are the mailbox shards, and qim.presence.
	KafkaBrokers []string `env:"QIM_KAFKA_BROKERS" required:"true" doc:"Kafka-protocol brokers (host:port,…) hosting qim.dispatch and qim.presence"`
	// RedisAuth and KafkaAuth are the stores' credentials and TLS (all optional).
	RedisAuth storeauth.Redis
	KafkaAuth storeauth.Kafka
	kafkaSec  []kgo.Opt // KafkaAuth's client options, built by Validate
	// ShardCount is the number of mailbox shards, which is the partition count of qim.dispatch.
	// Writer, fanout, mailbox and session must agree: start-up refuses a topic with another
	// partition count, because users would be routed to shards nobody reads.
	ShardCount int `env:"QIM_MAILBOX_SHARD_COUNT" unit:"shards" doc:"mailbox shards = qim.dispatch partitions; a power of two, the same on every service"`
	// OwnedShards are the shards this node materializes. Two nodes owning one shard fence each
	// other through the watermark compare-and-set: the loser stops, so an overlap costs a
	// restart, never a duplicate or a gap.
	OwnedShards shardset.Set `env:"QIM_MAILBOX_OWNED_SHARDS" default:"all shards" doc:"shards this node materializes, e.g. 0-31 or 0,4,8-11 (ranges inclusive)"`
	// ListenAddr is the gRPC address of the Mailbox service. It opens only after every owned
	// shard caught up with its log, so a pull never reads a shard that is still replaying.
	ListenAddr string `env:"QIM_MAILBOX_LISTEN" doc:"gRPC listen address of the Mailbox service (opened once every owned shard caught up)"`
	// MetricsAddr serves /metrics, /healthz and /debug/pprof.
	MetricsAddr string `env:"QIM_MAILBOX_METRICS" doc:"address of /metrics, /healthz and /debug/pprof"`
	// GatewayPushAddr names the one gateway of a deployment that runs no PresenceDirectory (its
	// gateway has no QIM_KAFKA_BROKERS). Unset, the node pushes to the gateways qim.presence
	// says hold each user (ADR-0027); it then refuses to start without a compacted qim.presence
	// of QIM_MAILBOX_SHARD_COUNT partitions. Pushes only shorten latency: PULL_MAILBOX delivers
	// everything either way.
	GatewayPushAddr string `env:"QIM_GATEWAY_PUSH_ADDR" doc:"the single gateway's Push gRPC address (unset: push by the PresenceDirectory, qim.presence)"`
	// RPC is the internal RPC boundary: mTLS with the role whitelist, or plaintext on loopback
	// for development (ADR-0025).
	RPC rpcauth.Config
	// PushQueue bounds the push targets waiting for the gateway. A full queue drops pushes
	// (counted in qim_mailbox_push_dropped_total) and never blocks materialization: a dropped
	// push costs latency, the device's next pull recovers it. Larger only helps a gateway that
	// is briefly slow, at the price of memory.
	PushQueue int `env:"QIM_MAILBOX_PUSH_QUEUE" unit:"targets" doc:"push targets waiting for the gateway before new ones are dropped (1..1048576)"`
	// MaterializeBatch is how many records of one shard's FIFO go to Redis in one pipeline.
	// Larger batches amortise the round trip when a shard is behind; a lone record is never held
	// back waiting for company, so this does not add latency. At most the FIFO capacity.
	MaterializeBatch int `env:"QIM_MAILBOX_MATERIALIZE_BATCH" unit:"records" doc:"dispatch records of one shard per Redis pipeline (1..128, the shard FIFO capacity)"`
}

// pushQueueMax caps QIM_MAILBOX_PUSH_QUEUE: a queue beyond a million targets only hides a dead
// gateway behind memory.
const pushQueueMax = 1 << 20

// DefaultConfig is the configuration with every default set and the required fields empty.
// OwnedShards stays empty: Validate takes every shard of ShardCount.
func DefaultConfig() Config {
	return Config{
		ShardCount:       contract.MailboxShardsDefault,
		ListenAddr:       "127.0.0.1:7102",
		MetricsAddr:      "127.0.0.1:9102",
		PushQueue:        4096,
		MaterializeBatch: 32,
	}
}

// ErrConfig is wrapped by every configuration error.
var ErrConfig = errors.New("mailbox: invalid config")

// FromEnv reads the QIM_* variables over DefaultConfig. Malformed values are errors naming the
// variable.
func FromEnv() (Config, error) {
	return config.FromEnv(DefaultConfig(), ErrConfig)
}

// Validate fills the defaults of zero fields (every shard when none is named) and rejects bad
// values, naming the variable.
func (c *Config) Validate() error {
	if err := config.Prepare(c, DefaultConfig(), ErrConfig); err != nil {
		return err
	}
	n, err := contract.NewShardCount(c.ShardCount)
	if err != nil {
		return fmt.Errorf("%w: QIM_MAILBOX_SHARD_COUNT=%d: %v", ErrConfig, c.ShardCount, err)
	}
	if c.kafkaSec, err = c.KafkaAuth.Opts(); err != nil {
		return fmt.Errorf("%w: %w", ErrConfig, err)
	}
	if err := c.RedisAuth.Validate(); err != nil {
		return fmt.Errorf("%w: %w", ErrConfig, err)
	}
	if err := c.validateOwned(n); err != nil {
		return err
	}
	for _, a := range []struct{ name, addr string }{
		{"QIM_MAILBOX_REDIS_ADDR", c.RedisAddr}, {"QIM_MAILBOX_LISTEN", c.ListenAddr},
		{"QIM_MAILBOX_METRICS", c.MetricsAddr}, {"QIM_GATEWAY_PUSH_ADDR", c.GatewayPushAddr},
	} {
		if _, _, err := net.SplitHostPort(a.addr); a.addr != "" && err != nil {
			return fmt.Errorf("%w: %s=%q: %v", ErrConfig, a.name, a.addr, err)
		}
	}
	if err := c.RPC.Validate(rpcauth.Addr{Var: "QIM_MAILBOX_LISTEN", Addr: c.ListenAddr},
		rpcauth.Addr{Var: "QIM_GATEWAY_PUSH_ADDR", Addr: c.GatewayPushAddr}); err != nil {
		return fmt.Errorf("%w: %w", ErrConfig, err)
	}
	switch {
	case c.PushQueue < 1 || c.PushQueue > pushQueueMax:
		return fmt.Errorf("%w: QIM_MAILBOX_PUSH_QUEUE=%d not in [1, %d]", ErrConfig, c.PushQueue, pushQueueMax)
	case c.MaterializeBatch < 1 || c.MaterializeBatch > contract.MailboxShardFIFOCapacity:
		return fmt.Errorf("%w: QIM_MAILBOX_MATERIALIZE_BATCH=%d not in [1, %d]", ErrConfig, c.MaterializeBatch,
			contract.MailboxShardFIFOCapacity)
	}
	return nil
}

// validateOwned takes every shard when none is named, and otherwise sorts the owned shards and
// refuses duplicates and shards the topic does not have.
func (c *Config) validateOwned(n contract.ShardCount) error {
	owned, err := shardset.Normalize(c.OwnedShards, n, "QIM_MAILBOX_OWNED_SHARDS")
	if err != nil {
		return fmt.Errorf("%w: %w", ErrConfig, err)
	}
	c.OwnedShards = owned
	return nil
}

func (c *Config) shards() contract.ShardCount { return contract.ShardCount(c.ShardCount) }
