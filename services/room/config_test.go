package room

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/services/internal/config"
	"github.com/qim-dev/qim/services/internal/rpcauth"
)

func TestConfigDefaults(t *testing.T) {
	c := Config{RedisAddr: "127.0.0.1:6379", RPC: rpcauth.Config{PlaintextLoopback: true}}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if c.ListenAddr != "127.0.0.1:9181" || c.MetricsAddr != "127.0.0.1:9108" ||
		c.BufferEvents != contract.RoomBufferEventsDefault || c.BufferAge != contract.RoomBufferAgeDefault ||
		c.LinkQueue != 65536 || c.MaxBody != 64<<10 {
		t.Fatalf("defaults not filled: %+v", c)
	}
}

func TestConfigBounds(t *testing.T) {
	valid := func() Config {
		return Config{RedisAddr: "127.0.0.1:6379", RPC: rpcauth.Config{PlaintextLoopback: true}}
	}
	for _, ok := range []struct {
		name string
		mut  func(*Config)
	}{
		{"smallest buffer", func(c *Config) { c.BufferEvents, c.BufferAge = 1, time.Second }},
		{"largest buffer", func(c *Config) { c.BufferEvents, c.BufferAge = maxBufferEvents, time.Hour }},
		{"queue bounds", func(c *Config) { c.LinkQueue = minLinkQueue }},
		{"largest queue", func(c *Config) { c.LinkQueue = maxLinkQueue }},
		{"largest body", func(c *Config) { c.MaxBody = contract.MaxFramePayload }},
	} {
		c := valid()
		ok.mut(&c)
		if err := c.Validate(); err != nil {
			t.Errorf("%s: %v", ok.name, err)
		}
	}
	for _, b := range []struct {
		name string
		mut  func(*Config)
		want string // the variable the error must name
	}{
		{"bad listen", func(c *Config) { c.ListenAddr = "9181" }, "QIM_ROOM_LISTEN"},
		{"bad metrics", func(c *Config) { c.MetricsAddr = "9108" }, "QIM_ROOM_METRICS"},
		{"negative buffer events", func(c *Config) { c.BufferEvents = -1 }, "QIM_ROOM_BUFFER_EVENTS"},
		{"too many buffer events", func(c *Config) { c.BufferEvents = maxBufferEvents + 1 }, "QIM_ROOM_BUFFER_EVENTS"},
		{"buffer age below a second", func(c *Config) { c.BufferAge = time.Second - time.Nanosecond }, "QIM_ROOM_BUFFER_AGE"},
		{"negative buffer age", func(c *Config) { c.BufferAge = -time.Minute }, "QIM_ROOM_BUFFER_AGE"},
		{"buffer age above an hour", func(c *Config) { c.BufferAge = time.Hour + time.Nanosecond }, "QIM_ROOM_BUFFER_AGE"},
		{"queue below its bound", func(c *Config) { c.LinkQueue = minLinkQueue - 1 }, "QIM_ROOM_LINK_QUEUE"},
		{"queue above its bound", func(c *Config) { c.LinkQueue = maxLinkQueue + 1 }, "QIM_ROOM_LINK_QUEUE"},
		{"negative body", func(c *Config) { c.MaxBody = -1 }, "QIM_ROOM_MAX_BODY"},
		{"body above a frame", func(c *Config) { c.MaxBody = contract.MaxFramePayload + 1 }, "QIM_ROOM_MAX_BODY"},
		{"no core Redis", func(c *Config) { c.RedisAddr = "" }, "QIM_REDIS_ADDR"},
		{"bad core Redis", func(c *Config) { c.RedisAddr = "redis" }, "QIM_REDIS_ADDR"},
		{"no RPC mode", func(c *Config) { c.RPC = rpcauth.Config{} }, "QIM_RPC_PLAINTEXT_LOOPBACK"},
		{"plaintext beyond loopback", func(c *Config) { c.ListenAddr = "10.0.0.7:9181" }, "QIM_ROOM_LISTEN"},
	} {
		c := valid()
		b.mut(&c)
		if err := c.Validate(); !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), b.want) {
			t.Errorf("%s: Validate = %v, want ErrConfig naming %s", b.name, err, b.want)
		}
	}
}

func TestFromEnv(t *testing.T) {
	t.Setenv("QIM_ROOM_LISTEN", "127.0.0.1:0")
	t.Setenv("QIM_ROOM_BUFFER_EVENTS", "50")
	t.Setenv("QIM_ROOM_BUFFER_AGE", "30s")
	t.Setenv("QIM_ROOM_LINK_QUEUE", "128")
	t.Setenv("QIM_ROOM_MAX_BODY", "1024")
	t.Setenv("QIM_RPC_PLAINTEXT_LOOPBACK", "1")
	t.Setenv("QIM_REDIS_ADDR", "127.0.0.1:6380")
	c, err := FromEnv()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if c.ListenAddr != "127.0.0.1:0" || c.BufferEvents != 50 || c.BufferAge != 30*time.Second || c.LinkQueue != 128 ||
		c.MaxBody != 1024 || !c.RPC.PlaintextLoopback || c.MetricsAddr != "127.0.0.1:9108" || c.RedisAddr != "127.0.0.1:6380" {
		t.Fatalf("FromEnv = %+v", c)
	}
	for v, raw := range map[string]string{"QIM_ROOM_BUFFER_EVENTS": "0", "QIM_ROOM_BUFFER_AGE": "soon", "QIM_ROOM_MAX_BODY": "1k"} {
		t.Run(v, func(t *testing.T) {
			t.Setenv(v, raw)
			if _, err := FromEnv(); !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), v) {
				t.Fatalf("%s=%q: FromEnv = %v, want an error naming it", v, raw, err)
			}
		})
	}
}

// The tags describe every variable, so `qim room --help` and docs/config.md can be generated
// once the service is registered in services/programs.go.
func TestConfigDescribes(t *testing.T) {
	vars, err := config.Describe(DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, v := range vars {
		got[v.Name] = v.Default
	}
	for name, def := range map[string]string{
		"QIM_ROOM_LISTEN": "127.0.0.1:9181", "QIM_ROOM_METRICS": "127.0.0.1:9108", "QIM_ROOM_BUFFER_EVENTS": "1000",
		"QIM_ROOM_BUFFER_AGE": "5m0s", "QIM_ROOM_LINK_QUEUE": "65536", "QIM_ROOM_MAX_BODY": "65536",
		"QIM_RPC_PLAINTEXT_LOOPBACK": "false",
	} {
		if d, ok := got[name]; !ok || d != def {
			t.Errorf("%s: described %v with default %q, want default %q", name, ok, d, def)
		}
	}
}

// The listener opens in the second after the start, so no room this process instantiates can
// start at the RoomSeqBase of a second its predecessor used.
func TestUntilNextSecond(t *testing.T) {
	base := time.Unix(1_800_000_000, 0)
	for _, tc := range []struct {
		now  time.Time
		want time.Duration
	}{
		{base, time.Second},
		{base.Add(1), time.Second - 1},
		{base.Add(999 * time.Millisecond), time.Millisecond},
	} {
		if got := untilNextSecond(tc.now); got != tc.want || tc.now.Add(got).Unix() != tc.now.Unix()+1 {
			t.Errorf("untilNextSecond(%v) = %v, want %v", tc.now, got, tc.want)
		}
	}
}
