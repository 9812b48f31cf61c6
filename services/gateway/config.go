package gateway

import (
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/contract/devtoken"
	"github.com/qim-dev/qim/services/authn"
	"github.com/qim-dev/qim/services/gateway/ratelimit"
	"github.com/qim-dev/qim/services/internal/config"
	"github.com/qim-dev/qim/services/internal/rpcauth"
	"github.com/qim-dev/qim/services/internal/storeauth"
)

// Config is the ConnectionNode's configuration: one field per QIM_* variable (the tags give its
// name, unit and help line; docs/config.md and `qim gateway --help` are generated from them).
// Defaults live in DefaultConfig; the comments here give each knob's trade-off.
type Config struct {
	// ListenAddr is the client TCP address (TLS 1.3 when a certificate is configured).
	ListenAddr string `env:"QIM_GATEWAY_LISTEN" doc:"client TCP address (TLS 1.3 when QIM_GATEWAY_TLS_CERT is set)"`
	// WSListenAddr serves WebSocket at /ws, one frame stream per WebSocket connection carried in
	// binary messages. Plain HTTP: browsers need WSS, which a TLS-terminating proxy provides.
	WSListenAddr string `env:"QIM_GATEWAY_WS_LISTEN" doc:"WebSocket address (/ws, binary messages carrying frames)"`
	// WSOrigins are the browser origins allowed to open /ws besides the gateway's own host. None
	// by default: a page served from another origin cannot open the socket with its user's
	// cookies. Non-browser clients send no Origin.
	WSOrigins []string `env:"QIM_GATEWAY_WS_ORIGINS" doc:"browser origin host patterns allowed to open /ws besides the gateway's own host"`
	// TLSCertFile and TLSKeyFile switch the TCP listener to TLS 1.3 (ALPN qim/1); both or
	// neither. Unset: plain TCP, for loopback and for deployments terminating TLS in front.
	TLSCertFile string `env:"QIM_GATEWAY_TLS_CERT" doc:"PEM certificate of the TCP listener (with QIM_GATEWAY_TLS_KEY)"`
	TLSKeyFile  string `env:"QIM_GATEWAY_TLS_KEY" doc:"PEM private key of the TCP listener (with QIM_GATEWAY_TLS_CERT)"`
	// PushListenAddr is the gRPC Push service the MailboxNode calls. Loopback only until
	// internal RPC has mTLS.
	PushListenAddr string `env:"QIM_GATEWAY_PUSH_LISTEN" doc:"gRPC Push address the MailboxNode calls (mTLS, or loopback with QIM_RPC_PLAINTEXT_LOOPBACK)"`
	// PushAdvertise is the Push address MailboxNodes dial, as published in qim.presence. Unset:
	// the bound QIM_GATEWAY_PUSH_LISTEN address, which must then name a host (not 0.0.0.0).
	PushAdvertise string `env:"QIM_GATEWAY_PUSH_ADVERTISE" default:"the bound QIM_GATEWAY_PUSH_LISTEN" doc:"Push address published in qim.presence for MailboxNodes to dial"`
	// KafkaBrokers host qim.presence (ADR-0027). Set, the gateway publishes where its devices are
	// online, so MailboxNodes push to the gateway that holds each user and a login on another
	// gateway kicks the older session here; every gateway of a deployment with more than one
	// needs it. Unset: one gateway only, which MailboxNodes reach through QIM_GATEWAY_PUSH_ADDR.
	KafkaBrokers []string `env:"QIM_KAFKA_BROKERS" doc:"Kafka-protocol brokers hosting qim.presence (unset: a single gateway, no PresenceDirectory)"`
	// MetricsAddr serves /metrics, /healthz and /debug/pprof.
	MetricsAddr string `env:"QIM_GATEWAY_METRICS" doc:"address of /metrics, /healthz and /debug/pprof"`
	// WriterAddrs are the ConversationWriter instances. Each conversation goes to one by
	// rendezvous hashing and moves to the next when its instance is lost (writers.go); any
	// writer commits any conversation correctly, so the list only spreads load.
	WriterAddrs []string `env:"QIM_WRITER_ADDRS" required:"true" doc:"ConversationWriter gRPC addresses, comma-separated; conversations spread by rendezvous hashing (mTLS, or loopback with QIM_RPC_PLAINTEXT_LOOPBACK)"`
	// MailboxAddrs and SessionAddrs are the MailboxNode and SessionProjection instances: entry i
	// of n serves the shards contract.ShardCount.InstanceShards(i, n) gives, which is what each
	// instance's QIM_MAILBOX_OWNED_SHARDS or QIM_SESSION_OWNED_SHARDS must say (ADR-0026). An
	// address may appear more than once: a node that took over another's shards.
	MailboxAddrs []string `env:"QIM_MAILBOX_ADDRS" required:"true" doc:"MailboxNode gRPC addresses, comma-separated; entry i of n serves the i-th of n equal shard ranges (mTLS, or loopback with QIM_RPC_PLAINTEXT_LOOPBACK)"`
	SessionAddrs []string `env:"QIM_SESSION_ADDRS" required:"true" doc:"SessionProjection gRPC addresses (PULL_SESSION_LIST, MARK_READ), comma-separated; entry i of n serves the i-th of n equal shard ranges (mTLS, or loopback with QIM_RPC_PLAINTEXT_LOOPBACK)"`
	// RoomAddrs are the RoomWriter instances (ADR-0034). A room belongs to one of them by
	// contract.RoomOwner over this list, which must be the same, in any order of entries, on
	// every gateway; while its owner is down the room is unavailable rather than moved. Unset:
	// JOIN_ROOM, LEAVE_ROOM and SENDs to rooms are answered UNIMPLEMENTED.
	RoomAddrs []string `env:"QIM_ROOM_ADDRS" doc:"RoomWriter gRPC addresses, comma-separated, the same list on every gateway; rooms are placed by rendezvous hashing (unset: rooms are not served)"`
	// RoomQueueBytes bounds the room frames (ROOM_EVENTS and the like) waiting per connection, in
	// payload bytes (a frame larger than the bound is still queued alone). A connection that
	// lets it fill is dropped from its rooms with ROOM_LEFT SLOW_CONSUMER and rejoins with
	// replay; a larger bound rides out longer stalls at the price of memory per member.
	RoomQueueBytes int `env:"QIM_GATEWAY_ROOM_QUEUE_BYTES" unit:"bytes" doc:"room frame bytes waiting per connection before it is dropped from a room as a slow consumer (64KiB..256MiB)"`
	// ShardCount places users on mailbox shards, which is how a user's MailboxNode and
	// SessionProjection are found. It must equal every other service's.
	ShardCount int `env:"QIM_MAILBOX_SHARD_COUNT" unit:"shards" doc:"mailbox shards = qim.dispatch partitions; a power of two, the same on every service"`
	// RedisAddr holds the session_epoch counters. The gateway refuses to start unless it runs AOF
	// with appendfsync always: a counter rolled back by a crash would hand a new login an epoch
	// an older session already had.
	RedisAddr string `env:"QIM_REDIS_ADDR" required:"true" doc:"core Redis (host:port) holding session_epoch counters; must run AOF with appendfsync always"`
	// RPC is the internal RPC boundary: mTLS with the role whitelist, or plaintext on loopback
	// for development (ADR-0025).
	RPC rpcauth.Config
	// RedisAuth and KafkaAuth are the stores' credentials and TLS (all optional).
	RedisAuth storeauth.Redis
	KafkaAuth storeauth.Kafka
	// AllowRelaxedRedis accepts appendfsync everysec on a loopback Redis, for development only.
	AllowRelaxedRedis bool `env:"QIM_DEV_ALLOW_RELAXED_REDIS" doc:"development only: accept appendfsync everysec on a loopback Redis"`
	// TokenSecret signs dev tokens (contract/devtoken), for make demo, the SDK tests and the
	// gates. Unset: dev tokens are refused. Never printed: every way of formatting it yields a
	// digest.
	TokenSecret Secret `env:"QIM_TOKEN_SECRET" secret:"true" doc:"dev-token signing secret (at least 16 bytes; never logged); unset refuses dev tokens"`
	// AuthIssuers names a JSON file of the identity providers whose JWTs AUTH accepts
	// (docs/identity.md): issuer, audience, tenant or tenant claim, JWKS URL or PEM keys. At least
	// one of it and QIM_TOKEN_SECRET is required. Read at start; a change needs a restart.
	AuthIssuers string `env:"QIM_AUTH_ISSUERS" doc:"JSON file of the JWT issuers AUTH accepts (docs/identity.md); with or instead of QIM_TOKEN_SECRET"`
	// identity is AuthIssuers as loaded by Validate.
	identity authn.IssuersFile
	// HeartbeatInterval is the PING interval told to clients (default contract.HeartbeatStart,
	// 60 s; at most contract.HeartbeatBackgroundMax). Shorter detects dead peers sooner and
	// costs radio wake-ups on phones.
	HeartbeatInterval time.Duration `env:"QIM_HEARTBEAT_INTERVAL" doc:"PING interval told to clients (100ms..the background maximum)"`
	// HeartbeatTimeout is the silence after which a connection is closed. Derived by default: one
	// PING may be lost and one may be late.
	HeartbeatTimeout time.Duration `env:"QIM_HEARTBEAT_TIMEOUT" default:"2.5 × QIM_HEARTBEAT_INTERVAL" doc:"silence after which a connection is closed (above the interval)"`
	// HeartbeatFixed keeps every connection at HeartbeatInterval. By default the interval adapts
	// (beat.go): it starts there and grows while the connection holds, up to twice the start in
	// the foreground and four times in the background (at most 120 s and 240 s), saving phones
	// radio wake-ups at the price of detecting a dead peer later.
	HeartbeatFixed bool `env:"QIM_HEARTBEAT_FIXED" doc:"keep every connection at QIM_HEARTBEAT_INTERVAL instead of adapting it (default: adapt)"`
	// AuthTimeout bounds the wait for the first frame (and the TLS handshake before it). A socket
	// that never authenticates holds a file descriptor and a goroutine until then.
	AuthTimeout time.Duration `env:"QIM_GATEWAY_AUTH_TIMEOUT" doc:"wait for the first frame (and the TLS handshake) of a new connection"`
	// BackendTimeout bounds one unary backend call and a backend connection attempt. The 5 s
	// default stays below contract.UnavailableDetectMax (7 s), so a client learns of an outage
	// within the contract's budget.
	BackendTimeout time.Duration `env:"QIM_GATEWAY_BACKEND_TIMEOUT" doc:"bound of one unary backend call and of a backend connection attempt"`
	// WriteTimeout is how long one socket write may block. A client that stops reading for longer
	// is closed rather than allowed to pin buffers.
	WriteTimeout time.Duration `env:"QIM_GATEWAY_WRITE_TIMEOUT" doc:"how long one socket write may block before the connection is closed"`
	// SendInflight is how many SENDs one client connection may have at the writer; at the limit
	// the gateway stops reading that socket (TCP back-pressure). Lower adds client ACK latency
	// that no server histogram shows; higher only adds memory.
	SendInflight int `env:"QIM_GATEWAY_SEND_INFLIGHT" unit:"sends" doc:"SENDs one connection may have at the writer before its socket is not read (max 8192)"`
	// PushQueueDepth bounds the PUSH_EVENTS frames waiting per connection. A full queue drops the
	// push (counted); the client recovers it with PULL_MAILBOX, so depth only trades memory
	// against pull round trips for slow readers.
	PushQueueDepth int `env:"QIM_GATEWAY_PUSH_QUEUE" unit:"frames" doc:"PUSH_EVENTS frames waiting per connection before pushes are dropped (1..4096)"`
	// PullQueueDepth bounds PULL_MAILBOX, PULL_HISTORY, PULL_SESSION_LIST and MARK_READ requests
	// waiting per connection; at the limit the socket is not read. SDKs single-flight pulls.
	PullQueueDepth int `env:"QIM_GATEWAY_PULL_QUEUE" unit:"requests" doc:"pull and MARK_READ requests waiting per connection before its socket is not read (1..256)"`
	// AuthFailureBurst and AuthFailureRefill bound failed AUTHs per source IP (authlimit.go):
	// each refused credential takes one of Burst, one comes back every Refill, and an address with
	// none left is answered RATE_LIMITED before any verification work. Behind a proxy that hides
	// client addresses every client shares one bucket: raise Burst there.
	AuthFailureBurst  int           `env:"QIM_GATEWAY_AUTH_FAILURE_BURST" unit:"failures" doc:"failed AUTHs one source IP may make in a row before it is refused RATE_LIMITED (1..1000000)"`
	AuthFailureRefill time.Duration `env:"QIM_GATEWAY_AUTH_FAILURE_REFILL" doc:"time in which one failed AUTH of a source IP is forgiven"`
	// RateLimits names a JSON file of the SEND rate limits per connection, per sender and per
	// tenant, a default tier and the tenants that differ (docs/deployment.md#rate-limits). Unset: a
	// connection and a sender may send 100 a second after a burst of 200, tenants unlimited.
	// Read at start; a change needs a restart.
	RateLimits string `env:"QIM_GATEWAY_RATE_LIMITS" doc:"JSON file of SEND rate limits per connection, sender and tenant (unset: 100/s, burst 200 per connection and per sender)"`
	// rateRules is RateLimits as loaded by Validate.
	rateRules ratelimit.Rules
	// RateLimitSync is how often the gateway exchanges its sender and tenant buckets with the
	// other gateways through the core Redis. Shorter shares limits more exactly across gateways
	// at one script call per 256 active buckets per interval.
	RateLimitSync time.Duration `env:"QIM_GATEWAY_RATE_LIMIT_SYNC" doc:"interval of the exchange of shared rate-limit buckets through the core Redis (10ms..10s)"`
	// MaxConns caps live client connections; more are closed at accept (counted). Each costs a
	// few goroutines and ~40 KiB of buffers.
	MaxConns int `env:"QIM_GATEWAY_MAX_CONNS" unit:"connections" doc:"live client connections; more are closed at accept"`
}

// DefaultConfig is the configuration with every default set and the required fields empty.
// HeartbeatTimeout stays zero: Validate derives it from the interval.
func DefaultConfig() Config {
	return Config{
		ListenAddr:        "127.0.0.1:7000",
		WSListenAddr:      "127.0.0.1:7080",
		PushListenAddr:    "127.0.0.1:7103",
		MetricsAddr:       "127.0.0.1:9100",
		HeartbeatInterval: contract.HeartbeatStart,
		AuthTimeout:       10 * time.Second,
		BackendTimeout:    5 * time.Second,
		WriteTimeout:      10 * time.Second,
		SendInflight:      contract.WriterInflightPerConnDefault,
		PushQueueDepth:    64,
		RoomQueueBytes:    1 << 20,
		PullQueueDepth:    8,
		MaxConns:          100_000,
		AuthFailureBurst:  30,
		AuthFailureRefill: time.Second,
		ShardCount:        contract.MailboxShardsDefault,
		RateLimitSync:     250 * time.Millisecond,
	}
}

// ErrConfig is wrapped by every configuration error.
var ErrConfig = errors.New("gateway: invalid config")

// FromEnv reads the QIM_* variables over DefaultConfig. Malformed values are errors naming the
// variable (never its value, for the token secret).
func FromEnv() (Config, error) {
	return config.FromEnv(DefaultConfig(), ErrConfig)
}

// Validate fills the defaults of zero fields, derives the heartbeat timeout and rejects bad
// values, naming the variable.
func (c *Config) Validate() error {
	if err := config.Prepare(c, DefaultConfig(), ErrConfig); err != nil {
		return err
	}
	if err := c.validateIdentity(); err != nil {
		return err
	}
	if err := c.loadRateLimits(); err != nil {
		return err
	}
	if err := errors.Join(c.RedisAuth.Validate(), c.KafkaAuth.Validate()); err != nil {
		return fmt.Errorf("%w: %w", ErrConfig, err)
	}
	if (c.TLSCertFile == "") != (c.TLSKeyFile == "") {
		return fmt.Errorf("%w: QIM_GATEWAY_TLS_CERT and QIM_GATEWAY_TLS_KEY must be set together", ErrConfig)
	}
	if err := c.validateAddrs(); err != nil {
		return err
	}
	if err := c.validateTimes(); err != nil {
		return err
	}
	return c.validateBounds()
}

// validateIdentity requires a way to verify credentials and loads the issuers file, so a typo in
// it stops the start rather than every login.
func (c *Config) validateIdentity() error {
	if len(c.TokenSecret) == 0 && c.AuthIssuers == "" {
		return fmt.Errorf("%w: no credential is accepted: set QIM_AUTH_ISSUERS (a JWT issuer) or QIM_TOKEN_SECRET (dev tokens)", ErrConfig)
	}
	if len(c.TokenSecret) != 0 && len(c.TokenSecret) < devtoken.MinSecretBytes {
		return fmt.Errorf("%w: QIM_TOKEN_SECRET must hold at least %d bytes (got %d)", ErrConfig, devtoken.MinSecretBytes, len(c.TokenSecret))
	}
	if c.AuthIssuers == "" {
		return nil
	}
	f, err := authn.LoadIssuers(c.AuthIssuers)
	if err != nil {
		return fmt.Errorf("%w: QIM_AUTH_ISSUERS: %w", ErrConfig, err)
	}
	c.identity = f
	return nil
}

// loadRateLimits reads the rate-limit file, so a mistake in it stops the start.
func (c *Config) loadRateLimits() error {
	if c.RateLimits == "" {
		c.rateRules = ratelimit.DefaultRules()
		return nil
	}
	r, err := ratelimit.Load(c.RateLimits)
	if err != nil {
		return fmt.Errorf("%w: QIM_GATEWAY_RATE_LIMITS: %w", ErrConfig, err)
	}
	c.rateRules = r
	return nil
}

// addrVar is one address-valued variable; internal marks internal gRPC (mTLS, or loopback in
// the development mode: rpcauth).
type addrVar struct {
	name, addr string
	internal   bool
}

func (c *Config) validateAddrs() error {
	addrs := []addrVar{
		{"QIM_GATEWAY_LISTEN", c.ListenAddr, false}, {"QIM_GATEWAY_WS_LISTEN", c.WSListenAddr, false},
		{"QIM_GATEWAY_METRICS", c.MetricsAddr, false}, {"QIM_REDIS_ADDR", c.RedisAddr, false},
		{"QIM_GATEWAY_PUSH_LISTEN", c.PushListenAddr, true},
	}
	for _, l := range []struct {
		name string
		list []string
	}{{"QIM_WRITER_ADDRS", c.WriterAddrs}, {"QIM_MAILBOX_ADDRS", c.MailboxAddrs}, {"QIM_SESSION_ADDRS", c.SessionAddrs}} {
		for _, a := range l.list {
			addrs = append(addrs, addrVar{l.name, a, true})
		}
	}
	for _, a := range addrs {
		if _, _, err := net.SplitHostPort(a.addr); err != nil {
			return fmt.Errorf("%w: %s=%q: %v", ErrConfig, a.name, a.addr, err)
		}
	}
	if err := c.validateInstances(); err != nil {
		return err
	}
	if err := c.validatePresence(); err != nil {
		return err
	}
	var internal []rpcauth.Addr
	for _, a := range addrs {
		if a.internal {
			internal = append(internal, rpcauth.Addr{Var: a.name, Addr: a.addr})
		}
	}
	if err := c.RPC.Validate(internal...); err != nil {
		return fmt.Errorf("%w: %w", ErrConfig, err)
	}
	return nil
}

// validatePresence refuses a Push address MailboxNodes could not dial: a wildcard listener with
// nothing advertised would be published as 0.0.0.0, which names no host.
func (c *Config) validatePresence() error {
	if len(c.KafkaBrokers) == 0 {
		return nil
	}
	for _, b := range c.KafkaBrokers {
		if _, _, err := net.SplitHostPort(b); err != nil {
			return fmt.Errorf("%w: QIM_KAFKA_BROKERS entry %q: %v", ErrConfig, b, err)
		}
	}
	if c.PushAdvertise != "" {
		host, port, err := net.SplitHostPort(c.PushAdvertise)
		if err != nil || host == "" || port == "0" || net.ParseIP(host).IsUnspecified() {
			return fmt.Errorf("%w: QIM_GATEWAY_PUSH_ADVERTISE=%q must be a dialable host:port", ErrConfig, c.PushAdvertise)
		}
		return nil
	}
	if host, _, _ := net.SplitHostPort(c.PushListenAddr); host == "" || net.ParseIP(host).IsUnspecified() {
		return fmt.Errorf("%w: QIM_GATEWAY_PUSH_LISTEN=%q listens on every interface: set QIM_GATEWAY_PUSH_ADVERTISE to the address MailboxNodes dial",
			ErrConfig, c.PushListenAddr)
	}
	return nil
}

// validateInstances refuses a writer listed twice (it would win twice the conversations, and a
// loss would be detected on one entry only) and more shard instances than shards.
func (c *Config) validateInstances() error {
	n, err := contract.NewShardCount(c.ShardCount)
	if err != nil {
		return fmt.Errorf("%w: QIM_MAILBOX_SHARD_COUNT=%d: %v", ErrConfig, c.ShardCount, err)
	}
	seen := map[string]bool{}
	for _, a := range c.WriterAddrs {
		if seen[a] {
			return fmt.Errorf("%w: QIM_WRITER_ADDRS lists %s twice", ErrConfig, a)
		}
		seen[a] = true
	}
	for _, l := range []struct {
		name string
		list []string
	}{{"QIM_MAILBOX_ADDRS", c.MailboxAddrs}, {"QIM_SESSION_ADDRS", c.SessionAddrs}} {
		if len(l.list) > int(n) {
			return fmt.Errorf("%w: %s lists %d instances for %d shards (QIM_MAILBOX_SHARD_COUNT); at most one per shard",
				ErrConfig, l.name, len(l.list), n)
		}
	}
	return nil
}

func (c *Config) validateTimes() error {
	if c.HeartbeatTimeout == 0 {
		c.HeartbeatTimeout = c.HeartbeatInterval * 5 / 2
	}
	switch {
	case c.HeartbeatInterval < 100*time.Millisecond || c.HeartbeatInterval > contract.HeartbeatBackgroundMax:
		return fmt.Errorf("%w: QIM_HEARTBEAT_INTERVAL=%v not in [100ms, %v]", ErrConfig, c.HeartbeatInterval, contract.HeartbeatBackgroundMax)
	case c.HeartbeatTimeout <= c.HeartbeatInterval:
		return fmt.Errorf("%w: QIM_HEARTBEAT_TIMEOUT=%v must exceed QIM_HEARTBEAT_INTERVAL=%v", ErrConfig, c.HeartbeatTimeout, c.HeartbeatInterval)
	case c.HeartbeatTimeout/time.Millisecond > 1<<31: // it travels as uint32 milliseconds
		return fmt.Errorf("%w: QIM_HEARTBEAT_TIMEOUT=%v too large", ErrConfig, c.HeartbeatTimeout)
	}
	for _, t := range []struct {
		name string
		d    time.Duration
	}{
		{"QIM_GATEWAY_AUTH_TIMEOUT", c.AuthTimeout}, {"QIM_GATEWAY_BACKEND_TIMEOUT", c.BackendTimeout},
		{"QIM_GATEWAY_WRITE_TIMEOUT", c.WriteTimeout},
	} {
		if t.d < 0 {
			return fmt.Errorf("%w: %s=%v is negative", ErrConfig, t.name, t.d)
		}
	}
	return nil
}

func (c *Config) validateBounds() error {
	switch {
	case c.SendInflight < 1 || c.SendInflight > contract.WriterInflightPerConnMax:
		return fmt.Errorf("%w: QIM_GATEWAY_SEND_INFLIGHT=%d not in [1, %d]", ErrConfig, c.SendInflight, contract.WriterInflightPerConnMax)
	case c.PushQueueDepth < 1 || c.PushQueueDepth > 4096:
		return fmt.Errorf("%w: QIM_GATEWAY_PUSH_QUEUE=%d not in [1, 4096]", ErrConfig, c.PushQueueDepth)
	case c.RoomQueueBytes < 64<<10 || c.RoomQueueBytes > 256<<20:
		return fmt.Errorf("%w: QIM_GATEWAY_ROOM_QUEUE_BYTES=%d not in [65536, 268435456]", ErrConfig, c.RoomQueueBytes)
	case c.PullQueueDepth < 1 || c.PullQueueDepth > 256:
		return fmt.Errorf("%w: QIM_GATEWAY_PULL_QUEUE=%d not in [1, 256]", ErrConfig, c.PullQueueDepth)
	case c.MaxConns < 1:
		return fmt.Errorf("%w: QIM_GATEWAY_MAX_CONNS=%d below 1", ErrConfig, c.MaxConns)
	case c.AuthFailureBurst < 1 || c.AuthFailureBurst > 1_000_000:
		return fmt.Errorf("%w: QIM_GATEWAY_AUTH_FAILURE_BURST=%d not in [1, 1000000]", ErrConfig, c.AuthFailureBurst)
	case c.RateLimitSync < 10*time.Millisecond || c.RateLimitSync > 10*time.Second:
		return fmt.Errorf("%w: QIM_GATEWAY_RATE_LIMIT_SYNC=%s not in [10ms, 10s]", ErrConfig, c.RateLimitSync)
	case c.AuthFailureRefill < time.Millisecond || c.AuthFailureRefill > time.Hour:
		return fmt.Errorf("%w: QIM_GATEWAY_AUTH_FAILURE_REFILL=%s not in [1ms, 1h]", ErrConfig, c.AuthFailureRefill)
	}
	return nil
}
