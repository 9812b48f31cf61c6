package gateway

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/services/internal/config"
)

func TestConfigValidate(t *testing.T) {
	c := validConfig()
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if c.ListenAddr != "127.0.0.1:7000" || c.WSListenAddr != "127.0.0.1:7080" || c.PushListenAddr != "127.0.0.1:7103" ||
		c.MetricsAddr != "127.0.0.1:9100" || c.HeartbeatInterval != contract.HeartbeatStart ||
		c.HeartbeatTimeout != contract.HeartbeatStart*5/2 || c.SendInflight != contract.WriterInflightPerConnDefault ||
		c.AuthTimeout != 10*time.Second || c.BackendTimeout != 5*time.Second || c.WriteTimeout != 10*time.Second ||
		c.PushQueueDepth != 64 || c.PullQueueDepth != 8 || c.MaxConns != 100_000 {
		t.Fatalf("defaults not filled: %+v", c)
	}
	bad := []struct {
		name string
		mut  func(*Config)
		want string // the variable the error must name
	}{
		{"no writer", func(c *Config) { c.WriterAddrs = nil }, "QIM_WRITER_ADDRS"},
		{"no mailbox", func(c *Config) { c.MailboxAddrs = nil }, "QIM_MAILBOX_ADDRS"},
		{"no session", func(c *Config) { c.SessionAddrs = nil }, "QIM_SESSION_ADDRS"},
		{"session not loopback", func(c *Config) { c.SessionAddrs = []string{"10.0.0.1:7104"} }, "QIM_SESSION_ADDRS"},
		{"writer listed twice", func(c *Config) { c.WriterAddrs = []string{"127.0.0.1:7101", "127.0.0.1:7101"} }, "QIM_WRITER_ADDRS"},
		{"second writer not an address", func(c *Config) { c.WriterAddrs = []string{"127.0.0.1:7101", "writer2"} }, "QIM_WRITER_ADDRS"},
		{"more mailbox instances than shards", func(c *Config) {
			c.ShardCount, c.MailboxAddrs = 1, []string{"127.0.0.1:7102", "127.0.0.1:7202"}
		}, "QIM_MAILBOX_ADDRS"},
		{"shard count not a power of two", func(c *Config) { c.ShardCount = 48 }, "QIM_MAILBOX_SHARD_COUNT"},
		{"no redis", func(c *Config) { c.RedisAddr = "" }, "QIM_REDIS_ADDR"},
		{"no secret", func(c *Config) { c.TokenSecret = nil }, "QIM_TOKEN_SECRET"},
		{"short secret", func(c *Config) { c.TokenSecret = Secret("fifteen-bytes..") }, "QIM_TOKEN_SECRET"},
		{"cert without key", func(c *Config) { c.TLSCertFile = "c.pem" }, "QIM_GATEWAY_TLS_KEY"},
		{"writer not loopback", func(c *Config) { c.WriterAddrs = []string{"10.0.0.1:7101"} }, "QIM_WRITER_ADDRS"},
		{"mailbox not loopback", func(c *Config) { c.MailboxAddrs = []string{"mailbox.internal:7102"} }, "QIM_MAILBOX_ADDRS"},
		{"push listen not loopback", func(c *Config) { c.PushListenAddr = "0.0.0.0:7103" }, "QIM_GATEWAY_PUSH_LISTEN"},
		{"bad address", func(c *Config) { c.ListenAddr = "7000" }, "QIM_GATEWAY_LISTEN"},
		{"bad metrics address", func(c *Config) { c.MetricsAddr = "localhost" }, "QIM_GATEWAY_METRICS"},
		{"in-flight above max", func(c *Config) { c.SendInflight = contract.WriterInflightPerConnMax + 1 }, "QIM_GATEWAY_SEND_INFLIGHT"},
		{"push queue above max", func(c *Config) { c.PushQueueDepth = 4097 }, "QIM_GATEWAY_PUSH_QUEUE"},
		{"negative pull queue", func(c *Config) { c.PullQueueDepth = -1 }, "QIM_GATEWAY_PULL_QUEUE"},
		{"negative max conns", func(c *Config) { c.MaxConns = -1 }, "QIM_GATEWAY_MAX_CONNS"},
		{"heartbeat above background max", func(c *Config) { c.HeartbeatInterval = contract.HeartbeatBackgroundMax + time.Second }, "QIM_HEARTBEAT_INTERVAL"},
		{"heartbeat below 100ms", func(c *Config) { c.HeartbeatInterval = 50 * time.Millisecond }, "QIM_HEARTBEAT_INTERVAL"},
		{"timeout not above interval", func(c *Config) { c.HeartbeatInterval, c.HeartbeatTimeout = time.Second, time.Second }, "QIM_HEARTBEAT_TIMEOUT"},
		{"negative auth timeout", func(c *Config) { c.AuthTimeout = -1 }, "QIM_GATEWAY_AUTH_TIMEOUT"},
		{"negative backend timeout", func(c *Config) { c.BackendTimeout = -1 }, "QIM_GATEWAY_BACKEND_TIMEOUT"},
		{"negative write timeout", func(c *Config) { c.WriteTimeout = -time.Second }, "QIM_GATEWAY_WRITE_TIMEOUT"},
	}
	for _, b := range bad {
		t.Run(b.name, func(t *testing.T) {
			c := validConfig()
			b.mut(&c)
			if err := c.Validate(); !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), b.want) {
				t.Fatalf("Validate = %v, want ErrConfig naming %s", err, b.want)
			}
		})
	}
}

// TestHeartbeatTimeoutDerived: unset, the timeout is 2.5 intervals of whatever interval is
// configured; set, it is kept.
func TestHeartbeatTimeoutDerived(t *testing.T) {
	c := validConfig()
	c.HeartbeatInterval = 2 * time.Second
	if err := c.Validate(); err != nil || c.HeartbeatTimeout != 5*time.Second {
		t.Fatalf("derived timeout %v, %v; want 5s", c.HeartbeatTimeout, err)
	}
	c = validConfig()
	c.HeartbeatInterval, c.HeartbeatTimeout = 2*time.Second, 3*time.Second
	if err := c.Validate(); err != nil || c.HeartbeatTimeout != 3*time.Second {
		t.Fatalf("explicit timeout %v, %v; want 3s", c.HeartbeatTimeout, err)
	}
}

func TestFromEnv(t *testing.T) {
	t.Setenv("QIM_WRITER_ADDRS", "127.0.0.1:1, 127.0.0.1:11")
	t.Setenv("QIM_MAILBOX_ADDRS", "localhost:2,localhost:12")
	t.Setenv("QIM_SESSION_ADDRS", "localhost:4")
	t.Setenv("QIM_REDIS_ADDR", "127.0.0.1:3")
	t.Setenv("QIM_TOKEN_SECRET", "env-secret-0123456789")
	t.Setenv("QIM_HEARTBEAT_INTERVAL", "30s")
	t.Setenv("QIM_GATEWAY_AUTH_TIMEOUT", "1500ms")
	t.Setenv("QIM_GATEWAY_BACKEND_TIMEOUT", "2s")
	t.Setenv("QIM_GATEWAY_WRITE_TIMEOUT", "3s")
	t.Setenv("QIM_GATEWAY_SEND_INFLIGHT", "16")
	t.Setenv("QIM_GATEWAY_MAX_CONNS", "500")
	t.Setenv("QIM_GATEWAY_WS_ORIGINS", "app.example.com, *.example.org")
	t.Setenv("QIM_DEV_ALLOW_RELAXED_REDIS", "true") // "true" used to be ignored: only "1" counted
	t.Setenv("QIM_RPC_PLAINTEXT_LOOPBACK", "1")
	c, err := FromEnv()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if c.HeartbeatInterval != 30*time.Second || c.HeartbeatTimeout != 75*time.Second || c.SendInflight != 16 ||
		len(c.WSOrigins) != 2 || c.WSOrigins[1] != "*.example.org" || !c.AllowRelaxedRedis || c.MaxConns != 500 ||
		c.AuthTimeout != 1500*time.Millisecond || c.BackendTimeout != 2*time.Second || c.WriteTimeout != 3*time.Second ||
		string(c.TokenSecret) != "env-secret-0123456789" || c.PullQueueDepth != 8 ||
		len(c.WriterAddrs) != 2 || c.WriterAddrs[1] != "127.0.0.1:11" || len(c.MailboxAddrs) != 2 || len(c.SessionAddrs) != 1 {
		t.Fatalf("FromEnv = %+v", c)
	}
	t.Setenv("QIM_HEARTBEAT_TIMEOUT", "45s")
	if c, err = FromEnv(); err != nil || c.Validate() != nil || c.HeartbeatTimeout != 45*time.Second {
		t.Fatalf("explicit QIM_HEARTBEAT_TIMEOUT: %v, %v", c.HeartbeatTimeout, err)
	}
}

func TestFromEnvRefusesGarbageNamingTheVariable(t *testing.T) {
	for name, value := range map[string]string{
		"QIM_HEARTBEAT_INTERVAL":      "soon",
		"QIM_HEARTBEAT_TIMEOUT":       "150000", // milliseconds are not a duration
		"QIM_GATEWAY_AUTH_TIMEOUT":    "10000",
		"QIM_GATEWAY_BACKEND_TIMEOUT": "5000",
		"QIM_GATEWAY_WRITE_TIMEOUT":   "0s", // zero over a non-zero default is ambiguous
		"QIM_GATEWAY_SEND_INFLIGHT":   "0",
		"QIM_GATEWAY_MAX_CONNS":       "garbage",
		"QIM_GATEWAY_PUSH_QUEUE":      "1e3",
		"QIM_DEV_ALLOW_RELAXED_REDIS": "yes",
		"QIM_GATEWAY_WS_ORIGINS":      "a.example,,b.example",
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

// TestSecretNeverInConfigErrors: a short secret from the environment is refused naming
// QIM_TOKEN_SECRET, and neither the error nor the variable listing shows its value.
func TestSecretNeverInConfigErrors(t *testing.T) {
	const short = "hunter2-short"
	t.Setenv("QIM_WRITER_ADDRS", "127.0.0.1:1")
	t.Setenv("QIM_MAILBOX_ADDRS", "127.0.0.1:2")
	t.Setenv("QIM_SESSION_ADDRS", "127.0.0.1:4")
	t.Setenv("QIM_REDIS_ADDR", "127.0.0.1:3")
	t.Setenv("QIM_TOKEN_SECRET", short)
	t.Setenv("QIM_RPC_PLAINTEXT_LOOPBACK", "1")
	c, err := FromEnv()
	if err != nil {
		t.Fatal(err)
	}
	err = c.Validate()
	if err == nil || !strings.Contains(err.Error(), "QIM_TOKEN_SECRET") || strings.Contains(err.Error(), short) {
		t.Fatalf("Validate with a short secret = %v", err)
	}
	vars, err := config.Describe(DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	found := 0
	for _, v := range vars {
		switch v.Name {
		case "QIM_TOKEN_SECRET":
			found++
			if !v.Secret || v.Default != "" {
				t.Errorf("QIM_TOKEN_SECRET = %+v, want a secret without default", v)
			}
		case "QIM_HEARTBEAT_TIMEOUT":
			found++
			if v.Default != "2.5 × QIM_HEARTBEAT_INTERVAL" || v.Type != "duration" {
				t.Errorf("QIM_HEARTBEAT_TIMEOUT = %+v", v)
			}
		}
	}
	if found != 2 {
		t.Fatalf("variables = %+v", vars)
	}
}

func TestSecretNeverPrinted(t *testing.T) {
	const raw = "super-secret-signing-key-0123"
	c := validConfig()
	c.TokenSecret = Secret(raw)
	var logs bytes.Buffer
	slog.New(slog.NewTextHandler(&logs, nil)).Info("cfg", "secret", c.TokenSecret, "config", c)
	out := fmt.Sprintf("%v %+v %#v %s %x %q", c, c, c, c.TokenSecret, c.TokenSecret, c.TokenSecret) + logs.String()
	for _, leak := range []string{raw, fmt.Sprintf("%x", raw)} {
		if strings.Contains(out, leak) {
			t.Fatalf("the signing secret leaked: %s", out)
		}
	}
	if !strings.Contains(out, "blake3:") {
		t.Fatalf("want the digest in place of the secret: %s", out)
	}
}

// A gateway that would accept no credential at all, or whose issuers file is broken, does not
// start; the file's error names the variable.
func TestIdentityConfig(t *testing.T) {
	c := validConfig()
	c.TokenSecret = nil
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "QIM_AUTH_ISSUERS") {
		t.Fatalf("no secret and no issuers: %v", err)
	}
	path := filepath.Join(t.TempDir(), "issuers.json")
	for _, bad := range []string{`{"issuers":[]}`, `{"issuers":[{"issuer":"x"}]}`, `{"issuers":[{"issuer":"x","jwks_url":"http://10.0.0.1/k"}]}`,
		`{"issuers":[{"issuer":"x","jwks_url":"https://id/k","audiance":"qim"}]}`} {
		if err := os.WriteFile(path, []byte(bad), 0o600); err != nil {
			t.Fatal(err)
		}
		c.AuthIssuers = path
		if err := c.Validate(); !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "QIM_AUTH_ISSUERS") {
			t.Errorf("issuers %s: Validate = %v", bad, err)
		}
	}
	if err := os.WriteFile(path, []byte(`{"issuers":[{"issuer":"x","jwks_url":"https://id.example/jwks.json","audience":"qim"}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(); err != nil || len(c.identity.Issuers) != 1 || c.identity.Issuers[0].Audience != "qim" {
		t.Fatalf("good issuers file: %v, %+v", err, c.identity)
	}
}
