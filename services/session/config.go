package session

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"

	"github.com/qim-dev/qim/contract"
)

// Package tuning (not contract values).
const (
	// maxPageSize caps PullSessionList.limit; larger requests are clamped, as the proto says.
	maxPageSize = 100
	// headScan is how many of a conversation's newest records are read to find a head that is
	// not CONTROL. A conversation whose headScan newest records are all CONTROL shows no head.
	headScan = 8
)

// Config is the SessionProjection's configuration. Each field maps 1:1 to the environment
// variable in its comment; FromEnv reads them and Validate fills defaults.
type Config struct {
	// RedisAddr (QIM_REDIS_ADDR) is the core Redis: the writer's hot history (read only here)
	// and the session state (lists, read watermarks, checkpoints). Required. It must run AOF with
	// appendfsync always, like every holder of user state that cannot be replayed: a MARK_READ
	// lost in a host crash would move a watermark back.
	RedisAddr string
	// KafkaBrokers (QIM_KAFKA_BROKERS, comma-separated) host the dispatch topic. Required.
	KafkaBrokers []string
	// ShardCount (QIM_MAILBOX_SHARD_COUNT) is the partition count the dispatch topic must have.
	// Default contract.MailboxShardsDefault (64); a power of two in [1, 65536]. Writer, fanout,
	// mailbox and session must agree; start-up refuses a topic with another count.
	ShardCount int
	// Topic (QIM_SESSION_DISPATCH_TOPIC) is the dispatch topic. Default contract.TopicDispatch.
	// Only tests and migrations point elsewhere; the checkpoint key is per topic name.
	Topic string
	// ListenAddr (QIM_SESSION_LISTEN) is the gRPC address of the Session service. Default
	// 127.0.0.1:7104. Opened only after the projection caught up with the log end seen at start.
	ListenAddr string
	// MetricsAddr (QIM_SESSION_METRICS) serves /metrics, /healthz and pprof. Default
	// 127.0.0.1:9104.
	MetricsAddr string
	// AllowRelaxedRedis (QIM_DEV_ALLOW_RELAXED_REDIS=1) accepts appendfsync everysec on a
	// loopback Redis for development. Never in production.
	AllowRelaxedRedis bool
	// PageSize (QIM_SESSION_PAGE_SIZE) is the page size when a request asks for 0. Default 20,
	// at most 100. Larger first screens cost more history reads per uncached row.
	PageSize int
	// SnapshotUsers (QIM_SESSION_SNAPSHOT_USERS) bounds the users whose list snapshot is kept in
	// memory (least recently used are evicted). Default 4,096. A snapshot costs ~40 bytes per
	// conversation plus ~200 bytes per row shown; an evicted user's next request rebuilds it
	// from Redis (one ZRANGE of the whole list).
	SnapshotUsers int
	// PollMax (QIM_SESSION_POLL_MAX) is the most dispatch records applied in one Redis
	// pipeline. Default 1,024. Larger batches amortise round trips while catching up.
	PollMax int
	// HeadBodyMax (QIM_SESSION_HEAD_BODY_MAX) is the largest body a session head carries; a
	// larger one is left out (the client fetches it with PULL_HISTORY). Default 1,024 bytes, at
	// most contract.InlineBodyBudgetBytes. It bounds a page to ~100 KiB.
	HeadBodyMax int
}

// ErrConfig is wrapped by every validation error.
var ErrConfig = errors.New("session: invalid config")

// Validate rejects bad values and fills documented defaults.
func (c *Config) Validate() error {
	if c.RedisAddr == "" {
		return fmt.Errorf("%w: QIM_REDIS_ADDR is required", ErrConfig)
	}
	if len(c.KafkaBrokers) == 0 {
		return fmt.Errorf("%w: QIM_KAFKA_BROKERS is required", ErrConfig)
	}
	if c.ShardCount == 0 {
		c.ShardCount = contract.MailboxShardsDefault
	}
	if _, err := contract.NewShardCount(c.ShardCount); err != nil {
		return fmt.Errorf("%w: QIM_MAILBOX_SHARD_COUNT: %v", ErrConfig, err)
	}
	setDefault(&c.Topic, contract.TopicDispatch)
	setDefault(&c.ListenAddr, "127.0.0.1:7104")
	setDefault(&c.MetricsAddr, "127.0.0.1:9104")
	for _, a := range []string{c.ListenAddr, c.MetricsAddr, c.RedisAddr} {
		if _, _, err := net.SplitHostPort(a); err != nil {
			return fmt.Errorf("%w: address %q: %v", ErrConfig, a, err)
		}
	}
	for _, b := range []struct {
		name     string
		v        *int
		def, max int
	}{
		{"QIM_SESSION_PAGE_SIZE", &c.PageSize, 20, maxPageSize},
		{"QIM_SESSION_SNAPSHOT_USERS", &c.SnapshotUsers, 4096, 1 << 22},
		{"QIM_SESSION_POLL_MAX", &c.PollMax, 1024, 16384},
		{"QIM_SESSION_HEAD_BODY_MAX", &c.HeadBodyMax, 1024, contract.InlineBodyBudgetBytes},
	} {
		if *b.v == 0 {
			*b.v = b.def
		}
		if *b.v < 1 || *b.v > b.max {
			return fmt.Errorf("%w: %s %d not in [1, %d]", ErrConfig, b.name, *b.v, b.max)
		}
	}
	return nil
}

func setDefault(s *string, v string) {
	if *s == "" {
		*s = v
	}
}

// FromEnv reads the QIM_* variables named on the fields. Unset variables leave defaults to
// Validate; malformed values are errors, never silently ignored.
func FromEnv() (Config, error) {
	c := Config{
		RedisAddr: os.Getenv("QIM_REDIS_ADDR"), Topic: os.Getenv("QIM_SESSION_DISPATCH_TOPIC"),
		ListenAddr: os.Getenv("QIM_SESSION_LISTEN"), MetricsAddr: os.Getenv("QIM_SESSION_METRICS"),
		AllowRelaxedRedis: os.Getenv("QIM_DEV_ALLOW_RELAXED_REDIS") == "1",
	}
	if b := os.Getenv("QIM_KAFKA_BROKERS"); b != "" {
		c.KafkaBrokers = strings.Split(b, ",")
	}
	for _, i := range []struct {
		env string
		dst *int
	}{
		{"QIM_MAILBOX_SHARD_COUNT", &c.ShardCount},
		{"QIM_SESSION_PAGE_SIZE", &c.PageSize},
		{"QIM_SESSION_SNAPSHOT_USERS", &c.SnapshotUsers},
		{"QIM_SESSION_POLL_MAX", &c.PollMax},
		{"QIM_SESSION_HEAD_BODY_MAX", &c.HeadBodyMax},
	} {
		if v := os.Getenv(i.env); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil {
				return c, fmt.Errorf("%w: %s=%q: %v", ErrConfig, i.env, v, err)
			}
			*i.dst = n
		}
	}
	return c, nil
}
