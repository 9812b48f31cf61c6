package archiver

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/qim-dev/qim/contract"
)

func TestConfigValidate(t *testing.T) {
	valid := func() Config {
		return Config{KafkaBrokers: []string{"127.0.0.1:9092"}, CQLHosts: []string{"127.0.0.1:9042"}, RedisAddr: "127.0.0.1:6379"}
	}
	c := valid()
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if c.FetchWait != 250*time.Millisecond || c.BatchSize != contract.ArchiverBatchDefault || c.UnreadyAfter != 3 {
		t.Fatalf("defaults not filled: %+v", c)
	}
	bad := []struct {
		name string
		mut  func(*Config)
		want string // the variable the error must name
	}{
		{"no brokers", func(c *Config) { c.KafkaBrokers = nil }, "QIM_KAFKA_BROKERS"},
		{"redis without port", func(c *Config) { c.RedisAddr = "localhost" }, "QIM_REDIS_ADDR"},
		{"batch above max", func(c *Config) { c.BatchSize = contract.ArchiverBatchMax + 1 }, "QIM_ARCHIVER_BATCH_SIZE"},
		{"negative fetch wait", func(c *Config) { c.FetchWait = -time.Millisecond }, "QIM_ARCHIVER_FETCH_WAIT"},
		{"fetch wait above max", func(c *Config) { c.FetchWait = maxFetchWait + time.Millisecond }, "QIM_ARCHIVER_FETCH_WAIT"},
	}
	for _, b := range bad {
		c := valid()
		b.mut(&c)
		if err := c.Validate(); !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), b.want) {
			t.Errorf("%s: Validate = %v, want ErrConfig naming %s", b.name, err, b.want)
		}
	}
}

func TestFromEnvReadsTheFetchWait(t *testing.T) {
	t.Setenv("QIM_KAFKA_BROKERS", "127.0.0.1:9092")
	t.Setenv("QIM_CQL_HOSTS", "127.0.0.1:9042")
	t.Setenv("QIM_REDIS_ADDR", "127.0.0.1:6379")
	t.Setenv("QIM_ARCHIVER_FETCH_WAIT", "40ms")
	c, err := FromEnv()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(); err != nil || c.FetchWait != 40*time.Millisecond {
		t.Fatalf("FromEnv = %+v, Validate = %v", c, err)
	}
	t.Setenv("QIM_ARCHIVER_FETCH_WAIT", "0")
	if _, err := FromEnv(); !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "QIM_ARCHIVER_FETCH_WAIT") {
		t.Fatalf("zero fetch wait: %v", err)
	}
}
