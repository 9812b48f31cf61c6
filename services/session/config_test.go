package session

import (
	"errors"
	"testing"

	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/services/internal/commitlog"
)

func TestConfigValidate(t *testing.T) {
	valid := func() Config { return Config{RedisAddr: "127.0.0.1:6379", KafkaBrokers: []string{"127.0.0.1:9092"}} }
	c := valid()
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if c.ShardCount != contract.MailboxShardsDefault || c.Topic != contract.TopicDispatch || c.ListenAddr != "127.0.0.1:7104" ||
		c.MetricsAddr != "127.0.0.1:9104" || c.PageSize != 20 || c.SnapshotUsers != 4096 || c.PollMax != 1024 || c.HeadBodyMax != 1024 {
		t.Fatalf("defaults not filled: %+v", c)
	}
	bad := []struct {
		name string
		mut  func(*Config)
	}{
		{"no redis", func(c *Config) { c.RedisAddr = "" }},
		{"no brokers", func(c *Config) { c.KafkaBrokers = nil }},
		{"shards not a power of two", func(c *Config) { c.ShardCount = 48 }},
		{"bad listen", func(c *Config) { c.ListenAddr = "7104" }},
		{"page above max", func(c *Config) { c.PageSize = maxPageSize + 1 }},
		{"negative snapshot users", func(c *Config) { c.SnapshotUsers = -1 }},
		{"head body above inline budget", func(c *Config) { c.HeadBodyMax = contract.InlineBodyBudgetBytes + 1 }},
	}
	for _, b := range bad {
		c := valid()
		b.mut(&c)
		if err := c.Validate(); !errors.Is(err, ErrConfig) {
			t.Errorf("%s: Validate = %v, want ErrConfig", b.name, err)
		}
	}
}

func TestFromEnv(t *testing.T) {
	t.Setenv("QIM_REDIS_ADDR", "127.0.0.1:1")
	t.Setenv("QIM_KAFKA_BROKERS", "a:1,b:2")
	t.Setenv("QIM_MAILBOX_SHARD_COUNT", "8")
	t.Setenv("QIM_SESSION_LISTEN", "127.0.0.1:0")
	t.Setenv("QIM_SESSION_PAGE_SIZE", "50")
	c, err := FromEnv()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if len(c.KafkaBrokers) != 2 || c.ShardCount != 8 || c.PageSize != 50 || c.ListenAddr != "127.0.0.1:0" {
		t.Fatalf("FromEnv = %+v", c)
	}
	t.Setenv("QIM_SESSION_POLL_MAX", "many")
	if _, err := FromEnv(); !errors.Is(err, ErrConfig) {
		t.Fatalf("malformed number: %v", err)
	}
}

func TestDecodeDispatchRejects(t *testing.T) {
	for _, tc := range []struct {
		name string
		rec  commitlog.Record
	}{
		{"garbage", commitlog.Record{Value: []byte{0xff, 0xff}}},
		{"unknown schema", commitlog.Record{Value: []byte{0x08, 0x09}}}, // schema_version 9
		{"empty", commitlog.Record{}},
	} {
		if _, err := decodeDispatch(tc.rec); !errors.Is(err, ErrBadDispatch) {
			t.Errorf("%s: err = %v, want ErrBadDispatch", tc.name, err)
		}
	}
}
