package notify

import (
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/services/authn"
	"github.com/qim-dev/qim/services/internal/config"
	"github.com/qim-dev/qim/services/internal/rpcauth"
	"github.com/qim-dev/qim/services/internal/storeauth"
)

// Bounds checked by Validate that are not contract values.
const (
	maxConcurrency = 4096
	maxGiveUp      = 24 * time.Hour
)

// Config is the NotificationService's configuration: one field per QIM_* variable (docs/config.md
// and `qim notify --help` are generated from the tags). Defaults live in DefaultConfig.
type Config struct {
	// KafkaBrokers host qim.dispatch (what reaches which mailbox) and qim.presence (who is
	// online).
	KafkaBrokers []string `env:"QIM_KAFKA_BROKERS" required:"true" doc:"Kafka-protocol brokers (host:port,…) hosting qim.dispatch and qim.presence"`
	KafkaAuth    storeauth.Kafka
	kafkaSec     []kgo.Opt
	// RedisAddr is the core Redis, where the gateways store the push registrations and this
	// service marks the notifications its providers accepted.
	RedisAddr string `env:"QIM_REDIS_ADDR" required:"true" doc:"core Redis (host:port) holding the devices' push registrations"`
	RedisAuth storeauth.Redis
	// ShardCount must equal the other services' (the partition count of both topics).
	ShardCount int `env:"QIM_MAILBOX_SHARD_COUNT" unit:"shards" doc:"mailbox shards = qim.dispatch and qim.presence partitions; the same on every service"`
	// Group names where the qim.dispatch positions are stored (Kafka's offset API, no
	// membership). Run exactly one NotificationService per group.
	Group string `env:"QIM_NOTIFY_GROUP" doc:"group under which the qim.dispatch positions are stored; run exactly one notify per group"`
	// SessionAddrs are the SessionProjection instances, as the gateways list them (entry i of n
	// serves the i-th of n equal shard ranges): each notification's badge is the user's unread
	// total asked from the user's instance (Session.Badge). Unset: notifications carry no badge.
	SessionAddrs []string `env:"QIM_SESSION_ADDRS" doc:"SessionProjection gRPC addresses, as the gateways list them, for the badge (unset: no badge)"`
	// RPC is the internal RPC boundary the badge is asked over (the notify role).
	RPC rpcauth.Config
	// MetricsAddr serves /metrics, /healthz and pprof.
	MetricsAddr string `env:"QIM_NOTIFY_METRICS" doc:"address of /metrics, /healthz and /debug/pprof"`

	// Providers. A platform without its settings is not served: its registrations are
	// skipped and counted (reason="no_provider").
	WebhookURL string `env:"QIM_NOTIFY_WEBHOOK_URL" doc:"push relay for WEBHOOK registrations (https, or http on loopback); unset: not served"`
	// FCMCredentials is a Google service-account JSON key file (project_id, client_email,
	// private_key, token_uri).
	FCMCredentials string `env:"QIM_NOTIFY_FCM_CREDENTIALS" doc:"service-account JSON key file for FCM HTTP v1; unset: FCM not served"`
	FCMEndpoint    string `env:"QIM_NOTIFY_FCM_ENDPOINT" doc:"FCM API base URL (tests point it at a stand-in)"`
	// APNsKey is the .p8 signing key of an APNs auth key (token-based connection trust).
	APNsKey      string `env:"QIM_NOTIFY_APNS_KEY" doc:"APNs auth key file (.p8, PKCS#8 P-256); unset: APNs not served"`
	APNsKeyID    string `env:"QIM_NOTIFY_APNS_KEY_ID" doc:"key id of the APNs auth key"`
	APNsTeamID   string `env:"QIM_NOTIFY_APNS_TEAM_ID" doc:"Apple developer team id that owns the key"`
	APNsEndpoint string `env:"QIM_NOTIFY_APNS_ENDPOINT" doc:"APNs base URL (https://api.sandbox.push.apple.com for development builds)"`
	// APNsCA trusts a private CA for the APNs endpoint in addition to the system roots: for a
	// stand-in in tests, or a corporate TLS proxy.
	APNsCA string `env:"QIM_NOTIFY_APNS_CA" doc:"extra CA certificate (PEM) to trust for the APNs endpoint; unset: system roots only"`

	// FeedTopic turns on the post-send feed: every committed message of FeedTenants, read from
	// qim.outbox, produced to this topic as a qim.v1 FeedMessage (at least once, key =
	// conversation_id). The topic must exist. Its position in qim.outbox is stored under
	// FeedGroup.
	FeedTopic   string   `env:"QIM_NOTIFY_FEED_TOPIC" doc:"post-send feed topic the product consumes (e.g. qim.feed; must exist); unset: no feed"`
	FeedTenants []string `env:"QIM_NOTIFY_FEED_TENANTS" doc:"tenants whose messages go to the feed, comma-separated (unset: every tenant)"`
	FeedGroup   string   `env:"QIM_NOTIFY_FEED_GROUP" doc:"group under which the feed's qim.outbox position is stored"`
	feedTenants map[contract.TenantID]bool
	// Timeout bounds one provider request.
	Timeout time.Duration `env:"QIM_NOTIFY_TIMEOUT" doc:"bound of one provider request (100ms..1m)"`
	// Concurrency bounds the provider requests in flight.
	Concurrency int `env:"QIM_NOTIFY_CONCURRENCY" unit:"requests" doc:"provider requests in flight (1..4096)"`
	// RetryMin and RetryMax bound the wait between attempts of one notification (doubling).
	RetryMin time.Duration `env:"QIM_NOTIFY_RETRY_MIN" doc:"first wait before retrying a failed notification (doubles up to the max)"`
	RetryMax time.Duration `env:"QIM_NOTIFY_RETRY_MAX" doc:"longest wait between retries of one notification"`
	// GiveUp is how long one notification is retried. A batch's position is stored only once
	// each of its notifications is accepted, refused for good or given up: a provider that stays
	// down holds the position for at most this long per batch, and a notification older than
	// that would wake the device for a message it has likely seen.
	GiveUp time.Duration `env:"QIM_NOTIFY_GIVE_UP" doc:"how long one notification is retried before it is dropped, counted (at most 24h)"`
}

// DefaultConfig is the configuration with every default set and the required fields empty.
func DefaultConfig() Config {
	return Config{
		ShardCount:   contract.MailboxShardsDefault,
		Group:        "qim-notify",
		FeedGroup:    "qim-feed",
		MetricsAddr:  "127.0.0.1:9109",
		FCMEndpoint:  "https://fcm.googleapis.com",
		APNsEndpoint: "https://api.push.apple.com",
		Timeout:      5 * time.Second,
		Concurrency:  64,
		RetryMin:     200 * time.Millisecond,
		RetryMax:     30 * time.Second,
		GiveUp:       10 * time.Minute,
	}
}

// ErrConfig is wrapped by every configuration error.
var ErrConfig = errors.New("notify: invalid config")

// FromEnv reads the QIM_* variables over DefaultConfig.
func FromEnv() (Config, error) {
	return config.FromEnv(DefaultConfig(), ErrConfig)
}

// Validate fills the defaults of zero fields and rejects bad values.
func (c *Config) Validate() error {
	if err := config.Prepare(c, DefaultConfig(), ErrConfig); err != nil {
		return err
	}
	var err error
	if c.kafkaSec, err = c.KafkaAuth.Opts(); err != nil {
		return fmt.Errorf("%w: %w", ErrConfig, err)
	}
	if err := c.RedisAuth.Validate(); err != nil {
		return fmt.Errorf("%w: %w", ErrConfig, err)
	}
	for _, a := range []struct{ name, addr string }{{"QIM_REDIS_ADDR", c.RedisAddr}, {"QIM_NOTIFY_METRICS", c.MetricsAddr}} {
		if _, _, err := net.SplitHostPort(a.addr); err != nil {
			return fmt.Errorf("%w: %s=%q: %v", ErrConfig, a.name, a.addr, err)
		}
	}
	if _, err := contract.NewShardCount(c.ShardCount); err != nil {
		return fmt.Errorf("%w: QIM_MAILBOX_SHARD_COUNT=%d: %w", ErrConfig, c.ShardCount, err)
	}
	if len(c.SessionAddrs) > 0 {
		addrs := make([]rpcauth.Addr, len(c.SessionAddrs))
		for i, a := range c.SessionAddrs {
			addrs[i] = rpcauth.Addr{Var: "QIM_SESSION_ADDRS", Addr: a}
		}
		if err := c.RPC.Validate(addrs...); err != nil {
			return fmt.Errorf("%w: %w", ErrConfig, err)
		}
	}
	return errors.Join(c.validateProviders(), c.validateRetries(), c.validateFeed())
}

func (c *Config) validateFeed() error {
	if len(c.FeedTenants) == 0 {
		return nil
	}
	if c.FeedTopic == "" {
		return fmt.Errorf("%w: QIM_NOTIFY_FEED_TENANTS without QIM_NOTIFY_FEED_TOPIC", ErrConfig)
	}
	c.feedTenants = map[contract.TenantID]bool{}
	for _, s := range c.FeedTenants {
		t, err := authn.ParseTenant(s)
		if err != nil {
			return fmt.Errorf("%w: QIM_NOTIFY_FEED_TENANTS: %w", ErrConfig, err)
		}
		c.feedTenants[t] = true
	}
	return nil
}

func (c *Config) validateProviders() error {
	for _, u := range []struct{ name, v string }{{"QIM_NOTIFY_WEBHOOK_URL", c.WebhookURL},
		{"QIM_NOTIFY_FCM_ENDPOINT", c.FCMEndpoint}, {"QIM_NOTIFY_APNS_ENDPOINT", c.APNsEndpoint}} {
		if u.v == "" {
			continue
		}
		if err := authn.CheckSecureURL(u.v); err != nil {
			return fmt.Errorf("%w: %s: %w", ErrConfig, u.name, err)
		}
	}
	if c.APNsKey != "" && (c.APNsKeyID == "" || c.APNsTeamID == "") {
		return fmt.Errorf("%w: QIM_NOTIFY_APNS_KEY needs QIM_NOTIFY_APNS_KEY_ID and QIM_NOTIFY_APNS_TEAM_ID", ErrConfig)
	}
	return nil
}

func (c *Config) validateRetries() error {
	switch {
	case c.Timeout < 100*time.Millisecond || c.Timeout > time.Minute:
		return fmt.Errorf("%w: QIM_NOTIFY_TIMEOUT=%v not in [100ms, 1m]", ErrConfig, c.Timeout)
	case c.Concurrency < 1 || c.Concurrency > maxConcurrency:
		return fmt.Errorf("%w: QIM_NOTIFY_CONCURRENCY=%d not in [1, %d]", ErrConfig, c.Concurrency, maxConcurrency)
	case c.RetryMin <= 0 || c.RetryMax < c.RetryMin:
		return fmt.Errorf("%w: QIM_NOTIFY_RETRY_MIN=%v, QIM_NOTIFY_RETRY_MAX=%v: want 0 < min <= max", ErrConfig, c.RetryMin, c.RetryMax)
	case c.GiveUp < c.RetryMin || c.GiveUp > maxGiveUp:
		return fmt.Errorf("%w: QIM_NOTIFY_GIVE_UP=%v not in [QIM_NOTIFY_RETRY_MIN, %v]", ErrConfig, c.GiveUp, maxGiveUp)
	}
	return nil
}

// shards is the validated shard count; call only after Validate.
func (c *Config) shards() contract.ShardCount {
	n, _ := contract.NewShardCount(c.ShardCount)
	return n
}
