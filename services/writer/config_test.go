package writer

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/services/internal/rpcauth"
)

func TestFromEnv(t *testing.T) {
	t.Setenv("QIM_REDIS_ADDR", "127.0.0.1:6390")
	t.Setenv("QIM_KAFKA_BROKERS", "127.0.0.1:9092,127.0.0.1:9093")
	t.Setenv("QIM_WRITER_ID", "0")
	t.Setenv("QIM_WRITER_RECOVERY_GRACE", "750ms")
	t.Setenv("QIM_DEV_ALLOW_RELAXED_REDIS", "true")
	t.Setenv("QIM_RPC_PLAINTEXT_LOOPBACK", "1")
	c, err := FromEnv()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if len(c.KafkaBrokers) != 2 || c.WriterID == nil || *c.WriterID != 0 || c.RecoveryGrace != 750*time.Millisecond ||
		!c.AllowRelaxedRedis || c.BatchMax != 256 || c.InflightPerConn != contract.WriterInflightPerConnDefault {
		t.Fatalf("FromEnv = %+v", c)
	}
}

func TestFromEnvRefusesGarbageNamingTheVariable(t *testing.T) {
	for name, value := range map[string]string{
		"QIM_WRITER_BATCH_MAX":         "garbage",
		"QIM_WRITER_RECOVERY_INTERVAL": "2000", // milliseconds are not a duration
		"QIM_DEV_ALLOW_RELAXED_REDIS":  "yes",
		"QIM_WRITER_ID":                "65536",
		"QIM_WRITER_MAX_BODY":          "0", // zero over a non-zero default is ambiguous
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

func TestValidate(t *testing.T) {
	base := func() Config {
		return Config{RedisAddr: "127.0.0.1:6390", KafkaBrokers: []string{"127.0.0.1:9092"}, RPC: rpcauth.Config{PlaintextLoopback: true}}
	}
	for _, tc := range []struct {
		name   string
		mutate func(*Config)
		want   string // "" = valid
	}{
		{"defaults", func(*Config) {}, ""},
		{"no redis", func(c *Config) { c.RedisAddr = "" }, "QIM_REDIS_ADDR"},
		{"no brokers", func(c *Config) { c.KafkaBrokers = nil }, "QIM_KAFKA_BROKERS"},
		{"listen without port", func(c *Config) { c.ListenAddr = "localhost" }, "QIM_WRITER_LISTEN"},
		{"in-flight above max", func(c *Config) { c.InflightPerConn = contract.WriterInflightPerConnMax + 1 }, "QIM_WRITER_REQUEST_INFLIGHT_LIMIT"},
		{"batch above max", func(c *Config) { c.BatchMax = 4097 }, "QIM_WRITER_BATCH_MAX"},
		{"negative grace", func(c *Config) { c.RecoveryGrace = -time.Second }, "QIM_WRITER_RECOVERY_GRACE"},
		{"body above frame", func(c *Config) { c.MaxBodyBytes = contract.MaxFramePayload + 1 }, "QIM_WRITER_MAX_BODY"},
		{"plaintext beyond loopback", func(c *Config) { c.ListenAddr = "0.0.0.0:7101" }, "QIM_WRITER_LISTEN=\"0.0.0.0:7101\" is not loopback"},
		{"no internal RPC mode", func(c *Config) { c.RPC = rpcauth.Config{} }, "QIM_RPC_PLAINTEXT_LOOPBACK"},
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
