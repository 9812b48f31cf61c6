package archiver

import (
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/services/internal/config"
	"github.com/qim-dev/qim/services/internal/cqlstore"
	"github.com/qim-dev/qim/services/internal/storeauth"
)

// Bounds checked by Validate that are not contract values.
const (
	maxRetryBackoff = time.Minute
	maxUnreadyAfter = 1000
	// maxFetchWait bounds QIM_ARCHIVER_FETCH_WAIT: the archive lag grows by up to the wait, and
	// contract.SLOArchiveLagP99 must keep a wide margin over it.
	maxFetchWait = time.Second
	// fetchGatherBytes is what the broker gathers under the fetch wait: more than a wait's worth
	// of Outbox records at any rate the machine carries, so the wait, not the size, ends a fetch.
	fetchGatherBytes = 4 << 20
)

// Config is the HistoryArchiver's configuration: one field per QIM_* variable (docs/config.md
// and `qim archiver --help` are generated from the tags). Defaults live in DefaultConfig.
type Config struct {
	// KafkaBrokers host qim.outbox.
	KafkaBrokers []string `env:"QIM_KAFKA_BROKERS" required:"true" doc:"Kafka-protocol brokers (host:port,…) hosting qim.outbox"`
	// Store credentials and TLS (all optional; services/internal/storeauth).
	RedisAuth storeauth.Redis
	KafkaAuth storeauth.Kafka
	CQLAuth   storeauth.CQL
	kafkaSec  []kgo.Opt // KafkaAuth's client options, built by Validate
	// CQLHosts are the archive's contact points. The keyspace must have been migrated
	// (`qimctl cql migrate`); the archiver refuses to start on any other schema version.
	CQLHosts []string `env:"QIM_CQL_HOSTS" required:"true" doc:"CQL contact points (host:port,…) of the history archive"`
	// CQLKeyspace holds the archive's tables.
	CQLKeyspace string `env:"QIM_CQL_KEYSPACE" doc:"CQL keyspace of the history archive"`
	// CQLNoPeerDiscovery connects to the contact points only (a node behind a mapped port whose
	// advertised address is unreachable from here). Off, rows go straight to a replica.
	CQLNoPeerDiscovery bool `env:"QIM_CQL_NO_PEER_DISCOVERY" doc:"connect to the contact points only, without discovering the ring"`
	// CQLConcurrency is the most CQL writes in flight per batch phase. Higher shortens a batch on
	// a multi-node cluster; each write in flight costs a stream and some node memory.
	CQLConcurrency int `env:"QIM_ARCHIVER_CQL_CONCURRENCY" unit:"statements" doc:"most CQL writes in flight per batch (1..1024)"`
	// RedisAddr is the core Redis, where the archive watermark is published for the hot-tier
	// trim. Losing its last second only moves the watermark back (a later trim), so everysec
	// is enough here.
	RedisAddr string `env:"QIM_REDIS_ADDR" required:"true" doc:"core Redis (host:port) where the archive watermark is published"`
	// BatchSize is the most Outbox records archived as one batch. A batch is never held back to
	// fill; larger amortises the position commit, at the price of a larger replay after a crash.
	BatchSize int `env:"QIM_ARCHIVER_BATCH_SIZE" unit:"records" doc:"most Outbox records archived as one batch (1..4096)"`
	// FetchWait is how long the broker holds an Outbox fetch to gather records before it
	// answers. The archiver is off the delivery path, so the archive lag grows by up to the wait;
	// in return a fetch carries a wait's worth of records, one batch instead of several small
	// ones. Measured at 250 msg/s: broker requests 0.08–0.11 → 0.04 per message, archive lag p99
	// unchanged (docs/perf.md).
	FetchWait time.Duration `env:"QIM_ARCHIVER_FETCH_WAIT" doc:"how long the broker holds an Outbox fetch to gather records (above 0, at most 1s; the archive lag grows by up to it)"`
	// Group names where the Outbox position is stored (Kafka's offset API, no membership). Run
	// exactly one archiver per group.
	Group string `env:"QIM_ARCHIVER_GROUP" doc:"group under which the archiver's Outbox position is stored; one archiver per group"`
	// MetricsAddr serves /metrics, /healthz and pprof.
	MetricsAddr string `env:"QIM_ARCHIVER_METRICS" doc:"address of /metrics, /healthz and /debug/pprof"`
	// OutboxTopic is the log archived. It must have exactly one partition.
	OutboxTopic string `env:"QIM_ARCHIVER_OUTBOX_TOPIC" doc:"Outbox topic (exactly one partition)"`
	// RetryBackoffMin and RetryBackoffMax bound the wait between attempts of a failed batch,
	// doubling from min to max. A batch is retried forever and never skipped.
	RetryBackoffMin time.Duration `env:"QIM_ARCHIVER_RETRY_BACKOFF_MIN" doc:"first wait before retrying a failed batch (doubles up to the max)"`
	RetryBackoffMax time.Duration `env:"QIM_ARCHIVER_RETRY_BACKOFF_MAX" doc:"longest wait between retries of a failed batch (at most 1m)"`
	// UnreadyAfter is how many consecutive failed attempts make /healthz report 503, until a
	// batch succeeds. A CQL node that is down stops archiving, never sending: the probe says so.
	UnreadyAfter int `env:"QIM_ARCHIVER_UNREADY_AFTER" unit:"attempts" doc:"consecutive failed attempts before /healthz reports 503 (1..1000)"`
}

// DefaultConfig is the configuration with every default set and the required fields empty.
func DefaultConfig() Config {
	return Config{
		CQLKeyspace:     cqlstore.DefaultKeyspace,
		CQLConcurrency:  cqlstore.DefaultConcurrency,
		BatchSize:       contract.ArchiverBatchDefault,
		Group:           contract.GroupArchiver,
		MetricsAddr:     "127.0.0.1:9107",
		OutboxTopic:     contract.TopicOutbox,
		RetryBackoffMin: 100 * time.Millisecond,
		RetryBackoffMax: 5 * time.Second,
		UnreadyAfter:    3,
		FetchWait:       250 * time.Millisecond,
	}
}

// ErrConfig is wrapped by every configuration error.
var ErrConfig = errors.New("archiver: invalid config")

// FromEnv reads the QIM_* variables over DefaultConfig.
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
	if err := c.CQLAuth.Validate(); err != nil {
		return fmt.Errorf("%w: %w", ErrConfig, err)
	}
	for _, b := range c.KafkaBrokers {
		if _, _, err := net.SplitHostPort(b); err != nil {
			return fmt.Errorf("%w: QIM_KAFKA_BROKERS: broker %q: %v", ErrConfig, b, err)
		}
	}
	for name, addr := range map[string]string{"QIM_REDIS_ADDR": c.RedisAddr, "QIM_ARCHIVER_METRICS": c.MetricsAddr} {
		if _, _, err := net.SplitHostPort(addr); err != nil {
			return fmt.Errorf("%w: %s=%q: %v", ErrConfig, name, addr, err)
		}
	}
	cq := c.cql()
	if err := cq.Validate(); err != nil {
		return fmt.Errorf("%w: QIM_CQL_HOSTS, QIM_CQL_KEYSPACE or QIM_ARCHIVER_CQL_CONCURRENCY: %w", ErrConfig, err)
	}
	switch {
	case c.BatchSize < 1 || c.BatchSize > contract.ArchiverBatchMax:
		return fmt.Errorf("%w: QIM_ARCHIVER_BATCH_SIZE=%d not in [1, %d]", ErrConfig, c.BatchSize, contract.ArchiverBatchMax)
	case c.UnreadyAfter < 1 || c.UnreadyAfter > maxUnreadyAfter:
		return fmt.Errorf("%w: QIM_ARCHIVER_UNREADY_AFTER=%d not in [1, %d]", ErrConfig, c.UnreadyAfter, maxUnreadyAfter)
	case c.FetchWait <= 0 || c.FetchWait > maxFetchWait:
		return fmt.Errorf("%w: QIM_ARCHIVER_FETCH_WAIT=%v not in (0, %v]", ErrConfig, c.FetchWait, maxFetchWait)
	case c.RetryBackoffMin < 0 || c.RetryBackoffMax > maxRetryBackoff || c.RetryBackoffMax < c.RetryBackoffMin:
		return fmt.Errorf("%w: QIM_ARCHIVER_RETRY_BACKOFF_MIN=%v, _MAX=%v: want 0 <= min <= max <= %v", ErrConfig,
			c.RetryBackoffMin, c.RetryBackoffMax, maxRetryBackoff)
	}
	return nil
}

// cql is the store's view of the configuration.
func (c *Config) cql() cqlstore.Config {
	return cqlstore.Config{Hosts: c.CQLHosts, Keyspace: c.CQLKeyspace, Concurrency: c.CQLConcurrency,
		NoPeerDiscovery: c.CQLNoPeerDiscovery, Auth: c.CQLAuth}
}
