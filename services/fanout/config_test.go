package fanout

import (
	"errors"
	"testing"
	"time"

	"github.com/qim-dev/qim/contract"
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
	t.Setenv("QIM_FANOUT_PRODUCER_IDEMPOTENCE", "false")
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
		"QIM_FANOUT_BATCH_SIZE": "many", "QIM_FANOUT_RETRY_BACKOFF_MIN": "soon", "QIM_FANOUT_PRODUCER_IDEMPOTENCE": "maybe",
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
