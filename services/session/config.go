package session

import (
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/services/internal/config"
	"github.com/qim-dev/qim/services/internal/cqlstore"
	"github.com/qim-dev/qim/services/internal/rpcauth"
	"github.com/qim-dev/qim/services/internal/shardset"
	"github.com/qim-dev/qim/services/internal/storeauth"
)

// Package tuning (not contract values).
const (
	// maxPageSize caps PullSessionList.limit; larger requests are clamped, as the proto says.
	maxPageSize = 100
	// headScan is how many of a conversation's newest records are read to find a head that is
	// not CONTROL. A conversation whose headScan newest records are all CONTROL shows no head.
	headScan = 8
	// maxFetchWait bounds QIM_SESSION_FETCH_WAIT: a session list may lag the log by the wait,
	// and a second is already longer than a user tolerates on the screen.
	maxFetchWait = time.Second
	// fetchGatherBytes is what the broker gathers under the fetch wait: far more than the
	// dispatch records of one wait at any rate the machine carries, so the wait, not the size,
	// ends a fetch.
	fetchGatherBytes = 4 << 20
)

// Config is the SessionProjection's configuration: one field per QIM_* variable (the tags give
// its name, unit and help line; docs/config.md and `qim session --help` are generated from them).
// Defaults live in DefaultConfig; the comments here give each knob's trade-off.
type Config struct {
	// RedisAddr is the core Redis: the writer's hot history (read only here) and the session
	// state (lists, read watermarks, checkpoints). It must run AOF with appendfsync always, like
	// every holder of user state that cannot be replayed: a MARK_READ lost in a host crash would
	// move a watermark back.
	RedisAddr string `env:"QIM_REDIS_ADDR" required:"true" doc:"core Redis (host:port) holding history and session state; must run AOF with appendfsync always"`
	// KafkaBrokers host the dispatch topic the projection consumes.
	KafkaBrokers []string `env:"QIM_KAFKA_BROKERS" required:"true" doc:"Kafka-protocol brokers (host:port,…) hosting the dispatch topic"`
	// Store credentials and TLS (all optional; services/internal/storeauth).
	RedisAuth storeauth.Redis
	KafkaAuth storeauth.Kafka
	kafkaSec  []kgo.Opt // KafkaAuth's client options, built by Validate
	// ShardCount is the partition count the dispatch topic must have: a power of two in
	// [1, 65536]. Writer, fanout, mailbox and session must agree; start-up refuses a topic with
	// another count.
	ShardCount int `env:"QIM_MAILBOX_SHARD_COUNT" unit:"partitions" doc:"partition count the dispatch topic must have (a power of two; every service agrees)"`
	// OwnedShards are the shards (dispatch partitions) this instance projects and whose users it
	// serves; a request for a user of another shard is refused UNAVAILABLE, because snapshots and
	// dirty markers are process-local and only the projecting instance keeps them fresh. Gateways
	// route by contract.ShardCount.InstanceShards, so instance i of n owns that range. Two
	// instances owning one shard are fenced by the checkpoint compare-and-set (QIMFENCED): the one
	// that falls behind stops, so an overlap costs a restart, never a lost or interleaved record.
	OwnedShards shardset.Set `env:"QIM_SESSION_OWNED_SHARDS" default:"all shards" doc:"shards this instance projects and serves, e.g. 0-31 or 0,4,8-11 (ranges inclusive)"`
	// Topic is the dispatch topic. Only tests and migrations point elsewhere; the checkpoint key
	// is per topic name.
	Topic string `env:"QIM_SESSION_DISPATCH_TOPIC" doc:"dispatch topic consumed (tests and migrations only)"`
	// ListenAddr is the gRPC address of the Session service. It is opened only after the
	// projection caught up with the log end seen at start, so a first page never shows a list
	// that is still replaying.
	ListenAddr string `env:"QIM_SESSION_LISTEN" doc:"gRPC listen address (gateways call PullSessionList and MarkRead here), opened after the catch-up"`
	// MetricsAddr serves /metrics, /healthz and /debug/pprof.
	MetricsAddr string `env:"QIM_SESSION_METRICS" doc:"address of /metrics, /healthz and /debug/pprof"`
	// RPC is the internal RPC boundary: mTLS with the role whitelist, or plaintext on loopback
	// for development (ADR-0025).
	RPC rpcauth.Config
	// AllowRelaxedRedis accepts appendfsync everysec on a loopback Redis, for development only: a
	// host crash would lose read watermarks and checkpoints written in the last second.
	AllowRelaxedRedis bool `env:"QIM_DEV_ALLOW_RELAXED_REDIS" doc:"development only: accept appendfsync everysec on a loopback Redis"`
	// PageSize is the page size when a request asks for 0. Larger first screens cost more
	// history reads per uncached row.
	PageSize int `env:"QIM_SESSION_PAGE_SIZE" unit:"rows" doc:"rows of a PULL_SESSION_LIST page that asks for 0 (1..100)"`
	// SnapshotUsers bounds the users whose list snapshot is kept in memory (least recently used
	// are evicted). A snapshot costs ~40 bytes per conversation plus ~200 bytes per row shown; an
	// evicted user's next request rebuilds it from Redis (one ZRANGE of the whole list).
	SnapshotUsers int `env:"QIM_SESSION_SNAPSHOT_USERS" unit:"users" doc:"users whose session-list snapshot is cached (least recently used evicted; max 4194304)"`
	// PollMax is the most dispatch records applied in one Redis pipeline. Larger batches
	// amortise round trips while catching up.
	PollMax int `env:"QIM_SESSION_POLL_MAX" unit:"records" doc:"dispatch records applied in one Redis pipeline (1..16384)"`
	// FetchWait is how long the broker holds a dispatch fetch to gather records before it
	// answers. The projection is off the delivery path (a message is delivered by the MailboxNode
	// whatever the session list shows), so a list may lag by the wait; in return one fetch
	// carries a wait's worth of records instead of one or two. Measured at 250 msg/s: the
	// projection's broker requests fell from 0.49–0.89 to 0.07 per message (docs/perf.md).
	FetchWait time.Duration `env:"QIM_SESSION_FETCH_WAIT" doc:"how long the broker holds a dispatch fetch to gather records (above 0, at most 1s; the session list may lag by it)"`
	// HeadBodyMax is the largest body a session head carries; a larger one is left out (the
	// client fetches it with PULL_HISTORY). At most contract.InlineBodyBudgetBytes; it bounds a
	// page to ~100 KiB.
	HeadBodyMax int `env:"QIM_SESSION_HEAD_BODY_MAX" unit:"bytes" doc:"largest body a session head carries; larger ones are left out (at most the inline body budget)"`
	// History is where history lives. Tiered, tails (heads and exact unread) below a
	// conversation's hot floor are read from the CQL archive, the tier the writer trimmed them to.
	History cqlstore.BackendConfig
}

// DefaultConfig is the configuration with every default set and the required fields empty.
// OwnedShards stays empty: Validate takes every shard of ShardCount.
func DefaultConfig() Config {
	return Config{
		ShardCount:    contract.MailboxShardsDefault,
		Topic:         contract.TopicDispatch,
		ListenAddr:    "127.0.0.1:7104",
		MetricsAddr:   "127.0.0.1:9104",
		PageSize:      20,
		SnapshotUsers: 4096,
		PollMax:       1024,
		HeadBodyMax:   1024,
		FetchWait:     50 * time.Millisecond,
	}
}

// ErrConfig is wrapped by every configuration error.
var ErrConfig = errors.New("session: invalid config")

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
	var serr error
	if c.kafkaSec, serr = c.KafkaAuth.Opts(); serr != nil {
		return fmt.Errorf("%w: %w", ErrConfig, serr)
	}
	if err := c.RedisAuth.Validate(); err != nil {
		return fmt.Errorf("%w: %w", ErrConfig, err)
	}
	n, err := contract.NewShardCount(c.ShardCount)
	if err != nil {
		return fmt.Errorf("%w: QIM_MAILBOX_SHARD_COUNT=%d: %v", ErrConfig, c.ShardCount, err)
	}
	owned, err := shardset.Normalize(c.OwnedShards, n, "QIM_SESSION_OWNED_SHARDS")
	if err != nil {
		return fmt.Errorf("%w: %w", ErrConfig, err)
	}
	c.OwnedShards = owned
	for _, a := range []struct{ name, addr string }{
		{"QIM_SESSION_LISTEN", c.ListenAddr}, {"QIM_SESSION_METRICS", c.MetricsAddr}, {"QIM_REDIS_ADDR", c.RedisAddr},
	} {
		if _, _, err := net.SplitHostPort(a.addr); err != nil {
			return fmt.Errorf("%w: %s=%q: %v", ErrConfig, a.name, a.addr, err)
		}
	}
	for _, b := range []struct {
		name string
		v    int
		max  int
	}{
		{"QIM_SESSION_PAGE_SIZE", c.PageSize, maxPageSize},
		{"QIM_SESSION_SNAPSHOT_USERS", c.SnapshotUsers, 1 << 22},
		{"QIM_SESSION_POLL_MAX", c.PollMax, 16384},
		{"QIM_SESSION_HEAD_BODY_MAX", c.HeadBodyMax, contract.InlineBodyBudgetBytes},
	} {
		if b.v < 1 || b.v > b.max {
			return fmt.Errorf("%w: %s=%d not in [1, %d]", ErrConfig, b.name, b.v, b.max)
		}
	}
	if err := c.RPC.Validate(rpcauth.Addr{Var: "QIM_SESSION_LISTEN", Addr: c.ListenAddr}); err != nil {
		return fmt.Errorf("%w: %w", ErrConfig, err)
	}
	if c.FetchWait <= 0 || c.FetchWait > maxFetchWait {
		return fmt.Errorf("%w: QIM_SESSION_FETCH_WAIT=%v not in (0, %v]", ErrConfig, c.FetchWait, maxFetchWait)
	}
	if err := c.History.Validate(); err != nil {
		return fmt.Errorf("%w: %w", ErrConfig, err)
	}
	return nil
}

func (c *Config) shards() contract.ShardCount { return contract.ShardCount(c.ShardCount) }
