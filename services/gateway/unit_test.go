package gateway

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/qim-dev/qim/contract"
)

func validConfig() Config {
	return Config{WriterAddr: "127.0.0.1:7101", MailboxAddr: "127.0.0.1:7102", SessionAddr: "127.0.0.1:7104", RedisAddr: "127.0.0.1:6379",
		TokenSecret: Secret("unit-test-secret-0123456789")}
}

func TestConfigValidate(t *testing.T) {
	c := validConfig()
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if c.ListenAddr != "127.0.0.1:7000" || c.WSListenAddr != "127.0.0.1:7080" || c.PushListenAddr != "127.0.0.1:7103" ||
		c.MetricsAddr != "127.0.0.1:9100" || c.HeartbeatInterval != contract.HeartbeatStart ||
		c.HeartbeatTimeout != contract.HeartbeatStart*5/2 || c.SendInflight != contract.WriterInflightPerConnDefault {
		t.Fatalf("defaults not filled: %+v", c)
	}
	bad := []struct {
		name string
		mut  func(*Config)
	}{
		{"no writer", func(c *Config) { c.WriterAddr = "" }},
		{"no mailbox", func(c *Config) { c.MailboxAddr = "" }},
		{"no session", func(c *Config) { c.SessionAddr = "" }},
		{"session not loopback", func(c *Config) { c.SessionAddr = "10.0.0.1:7104" }},
		{"no redis", func(c *Config) { c.RedisAddr = "" }},
		{"short secret", func(c *Config) { c.TokenSecret = Secret("fifteen-bytes..") }},
		{"cert without key", func(c *Config) { c.TLSCertFile = "c.pem" }},
		{"writer not loopback", func(c *Config) { c.WriterAddr = "10.0.0.1:7101" }},
		{"push listen not loopback", func(c *Config) { c.PushListenAddr = "0.0.0.0:7103" }},
		{"bad address", func(c *Config) { c.ListenAddr = "7000" }},
		{"in-flight above max", func(c *Config) { c.SendInflight = contract.WriterInflightPerConnMax + 1 }},
		{"heartbeat above background max", func(c *Config) { c.HeartbeatInterval = contract.HeartbeatBackgroundMax + time.Second }},
		{"timeout not above interval", func(c *Config) { c.HeartbeatInterval, c.HeartbeatTimeout = time.Second, time.Second }},
		{"negative backend timeout", func(c *Config) { c.BackendTimeout = -1 }},
	}
	for _, b := range bad {
		t.Run(b.name, func(t *testing.T) {
			c := validConfig()
			b.mut(&c)
			if err := c.Validate(); !errors.Is(err, ErrConfig) {
				t.Fatalf("Validate = %v, want ErrConfig", err)
			}
		})
	}
}

func TestFromEnv(t *testing.T) {
	t.Setenv("QIM_WRITER_ADDR", "127.0.0.1:1")
	t.Setenv("QIM_MAILBOX_ADDR", "localhost:2")
	t.Setenv("QIM_SESSION_ADDR", "localhost:4")
	t.Setenv("QIM_REDIS_ADDR", "127.0.0.1:3")
	t.Setenv("QIM_TOKEN_SECRET", "env-secret-0123456789")
	t.Setenv("QIM_HEARTBEAT_MS", "30000")
	t.Setenv("QIM_GATEWAY_SEND_INFLIGHT", "16")
	t.Setenv("QIM_GATEWAY_WS_ORIGINS", "app.example.com, *.example.org")
	c, err := FromEnv()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if c.HeartbeatInterval != 30*time.Second || c.HeartbeatTimeout != 75*time.Second || c.SendInflight != 16 ||
		len(c.WSOrigins) != 2 || c.WSOrigins[1] != "*.example.org" {
		t.Fatalf("FromEnv = %+v", c)
	}
	for env, v := range map[string]string{"QIM_HEARTBEAT_MS": "soon", "QIM_GATEWAY_SEND_INFLIGHT": "0"} {
		t.Run(env, func(t *testing.T) {
			t.Setenv(env, v)
			if _, err := FromEnv(); !errors.Is(err, ErrConfig) {
				t.Fatalf("%s=%s: err = %v, want ErrConfig", env, v, err)
			}
		})
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

func TestSessionEpochKey(t *testing.T) {
	tenant := contract.TenantID{Hi: 0x0102030405060708, Lo: 0xa0b0c0d0e0f00010}
	got := string(appendSessionEpochKey(nil, tenant, 42, "phone:1"))
	// Golden: the key layout is persistent state; changing it resets every device's epoch.
	if want := "qim:sess:0102030405060708a0b0c0d0e0f00010:42:phone:1"; got != want {
		t.Fatalf("key = %q, want %q", got, want)
	}
}

func TestRegistry(t *testing.T) {
	r := newRegistry()
	k := userKey{contract.TenantID{Lo: 1}, 7}
	s1 := &session{key: k, device: "phone", epoch: 5, conn: &conn{}}
	s2 := &session{key: k, device: "laptop", epoch: 1, conn: &conn{}}
	s3 := &session{key: k, device: "phone", epoch: 6, conn: &conn{}}
	stale := &session{key: k, device: "phone", epoch: 4, conn: &conn{}}
	steps := []struct {
		name     string
		do       func() (*session, error)
		replaced *session
		err      error
		live     int
	}{
		{"first device", func() (*session, error) { return r.register(s1) }, nil, nil, 1},
		{"second device", func() (*session, error) { return r.register(s2) }, nil, nil, 2},
		{"newer login replaces", func() (*session, error) { return r.register(s3) }, s1, nil, 2},
		{"older epoch refused", func() (*session, error) { return r.register(stale) }, nil, errStaleSession, 2},
		{"replaced session cannot unregister the new one", func() (*session, error) { r.unregister(s1); return nil, nil }, nil, nil, 2},
		{"own unregister", func() (*session, error) { r.unregister(s3); return nil, nil }, nil, nil, 1},
		{"last device leaves", func() (*session, error) { r.unregister(s2); return nil, nil }, nil, nil, 0},
	}
	for _, st := range steps {
		got, err := st.do()
		if got != st.replaced || !errors.Is(err, st.err) {
			t.Fatalf("%s: replaced %v err %v", st.name, got, err)
		}
		if n := len(r.appendConns(nil, k)); n != st.live {
			t.Fatalf("%s: live connections %d, want %d", st.name, n, st.live)
		}
	}
	if len(r.shard(k).users) != 0 {
		t.Fatal("empty user entry not removed")
	}
}
