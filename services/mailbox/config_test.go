package mailbox

import (
	"errors"
	"slices"
	"testing"
)

func TestParseShardSet(t *testing.T) {
	cases := []struct {
		in   string
		want []uint32
		bad  bool
	}{
		{"", nil, false},
		{"0-3", []uint32{0, 1, 2, 3}, false},
		{"5", []uint32{5}, false},
		{"0, 4,8-10", []uint32{0, 4, 8, 9, 10}, false},
		{"3-1", nil, true},
		{"x", nil, true},
		{"-1", nil, true},
		{"65536", nil, true},
	}
	for _, tc := range cases {
		got, err := ParseShardSet(tc.in)
		if (err != nil) != tc.bad || (!tc.bad && !slices.Equal(got, tc.want)) {
			t.Errorf("%q: got %v, %v", tc.in, got, err)
		}
	}
}

func TestConfigValidate(t *testing.T) {
	base := func() Config { return Config{RedisAddr: "127.0.0.1:6379", KafkaBrokers: []string{"127.0.0.1:9092"}} }
	c := base()
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if c.ShardCount != 64 || len(c.OwnedShards) != 64 || c.OwnedShards[63] != 63 || c.ListenAddr != "127.0.0.1:7102" ||
		c.MetricsAddr != "127.0.0.1:9102" || c.PushQueue != 4096 || c.MaterializeBatch != 32 {
		t.Fatalf("defaults: %+v", c)
	}
	bad := map[string]func(*Config){
		"no redis":        func(c *Config) { c.RedisAddr = "" },
		"no brokers":      func(c *Config) { c.KafkaBrokers = nil },
		"shards not pow2": func(c *Config) { c.ShardCount = 48 },
		"owned too high":  func(c *Config) { c.ShardCount = 8; c.OwnedShards = []uint32{8} },
		"owned twice":     func(c *Config) { c.OwnedShards = []uint32{1, 1} },
		"bad listen":      func(c *Config) { c.ListenAddr = "nope" },
		"bad push addr":   func(c *Config) { c.GatewayPushAddr = "gateway" },
		"batch too big":   func(c *Config) { c.MaterializeBatch = 129 },
		"negative queue":  func(c *Config) { c.PushQueue = -1 },
	}
	for name, mutate := range bad {
		c := base()
		mutate(&c)
		if err := c.Validate(); !errors.Is(err, ErrConfig) {
			t.Errorf("%s: want ErrConfig, got %v", name, err)
		}
	}
}

func TestFromEnv(t *testing.T) {
	t.Setenv("QIM_MAILBOX_REDIS_ADDR", "r:1")
	t.Setenv("QIM_KAFKA_BROKERS", "k1:9092,k2:9092")
	t.Setenv("QIM_MAILBOX_SHARD_COUNT", "8")
	t.Setenv("QIM_MAILBOX_OWNED_SHARDS", "0-1,6")
	t.Setenv("QIM_GATEWAY_PUSH_ADDR", "127.0.0.1:7001")
	c, err := FromEnv()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if c.ShardCount != 8 || !slices.Equal(c.OwnedShards, []uint32{0, 1, 6}) || len(c.KafkaBrokers) != 2 || c.GatewayPushAddr == "" {
		t.Fatalf("%+v", c)
	}
	t.Setenv("QIM_MAILBOX_SHARD_COUNT", "many")
	if _, err := FromEnv(); !errors.Is(err, ErrConfig) {
		t.Fatalf("malformed number accepted: %v", err)
	}
}
