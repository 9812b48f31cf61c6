package fanout

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/services/internal/config"
)

func TestConfigValidate(t *testing.T) {
	brokers := []string{"127.0.0.1:9092"}
	tests := []struct {
		name    string
		cfg     Config
		wantErr bool
	}{
		{"defaults", Config{KafkaBrokers: brokers}, false},
		{"no brokers", Config{}, true},
		{"broker without port", Config{KafkaBrokers: []string{"localhost"}}, true},
		{"shard count not a power of two", Config{KafkaBrokers: brokers, ShardCount: 48}, true},
		{"shard count above the bucket count", Config{KafkaBrokers: brokers, ShardCount: 1 << 17}, true},
		{"shard count negative", Config{KafkaBrokers: brokers, ShardCount: -64}, true},
		{"one shard", Config{KafkaBrokers: brokers, ShardCount: 1}, false},
		{"batch above max", Config{KafkaBrokers: brokers, BatchSize: contract.FanoutBatchMax + 1}, true},
		{"batch negative", Config{KafkaBrokers: brokers, BatchSize: -1}, true},
		{"batch at min", Config{KafkaBrokers: brokers, BatchSize: contract.FanoutBatchMin}, false},
		{"batch at max", Config{KafkaBrokers: brokers, BatchSize: contract.FanoutBatchMax}, false},
		{"bad metrics address", Config{KafkaBrokers: brokers, MetricsAddr: "9106"}, true},
		{"same topic twice", Config{KafkaBrokers: brokers, DispatchTopic: contract.TopicOutbox}, true},
		{"backoff min above max", Config{KafkaBrokers: brokers, RetryBackoffMin: time.Second, RetryBackoffMax: time.Millisecond}, true},
		{"backoff negative", Config{KafkaBrokers: brokers, RetryBackoffMin: -time.Second}, true},
		{"backoff above cap", Config{KafkaBrokers: brokers, RetryBackoffMax: time.Hour}, true},
		{"unready after negative", Config{KafkaBrokers: brokers, UnreadyAfter: -1}, true},
		{"commit interval negative", Config{KafkaBrokers: brokers, CommitInterval: -time.Second}, true},
		{"commit interval above 10 s", Config{KafkaBrokers: brokers, CommitInterval: 11 * time.Second}, true},
		{"commit interval at 10 s", Config{KafkaBrokers: brokers, CommitInterval: 10 * time.Second}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tc.cfg
			err := cfg.Validate()
			if tc.wantErr {
				if !errors.Is(err, ErrConfig) {
					t.Fatalf("Validate() = %v, want ErrConfig", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Validate() = %v", err)
			}
			if tc.cfg.ShardCount == 0 && cfg.ShardCount != contract.MailboxShardsDefault {
				t.Errorf("shard count default %d", cfg.ShardCount)
			}
			if tc.cfg.BatchSize == 0 && cfg.BatchSize != contract.FanoutBatchDefault {
				t.Errorf("batch default %d", cfg.BatchSize)
			}
			if tc.cfg.CommitInterval == 0 && cfg.CommitInterval != 0 {
				t.Errorf("commit interval default %v, want 0 (after every batch)", cfg.CommitInterval)
			}
			if cfg.Group != "qim-fanout" || cfg.MetricsAddr != "127.0.0.1:9106" || cfg.OutboxTopic != contract.TopicOutbox ||
				cfg.DispatchTopic != contract.TopicDispatch || cfg.UnreadyAfter != 3 ||
				cfg.RetryBackoffMin != 100*time.Millisecond || cfg.RetryBackoffMax != 5*time.Second || cfg.DisableIdempotence {
				t.Errorf("defaults not filled: %+v", cfg)
			}
		})
	}
}

func TestFromEnv(t *testing.T) {
	t.Setenv("QIM_KAFKA_BROKERS", "a:1,b:2")
	t.Setenv("QIM_MAILBOX_SHARD_COUNT", "16")
	t.Setenv("QIM_FANOUT_BATCH_SIZE", "128")
	t.Setenv("QIM_FANOUT_GROUP", "g")
	t.Setenv("QIM_FANOUT_METRICS", "127.0.0.1:0")
	t.Setenv("QIM_FANOUT_RETRY_BACKOFF_MAX", "2s")
	t.Setenv("QIM_FANOUT_DISABLE_PRODUCER_IDEMPOTENCE", "true")
	t.Setenv("QIM_FANOUT_COMMIT_INTERVAL", "250ms")
	cfg, err := FromEnv()
	if err != nil {
		t.Fatal(err)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	if len(cfg.KafkaBrokers) != 2 || cfg.ShardCount != 16 || cfg.BatchSize != 128 || cfg.Group != "g" ||
		cfg.MetricsAddr != "127.0.0.1:0" || cfg.RetryBackoffMax != 2*time.Second || !cfg.DisableIdempotence ||
		cfg.CommitInterval != 250*time.Millisecond {
		t.Fatalf("FromEnv() = %+v", cfg)
	}
	for env, bad := range map[string]string{
		"QIM_FANOUT_BATCH_SIZE": "many", "QIM_FANOUT_RETRY_BACKOFF_MIN": "soon", "QIM_FANOUT_DISABLE_PRODUCER_IDEMPOTENCE": "maybe",
		"QIM_FANOUT_COMMIT_INTERVAL": "often",
	} {
		t.Run(env, func(t *testing.T) {
			t.Setenv(env, bad)
			if _, err := FromEnv(); !errors.Is(err, ErrConfig) {
				t.Fatalf("FromEnv with %s=%q = %v, want ErrConfig", env, bad, err)
			}
		})
	}
}

func TestFromEnvRefusesGarbageNamingTheVariable(t *testing.T) {
	for name, value := range map[string]string{
		"QIM_FANOUT_BATCH_SIZE":                   "garbage",
		"QIM_MAILBOX_SHARD_COUNT":                 "64.0",
		"QIM_FANOUT_RETRY_BACKOFF_MIN":            "100", // milliseconds are not a duration
		"QIM_FANOUT_COMMIT_INTERVAL":              "250",
		"QIM_FANOUT_DISABLE_PRODUCER_IDEMPOTENCE": "yes",
		"QIM_FANOUT_UNREADY_AFTER":                "0",  // zero over a non-zero default is ambiguous
		"QIM_FANOUT_RETRY_BACKOFF_MAX":            "0s", // likewise
		"QIM_KAFKA_BROKERS":                       "a:1,,b:2",
	} {
		t.Run(name, func(t *testing.T) {
			t.Setenv(name, value)
			_, err := FromEnv()
			if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), name) {
				t.Fatalf("%s=%s: %v", name, value, err)
			}
		})
	}
}

// An explicit zero commit interval is its default (commit after every batch), not an ambiguity.
func TestFromEnvAcceptsZeroCommitInterval(t *testing.T) {
	t.Setenv("QIM_FANOUT_COMMIT_INTERVAL", "0s")
	c, err := FromEnv()
	if err != nil || c.CommitInterval != 0 {
		t.Fatalf("FromEnv = %v, %v", c.CommitInterval, err)
	}
}

func TestValidateNamesTheVariable(t *testing.T) {
	base := func() Config { return Config{KafkaBrokers: []string{"127.0.0.1:9092"}} }
	for _, tc := range []struct {
		name   string
		mutate func(*Config)
		want   string // "" = valid
	}{
		{"defaults", func(*Config) {}, ""},
		{"no brokers", func(c *Config) { c.KafkaBrokers = nil }, "QIM_KAFKA_BROKERS"},
		{"broker without port", func(c *Config) { c.KafkaBrokers = []string{"localhost"} }, "QIM_KAFKA_BROKERS"},
		{"metrics without port", func(c *Config) { c.MetricsAddr = "9106" }, "QIM_FANOUT_METRICS"},
		{"shards not a power of two", func(c *Config) { c.ShardCount = 48 }, "QIM_MAILBOX_SHARD_COUNT"},
		{"batch above max", func(c *Config) { c.BatchSize = contract.FanoutBatchMax + 1 }, "QIM_FANOUT_BATCH_SIZE"},
		{"same topic twice", func(c *Config) { c.OutboxTopic = contract.TopicDispatch }, "QIM_FANOUT_DISPATCH_TOPIC"},
		{"commit interval above 10 s", func(c *Config) { c.CommitInterval = 11 * time.Second }, "QIM_FANOUT_COMMIT_INTERVAL"},
		{"unready after above max", func(c *Config) { c.UnreadyAfter = maxUnreadyAfter + 1 }, "QIM_FANOUT_UNREADY_AFTER"},
		{"backoff min negative", func(c *Config) { c.RetryBackoffMin = -time.Millisecond }, "QIM_FANOUT_RETRY_BACKOFF_MIN"},
		{"backoff max above cap", func(c *Config) { c.RetryBackoffMax = 2 * time.Minute }, "QIM_FANOUT_RETRY_BACKOFF_MAX"},
		{"backoff max below min", func(c *Config) { c.RetryBackoffMin = time.Second; c.RetryBackoffMax = time.Millisecond },
			"QIM_FANOUT_RETRY_BACKOFF_MIN"},
	} {
		c := base()
		tc.mutate(&c)
		err := c.Validate()
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.want != "" && (!errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: %v, want an error naming %s", tc.name, err, tc.want)
		}
	}
}

// The declaration is one the loader accepts (tags, types, no bool defaulting to true), so the
// generated --help and docs/config.md list every variable.
func TestConfigDescribes(t *testing.T) {
	vars, err := config.Describe(DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	// 12 of its own and 6 of Kafka's credentials (QIM_KAFKA_PASSWORD_FILE beside the password).
	if len(vars) != 18 {
		t.Fatalf("%d variables described, want 18", len(vars))
	}
}
