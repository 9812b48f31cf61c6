package gateway

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/contract/devtoken"
)

// Config is the ConnectionNode's configuration. Each field maps 1:1 to the environment variable
// in its comment; FromEnv reads them and Validate rejects bad values and fills the defaults.
type Config struct {
	// ListenAddr (QIM_GATEWAY_LISTEN) is the client TCP address. Default 127.0.0.1:7000.
	ListenAddr string
	// WSListenAddr (QIM_GATEWAY_WS_LISTEN) serves WebSocket at /ws, one frame stream per WS
	// connection carried in binary messages. Default 127.0.0.1:7080. Plain HTTP: browsers need
	// WSS, which a TLS-terminating proxy in front provides.
	WSListenAddr string
	// WSOrigins (QIM_GATEWAY_WS_ORIGINS, comma-separated host patterns) are the browser origins
	// allowed to open /ws besides the gateway's own host. Default none: a page served from another
	// origin cannot open the socket with its user's cookies. Non-browser clients send no Origin.
	WSOrigins []string
	// TLSCertFile and TLSKeyFile (QIM_GATEWAY_TLS_CERT, QIM_GATEWAY_TLS_KEY) switch the TCP
	// listener to TLS 1.3 (ALPN qim/1). Both or neither. Default: plain TCP, for loopback and for
	// deployments terminating TLS in front.
	TLSCertFile string
	TLSKeyFile  string
	// PushListenAddr (QIM_GATEWAY_PUSH_LISTEN) is the gRPC Push service the MailboxNode calls.
	// Default 127.0.0.1:7103. Must be loopback until internal mTLS exists.
	PushListenAddr string
	// MetricsAddr (QIM_GATEWAY_METRICS) serves /metrics, /healthz and pprof. Default 127.0.0.1:9100.
	MetricsAddr string
	// WriterAddr (QIM_WRITER_ADDR) is the ConversationWriter's gRPC address. Required, loopback.
	WriterAddr string
	// MailboxAddr (QIM_MAILBOX_ADDR) is the MailboxNode's gRPC address. Required, loopback.
	MailboxAddr string
	// SessionAddr (QIM_SESSION_ADDR) is the SessionProjection's gRPC address (PULL_SESSION_LIST,
	// MARK_READ). Required, loopback.
	SessionAddr string
	// RedisAddr (QIM_REDIS_ADDR) is the core Redis holding session_epoch counters. Required.
	RedisAddr string
	// AllowRelaxedRedis (QIM_DEV_ALLOW_RELAXED_REDIS=1) accepts appendfsync everysec on a
	// loopback Redis for development. Never in production: a host crash could roll the
	// session_epoch counters back and hand a new login an epoch an older session already had.
	AllowRelaxedRedis bool
	// TokenSecret (QIM_TOKEN_SECRET) signs dev tokens; at least devtoken.MinSecretBytes. Required.
	// Never logged: its String form is a digest.
	TokenSecret Secret
	// HeartbeatInterval (QIM_HEARTBEAT_MS) is the PING interval told to clients. Default
	// contract.HeartbeatStart (60 s), at most contract.HeartbeatBackgroundMax. Shorter intervals
	// detect dead peers sooner and cost radio wake-ups on phones.
	HeartbeatInterval time.Duration
	// HeartbeatTimeout (QIM_HEARTBEAT_TIMEOUT_MS) is the silence after which a connection is
	// closed. Default 2.5 × HeartbeatInterval: one PING may be lost and one may be late.
	HeartbeatTimeout time.Duration
	// AuthTimeout (QIM_GATEWAY_AUTH_TIMEOUT_MS) bounds the wait for the first frame (and the TLS
	// handshake before it). Default 10 s. A socket that never authenticates holds a file
	// descriptor and a goroutine until then.
	AuthTimeout time.Duration
	// BackendTimeout (QIM_GATEWAY_BACKEND_TIMEOUT_MS) bounds one unary backend call (HasOffline,
	// PullMailbox, PullHistory, PullSessionList, MarkRead) and a backend connection attempt.
	// Default 5 s, below contract.UnavailableDetectMax so a client learns of an outage within the
	// contract's 7 s.
	BackendTimeout time.Duration
	// WriteTimeout (QIM_GATEWAY_WRITE_TIMEOUT_MS) is how long one socket write may block. Default
	// 10 s. A client that stops reading for longer is closed rather than allowed to pin buffers.
	WriteTimeout time.Duration
	// SendInflight (QIM_GATEWAY_SEND_INFLIGHT) is how many SENDs one client connection may have at
	// the writer; at the limit the gateway stops reading that socket (TCP back-pressure). Default
	// contract.WriterInflightPerConnDefault, max contract.WriterInflightPerConnMax. Lower values
	// add client ACK latency that no server histogram shows; higher ones only add memory.
	SendInflight int
	// PushQueueDepth (QIM_GATEWAY_PUSH_QUEUE) bounds the PUSH_EVENTS frames waiting per
	// connection. Default 64. A full queue drops the push (counted); the client recovers it
	// with PULL_MAILBOX, so depth only trades memory against pull round trips for slow readers.
	PushQueueDepth int
	// PullQueueDepth (QIM_GATEWAY_PULL_QUEUE) bounds PULL_MAILBOX, PULL_HISTORY,
	// PULL_SESSION_LIST and MARK_READ requests waiting per connection; at the limit the socket is
	// not read. Default 8 (SDKs single-flight pulls).
	PullQueueDepth int
	// MaxConns (QIM_GATEWAY_MAX_CONNS) caps live client connections; more are closed at accept
	// (counted). Default 100,000. Each connection costs a few goroutines and ~40 KiB of buffers.
	MaxConns int
}

// ErrConfig is wrapped by every configuration error.
var ErrConfig = errors.New("gateway: invalid config")

// Validate rejects bad values and fills the documented defaults.
func (c *Config) Validate() error {
	for _, r := range []struct{ name, val string }{
		{"QIM_WRITER_ADDR", c.WriterAddr}, {"QIM_MAILBOX_ADDR", c.MailboxAddr}, {"QIM_SESSION_ADDR", c.SessionAddr},
		{"QIM_REDIS_ADDR", c.RedisAddr},
	} {
		if r.val == "" {
			return fmt.Errorf("%w: %s is required", ErrConfig, r.name)
		}
	}
	if len(c.TokenSecret) < devtoken.MinSecretBytes {
		return fmt.Errorf("%w: QIM_TOKEN_SECRET must hold at least %d bytes (got %d)", ErrConfig, devtoken.MinSecretBytes, len(c.TokenSecret))
	}
	if (c.TLSCertFile == "") != (c.TLSKeyFile == "") {
		return fmt.Errorf("%w: QIM_GATEWAY_TLS_CERT and QIM_GATEWAY_TLS_KEY must be set together", ErrConfig)
	}
	setDefault(&c.ListenAddr, "127.0.0.1:7000")
	setDefault(&c.WSListenAddr, "127.0.0.1:7080")
	setDefault(&c.PushListenAddr, "127.0.0.1:7103")
	setDefault(&c.MetricsAddr, "127.0.0.1:9100")
	for _, a := range []string{c.ListenAddr, c.WSListenAddr, c.PushListenAddr, c.MetricsAddr, c.WriterAddr, c.MailboxAddr,
		c.SessionAddr, c.RedisAddr} {
		if _, _, err := net.SplitHostPort(a); err != nil {
			return fmt.Errorf("%w: address %q: %v", ErrConfig, a, err)
		}
	}
	// Internal RPC is plaintext until mTLS lands; refuse to expose it beyond loopback.
	for _, a := range []string{c.PushListenAddr, c.WriterAddr, c.MailboxAddr, c.SessionAddr} {
		if !isLoopback(a) {
			return fmt.Errorf("%w: internal gRPC address %q is not loopback; internal RPC has no mTLS yet", ErrConfig, a)
		}
	}
	if err := c.validateTimes(); err != nil {
		return err
	}
	return c.validateBounds()
}

func (c *Config) validateTimes() error {
	defDur(&c.HeartbeatInterval, contract.HeartbeatStart)
	defDur(&c.HeartbeatTimeout, c.HeartbeatInterval*5/2)
	defDur(&c.AuthTimeout, 10*time.Second)
	defDur(&c.BackendTimeout, 5*time.Second)
	defDur(&c.WriteTimeout, 10*time.Second)
	switch {
	case c.HeartbeatInterval < 100*time.Millisecond || c.HeartbeatInterval > contract.HeartbeatBackgroundMax:
		return fmt.Errorf("%w: heartbeat interval %v not in [100ms, %v]", ErrConfig, c.HeartbeatInterval, contract.HeartbeatBackgroundMax)
	case c.HeartbeatTimeout <= c.HeartbeatInterval:
		return fmt.Errorf("%w: heartbeat timeout %v must exceed the interval %v", ErrConfig, c.HeartbeatTimeout, c.HeartbeatInterval)
	case c.HeartbeatTimeout/time.Millisecond > 1<<31:
		return fmt.Errorf("%w: heartbeat timeout %v too large", ErrConfig, c.HeartbeatTimeout)
	case c.AuthTimeout < 0 || c.BackendTimeout < 0 || c.WriteTimeout < 0:
		return fmt.Errorf("%w: negative timeout", ErrConfig)
	}
	return nil
}

func (c *Config) validateBounds() error {
	defInt(&c.SendInflight, contract.WriterInflightPerConnDefault)
	defInt(&c.PushQueueDepth, 64)
	defInt(&c.PullQueueDepth, 8)
	defInt(&c.MaxConns, 100_000)
	switch {
	case c.SendInflight < 1 || c.SendInflight > contract.WriterInflightPerConnMax:
		return fmt.Errorf("%w: send in-flight %d not in [1, %d]", ErrConfig, c.SendInflight, contract.WriterInflightPerConnMax)
	case c.PushQueueDepth < 1 || c.PushQueueDepth > 4096:
		return fmt.Errorf("%w: push queue %d not in [1, 4096]", ErrConfig, c.PushQueueDepth)
	case c.PullQueueDepth < 1 || c.PullQueueDepth > 256:
		return fmt.Errorf("%w: pull queue %d not in [1, 256]", ErrConfig, c.PullQueueDepth)
	case c.MaxConns < 1:
		return fmt.Errorf("%w: max connections %d < 1", ErrConfig, c.MaxConns)
	}
	return nil
}

func isLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func setDefault(s *string, v string) {
	if *s == "" {
		*s = v
	}
}

func defDur(d *time.Duration, v time.Duration) {
	if *d == 0 {
		*d = v
	}
}

func defInt(n *int, v int) {
	if *n == 0 {
		*n = v
	}
}

// FromEnv reads the QIM_* variables named on the fields. Unset variables leave defaults to
// Validate; malformed values are errors, never silently ignored.
func FromEnv() (Config, error) {
	c := Config{
		ListenAddr: os.Getenv("QIM_GATEWAY_LISTEN"), WSListenAddr: os.Getenv("QIM_GATEWAY_WS_LISTEN"),
		TLSCertFile: os.Getenv("QIM_GATEWAY_TLS_CERT"), TLSKeyFile: os.Getenv("QIM_GATEWAY_TLS_KEY"),
		PushListenAddr: os.Getenv("QIM_GATEWAY_PUSH_LISTEN"), MetricsAddr: os.Getenv("QIM_GATEWAY_METRICS"),
		WriterAddr: os.Getenv("QIM_WRITER_ADDR"), MailboxAddr: os.Getenv("QIM_MAILBOX_ADDR"),
		SessionAddr: os.Getenv("QIM_SESSION_ADDR"), RedisAddr: os.Getenv("QIM_REDIS_ADDR"),
		TokenSecret: Secret(os.Getenv("QIM_TOKEN_SECRET")), AllowRelaxedRedis: os.Getenv("QIM_DEV_ALLOW_RELAXED_REDIS") == "1",
	}
	if v := os.Getenv("QIM_GATEWAY_WS_ORIGINS"); v != "" {
		for _, o := range strings.Split(v, ",") {
			if o = strings.TrimSpace(o); o != "" {
				c.WSOrigins = append(c.WSOrigins, o)
			}
		}
	}
	for env, dst := range map[string]*time.Duration{
		"QIM_HEARTBEAT_MS": &c.HeartbeatInterval, "QIM_HEARTBEAT_TIMEOUT_MS": &c.HeartbeatTimeout,
		"QIM_GATEWAY_AUTH_TIMEOUT_MS": &c.AuthTimeout, "QIM_GATEWAY_BACKEND_TIMEOUT_MS": &c.BackendTimeout,
		"QIM_GATEWAY_WRITE_TIMEOUT_MS": &c.WriteTimeout,
	} {
		if v := os.Getenv(env); v != "" {
			ms, err := strconv.ParseInt(v, 10, 64)
			if err != nil || ms <= 0 {
				return c, fmt.Errorf("%w: %s=%q: want a positive number of milliseconds", ErrConfig, env, v)
			}
			*dst = time.Duration(ms) * time.Millisecond
		}
	}
	for env, dst := range map[string]*int{
		"QIM_GATEWAY_SEND_INFLIGHT": &c.SendInflight, "QIM_GATEWAY_PUSH_QUEUE": &c.PushQueueDepth,
		"QIM_GATEWAY_PULL_QUEUE": &c.PullQueueDepth, "QIM_GATEWAY_MAX_CONNS": &c.MaxConns,
	} {
		if v := os.Getenv(env); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n <= 0 {
				return c, fmt.Errorf("%w: %s=%q: want a positive integer", ErrConfig, env, v)
			}
			*dst = n
		}
	}
	return c, nil
}
