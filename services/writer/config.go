package writer

import (
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/services/internal/config"
	"github.com/qim-dev/qim/services/internal/cqlstore"
	"github.com/qim-dev/qim/services/internal/moderation"
	"github.com/qim-dev/qim/services/internal/rpcauth"
	"github.com/qim-dev/qim/services/internal/storeauth"
)

// Config is the ConversationWriter's configuration: one field per QIM_* variable (the tags give
// its name, unit and help line; docs/config.md and `qim writer --help` are generated from them).
// Defaults live in DefaultConfig; the comments here give each knob's trade-off.
type Config struct {
	// RedisAddr holds commit facts (idempotency keys, sequences, the HLC windows, the
	// writer_id lease). The writer refuses to start unless it runs AOF with appendfsync always.
	RedisAddr string `env:"QIM_REDIS_ADDR" required:"true" doc:"core Redis (host:port) holding commit facts; must run AOF with appendfsync always"`
	// KafkaBrokers host the qim.outbox topic; a SEND is acknowledged only after its record is
	// acknowledged there by every in-sync replica.
	KafkaBrokers []string `env:"QIM_KAFKA_BROKERS" required:"true" doc:"Kafka-protocol brokers (host:port,…) hosting qim.outbox"`
	// Store credentials and TLS (all optional; services/internal/storeauth).
	RedisAuth storeauth.Redis
	KafkaAuth storeauth.Kafka
	kafkaSec  []kgo.Opt // KafkaAuth's client options, built by Validate
	// ListenAddr is the gRPC address the gateways call.
	ListenAddr string `env:"QIM_WRITER_LISTEN" doc:"gRPC listen address (gateways call SendStream and PullHistory here)"`
	// MetricsAddr serves /metrics, /healthz and /debug/pprof.
	MetricsAddr string `env:"QIM_WRITER_METRICS" doc:"address of /metrics, /healthz and /debug/pprof"`
	// RegionID is embedded in every message_id; distinct regions never issue the same id.
	RegionID uint16 `env:"QIM_REGION_ID" doc:"region_id embedded in every message_id"`
	// WriterID pins the writer_id lease to one id, for environments with stable ordinals
	// (StatefulSets). Unset, the writer claims the lowest free id at start; a pinned id that is
	// taken refuses to start rather than share it.
	WriterID *uint16 `env:"QIM_WRITER_ID" doc:"pin the writer_id lease to this id (unset: claim the lowest free one)"`
	// InflightPerConn bounds sends in flight per gateway stream; at the limit the writer stops
	// reading the stream (back-pressure to the gateway). Lower hides latency in the gateway's
	// queues; higher only adds memory once Redis and Kafka are saturated.
	InflightPerConn int `env:"QIM_WRITER_REQUEST_INFLIGHT_LIMIT" unit:"sends" doc:"sends in flight per gateway stream before the writer stops reading it (max 8192)"`
	// BatchMax is how many sends one Redis pipeline carries. Larger batches amortise the
	// per-event-loop fsync of appendfsync always; a batch is never held back waiting to fill, so
	// this does not add latency.
	BatchMax int `env:"QIM_WRITER_BATCH_MAX" unit:"sends" doc:"sends carried by one Redis commit pipeline (1..4096)"`
	// RecoveryInterval is how often unfinished commits are resumed.
	RecoveryInterval time.Duration `env:"QIM_WRITER_RECOVERY_INTERVAL" doc:"how often unfinished commits are resumed"`
	// RecoveryGrace is how old an unfinished commit must be before recovery takes it, so it does
	// not race the live path.
	RecoveryGrace time.Duration `env:"QIM_WRITER_RECOVERY_GRACE" doc:"age of an unfinished commit before the recovery loop takes it"`
	// AllowRelaxedRedis accepts appendfsync everysec on a loopback Redis, for development only: a
	// host crash would lose commit facts acknowledged in the last second.
	AllowRelaxedRedis bool `env:"QIM_DEV_ALLOW_RELAXED_REDIS" doc:"development only: accept appendfsync everysec on a loopback Redis"`
	// ShardCount is the mailbox shard count: the writer freezes a group message's target shards
	// with it, so it must equal the fanout's and the MailboxNodes' (they refuse a record whose
	// shards disagree with their own routing rather than misroute it).
	ShardCount int `env:"QIM_MAILBOX_SHARD_COUNT" unit:"shards" doc:"mailbox shard count (power of two; the same on writer, fanout and mailbox): group target shards are frozen with it"`
	// MaxBodyBytes is the largest body accepted; larger sends get PAYLOAD_TOO_LARGE.
	MaxBodyBytes int `env:"QIM_WRITER_MAX_BODY" unit:"bytes" doc:"largest message body accepted (at most the frame payload limit)"`
	// RecallWindow bounds a recall (ADR-0037): the sender may take a message back this long
	// after sending it. Edits and deletes have no window.
	RecallWindow time.Duration `env:"QIM_WRITER_RECALL_WINDOW" doc:"how long after sending the sender may still recall a message (1s..720h)"`
	// History is where history lives. Tiered, PULL_HISTORY reads below each conversation's hot
	// floor from the CQL archive and the writer trims the hot tier below the archive watermark.
	History cqlstore.BackendConfig
	// HotWindow is how long history stays in Redis at least (tiered). It is a capacity knob:
	// Redis holds the window × the write rate; reads older than it cost CQL reads.
	HotWindow time.Duration `env:"QIM_HISTORY_HOT_WINDOW" doc:"history younger than this always stays in Redis (tiered backend); older history is trimmed once archived"`
	// TrimInterval is how often the hot-tier trim runs (tiered).
	TrimInterval time.Duration `env:"QIM_HISTORY_TRIM_INTERVAL" doc:"how often the hot-tier trim runs (tiered backend)"`
	// TrimMargin keeps the trim this far behind the archive watermark and the oldest unfinished
	// commit: the watermark is stamped by the archiver's clock, and skew between the two hosts
	// must not let the trim run ahead of what is archived (ADR-0022).
	TrimMargin time.Duration `env:"QIM_HISTORY_TRIM_MARGIN" doc:"how far the trim stays behind the archive watermark and the oldest unfinished commit (covers clock skew)"`
	// RPC is the internal RPC boundary: mTLS with the role whitelist, or plaintext on loopback
	// for development (ADR-0025).
	RPC rpcauth.Config
	// Moderation is the pre-send hook (moderation.Config): the product's endpoint asked about
	// every client SEND before it is reserved.
	Moderation moderation.Config
	// ArchiverGroup names the HistoryArchiver whose watermark bounds the trim.
	ArchiverGroup string `env:"QIM_ARCHIVER_GROUP" doc:"the HistoryArchiver group whose archive watermark bounds the trim (tiered backend)"`
}

// DefaultConfig is the configuration with every default set and the required fields empty.
func DefaultConfig() Config {
	return Config{
		ListenAddr:       "127.0.0.1:7101",
		MetricsAddr:      "127.0.0.1:9101",
		InflightPerConn:  contract.WriterInflightPerConnDefault,
		BatchMax:         256,
		RecoveryInterval: 2 * time.Second,
		RecoveryGrace:    5 * time.Second,
		MaxBodyBytes:     contract.MaxFramePayload,
		RecallWindow:     contract.AmendRecallWindow,
		ShardCount:       contract.MailboxShardsDefault,
		HotWindow:        contract.HistoryHotWindow,
		TrimInterval:     5 * time.Second,
		TrimMargin:       time.Minute,
		ArchiverGroup:    contract.GroupArchiver,
		Moderation:       moderation.DefaultConfig(),
	}
}

// ErrConfig is wrapped by every configuration error.
var ErrConfig = errors.New("writer: invalid config")

// FromEnv reads the QIM_* variables over DefaultConfig. Malformed values are errors naming the
// variable.
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
	if err := c.RedisAuth.Validate(); err != nil {
		return fmt.Errorf("%w: %w", ErrConfig, err)
	}
	for _, a := range []struct{ name, addr string }{
		{"QIM_WRITER_LISTEN", c.ListenAddr}, {"QIM_WRITER_METRICS", c.MetricsAddr}, {"QIM_REDIS_ADDR", c.RedisAddr},
	} {
		if _, _, err := net.SplitHostPort(a.addr); err != nil {
			return fmt.Errorf("%w: %s=%q: %v", ErrConfig, a.name, a.addr, err)
		}
	}
	switch {
	case c.InflightPerConn < 1 || c.InflightPerConn > contract.WriterInflightPerConnMax:
		return fmt.Errorf("%w: QIM_WRITER_REQUEST_INFLIGHT_LIMIT=%d not in [1, %d]", ErrConfig, c.InflightPerConn, contract.WriterInflightPerConnMax)
	case c.BatchMax < 1 || c.BatchMax > 4096:
		return fmt.Errorf("%w: QIM_WRITER_BATCH_MAX=%d not in [1, 4096]", ErrConfig, c.BatchMax)
	case c.RecoveryInterval < 0 || c.RecoveryGrace < 0:
		return fmt.Errorf("%w: negative QIM_WRITER_RECOVERY_INTERVAL or QIM_WRITER_RECOVERY_GRACE", ErrConfig)
	case c.MaxBodyBytes < 1 || c.MaxBodyBytes > contract.MaxFramePayload:
		return fmt.Errorf("%w: QIM_WRITER_MAX_BODY=%d not in [1, %d]", ErrConfig, c.MaxBodyBytes, contract.MaxFramePayload)
	case c.RecallWindow < time.Second || c.RecallWindow > contract.HistoryRetention:
		return fmt.Errorf("%w: QIM_WRITER_RECALL_WINDOW=%s not in [1s, %s]", ErrConfig, c.RecallWindow, contract.HistoryRetention)
	}
	if err := c.Moderation.Validate(); err != nil {
		return fmt.Errorf("%w: %w", ErrConfig, err)
	}
	if _, err := contract.NewShardCount(c.ShardCount); err != nil {
		return fmt.Errorf("%w: QIM_MAILBOX_SHARD_COUNT=%d: %w", ErrConfig, c.ShardCount, err)
	}
	if c.HotWindow < 0 || c.TrimMargin < 0 || c.TrimInterval <= 0 {
		return fmt.Errorf("%w: QIM_HISTORY_HOT_WINDOW and QIM_HISTORY_TRIM_MARGIN must not be negative, QIM_HISTORY_TRIM_INTERVAL must be positive", ErrConfig)
	}
	if err := c.RPC.Validate(rpcauth.Addr{Var: "QIM_WRITER_LISTEN", Addr: c.ListenAddr}); err != nil {
		return fmt.Errorf("%w: %w", ErrConfig, err)
	}
	if err := c.History.Validate(); err != nil {
		return fmt.Errorf("%w: %w", ErrConfig, err)
	}
	return nil
}

// shards is the validated shard count; call only after Validate.
func (c *Config) shards() contract.ShardCount {
	n, _ := contract.NewShardCount(c.ShardCount)
	return n
}
