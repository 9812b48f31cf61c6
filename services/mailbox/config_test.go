package mailbox

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/services/internal/config"
	"github.com/qim-dev/qim/services/internal/rpcauth"
)

func TestConfigValidate(t *testing.T) {
	base := func() Config {
		return Config{RedisAddr: "127.0.0.1:6379", KafkaBrokers: []string{"127.0.0.1:9092"}, RPC: rpcauth.Config{PlaintextLoopback: true}}
	}
	c := base()
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if c.ShardCount != 64 || len(c.OwnedShards) != 64 || c.OwnedShards[63] != 63 || c.ListenAddr != "127.0.0.1:7102" ||
		c.MetricsAddr != "127.0.0.1:9102" || c.PushQueue != 4096 || c.MaterializeBatch != 32 || c.GatewayPushAddr != "" {
		t.Fatalf("defaults: %+v", c)
	}
	for _, tc := range []struct {
		name   string
		mutate func(*Config)
		want   string // the variable the error must name; "" = valid
	}{
		{"owned sorted", func(c *Config) { c.OwnedShards = []uint32{5, 1} }, ""},
		{"no redis", func(c *Config) { c.RedisAddr = "" }, "QIM_MAILBOX_REDIS_ADDR"},
		{"redis without port", func(c *Config) { c.RedisAddr = "redis" }, "QIM_MAILBOX_REDIS_ADDR"},
		{"no brokers", func(c *Config) { c.KafkaBrokers = nil }, "QIM_KAFKA_BROKERS"},
		{"shards not pow2", func(c *Config) { c.ShardCount = 48 }, "QIM_MAILBOX_SHARD_COUNT"},
		{"negative shards", func(c *Config) { c.ShardCount = -1 }, "QIM_MAILBOX_SHARD_COUNT"},
		{"owned too high", func(c *Config) { c.ShardCount = 8; c.OwnedShards = []uint32{8} }, "QIM_MAILBOX_OWNED_SHARDS"},
		{"owned twice", func(c *Config) { c.OwnedShards = []uint32{1, 1} }, "QIM_MAILBOX_OWNED_SHARDS"},
		{"bad listen", func(c *Config) { c.ListenAddr = "nope" }, "QIM_MAILBOX_LISTEN"},
		{"bad metrics", func(c *Config) { c.MetricsAddr = "nope" }, "QIM_MAILBOX_METRICS"},
		{"bad push addr", func(c *Config) { c.GatewayPushAddr = "gateway" }, "QIM_GATEWAY_PUSH_ADDR"},
		{"batch too big", func(c *Config) { c.MaterializeBatch = contract.MailboxShardFIFOCapacity + 1 }, "QIM_MAILBOX_MATERIALIZE_BATCH"},
		{"negative batch", func(c *Config) { c.MaterializeBatch = -1 }, "QIM_MAILBOX_MATERIALIZE_BATCH"},
		{"negative queue", func(c *Config) { c.PushQueue = -1 }, "QIM_MAILBOX_PUSH_QUEUE"},
		{"queue too big", func(c *Config) { c.PushQueue = pushQueueMax + 1 }, "QIM_MAILBOX_PUSH_QUEUE"},
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

func TestFromEnv(t *testing.T) {
	t.Setenv("QIM_MAILBOX_REDIS_ADDR", "r:1")
	t.Setenv("QIM_KAFKA_BROKERS", "k1:9092,k2:9092")
	t.Setenv("QIM_MAILBOX_SHARD_COUNT", "8")
	t.Setenv("QIM_MAILBOX_OWNED_SHARDS", "6,0-1")
	t.Setenv("QIM_GATEWAY_PUSH_ADDR", "127.0.0.1:7001")
	t.Setenv("QIM_MAILBOX_PUSH_QUEUE", "16")
	t.Setenv("QIM_MAILBOX_MATERIALIZE_BATCH", "128")
	t.Setenv("QIM_RPC_PLAINTEXT_LOOPBACK", "1")
	c, err := FromEnv()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if c.ShardCount != 8 || !slices.Equal(c.OwnedShards, []uint32{0, 1, 6}) || len(c.KafkaBrokers) != 2 || c.GatewayPushAddr == "" ||
		c.PushQueue != 16 || c.MaterializeBatch != 128 || c.ListenAddr != "127.0.0.1:7102" {
		t.Fatalf("%+v", c)
	}
	t.Setenv("QIM_MAILBOX_SHARD_COUNT", "many")
	if _, err := FromEnv(); !errors.Is(err, ErrConfig) {
		t.Fatalf("malformed number accepted: %v", err)
	}
}

// The mailbox has no duration and no bool variable, so the malformed values that apply are
// numbers, shard sets, lists and an explicit zero over a non-zero default.
func TestFromEnvRefusesGarbageNamingTheVariable(t *testing.T) {
	for _, tc := range []struct{ name, value string }{
		{"QIM_MAILBOX_SHARD_COUNT", "many"},
		{"QIM_MAILBOX_SHARD_COUNT", "0"}, // zero over a non-zero default is ambiguous
		{"QIM_MAILBOX_PUSH_QUEUE", "4k"},
		{"QIM_MAILBOX_PUSH_QUEUE", "0"},
		{"QIM_MAILBOX_MATERIALIZE_BATCH", "1e2"},
		{"QIM_MAILBOX_MATERIALIZE_BATCH", "99999999999999999999"},
		{"QIM_MAILBOX_OWNED_SHARDS", "0-x"},
		{"QIM_MAILBOX_OWNED_SHARDS", "0,,4"},
		{"QIM_KAFKA_BROKERS", "k1:9092,"},
	} {
		t.Run(tc.name+"="+tc.value, func(t *testing.T) {
			t.Setenv(tc.name, tc.value)
			_, err := FromEnv()
			var ce *config.Error
			if !errors.Is(err, ErrConfig) || !errors.As(err, &ce) || ce.Var != tc.name {
				t.Fatalf("%s=%s: %v", tc.name, tc.value, err)
			}
		})
	}
}

// Every variable is declared well enough for --help and docs/config.md.
func TestDescribe(t *testing.T) {
	vars, err := config.Describe(DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]config.Var{}
	for _, v := range vars {
		got[v.Name] = v
	}
	for name, def := range map[string]string{
		"QIM_MAILBOX_SHARD_COUNT": "64", "QIM_MAILBOX_OWNED_SHARDS": "all shards", "QIM_MAILBOX_LISTEN": "127.0.0.1:7102",
		"QIM_MAILBOX_PUSH_QUEUE": "4096", "QIM_MAILBOX_MATERIALIZE_BATCH": "32", "QIM_GATEWAY_PUSH_ADDR": "",
	} {
		if v, ok := got[name]; !ok || v.Default != def {
			t.Errorf("%s = %+v, want default %q", name, v, def)
		}
	}
	if !got["QIM_MAILBOX_REDIS_ADDR"].Required || !got["QIM_KAFKA_BROKERS"].Required || len(vars) != 9+5+11 { // +5: the internal RPC boundary (rpcauth.Config); +11: Redis (5) and Kafka (6) credentials
		t.Errorf("vars = %+v", vars)
	}
}
