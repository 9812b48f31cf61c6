package room

import (
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/services/internal/config"
	sendhook "github.com/qim-dev/qim/services/internal/moderation"
	"github.com/qim-dev/qim/services/internal/rpcauth"
	"github.com/qim-dev/qim/services/internal/storeauth"
)

// Package tuning (not contract values).
const (
	// minBufferAge is the shortest QIM_ROOM_BUFFER_AGE. The idle sweep drops a room only when
	// its newest event is older than the buffer age, so a room re-created after a drop is
	// instantiated at least one Unix second after the last event it issued, and its
	// contract.RoomSeqBase(now) is at least 2^RoomSeqEpochShift above the dropped room's base:
	// above every room_seq the dropped room issued (the contract's assumption: fewer than 2^30
	// events per second of a room's life, and a clock that does not step back).
	minBufferAge = time.Second
	// maxBufferAge bounds QIM_ROOM_BUFFER_AGE: a longer replay window is history, which rooms do
	// not have, and idle rooms would linger that long.
	maxBufferAge = time.Hour
	// maxBufferEvents bounds QIM_ROOM_BUFFER_EVENTS: memory is about the bodies times this per
	// busy room.
	maxBufferEvents = 100000
	// minLinkQueue and maxLinkQueue bound QIM_ROOM_LINK_QUEUE.
	minLinkQueue = 64
	maxLinkQueue = 1 << 20
	// sweepEvery is how often idle rooms are dropped: an idle room lingers at most the buffer age
	// plus this, which costs only its empty maps.
	sweepEvery = 15 * time.Second
	// downBytesMax is where the sender starts a new RoomLinkDown within one wake-up. An item is
	// never split, so a RoomLinkDown stays below downBytesMax + its largest item (a replay, or one
	// event of at most QIM_ROOM_MAX_BODY ≤ contract.MaxFramePayload): under the gateway's 8 MiB.
	downBytesMax = 1 << 20
	// linkKeepalive and linkKeepaliveTimeout make the server ping a silent gateway: a link whose
	// gateway host vanished would otherwise hold a blocked Send, and its memberships, until TCP
	// gives up (many minutes).
	linkKeepalive        = 30 * time.Second
	linkKeepaliveTimeout = 10 * time.Second
)

// Config is the RoomWriter's configuration: one field per QIM_* variable (the tags give its name,
// unit and help line; docs/config.md and `qim room --help` are generated from them). Defaults
// live in DefaultConfig; the comments here give each knob's trade-off.
type Config struct {
	// ListenAddr is the gRPC address gateways call (Link and Publish).
	ListenAddr string `env:"QIM_ROOM_LISTEN" doc:"gRPC listen address (gateways open their Link and call Publish here)"`
	// MetricsAddr serves /metrics, /healthz and /debug/pprof.
	MetricsAddr string `env:"QIM_ROOM_METRICS" doc:"address of /metrics, /healthz and /debug/pprof"`
	// RedisAddr is the core Redis, where room moderation is stored (modstore): a ban
	// acknowledged to an operator outlives this process. The RoomWriter refuses to start unless
	// it runs AOF with appendfsync always, like every holder of the core Redis.
	RedisAddr string `env:"QIM_REDIS_ADDR" required:"true" doc:"core Redis (host:port) storing room moderation (bans, mutes, slow mode, rate limits); must run AOF with appendfsync always"`
	// RedisAuth is the core Redis's credentials and TLS (optional; services/internal/storeauth).
	RedisAuth storeauth.Redis
	// AllowRelaxedRedis accepts appendfsync everysec on a loopback Redis, for development only: a
	// host crash would lose the moderation decisions of the last second.
	AllowRelaxedRedis bool `env:"QIM_DEV_ALLOW_RELAXED_REDIS" doc:"development only: accept appendfsync everysec on a loopback Redis"`
	// RPC is the internal RPC boundary: mTLS with the role whitelist, or plaintext on loopback
	// for development (ADR-0025).
	RPC rpcauth.Config
	// BufferEvents is the most events a room's ring buffer keeps: the replay window of a rejoin
	// and the idempotency window of a publish. Larger keeps more catch-up for a client that
	// rejoins late, at the cost of about this many bodies of memory per busy room.
	BufferEvents int `env:"QIM_ROOM_BUFFER_EVENTS" unit:"events" doc:"events a room's replay buffer keeps (1..100000; also the publish idempotency window)"`
	// BufferAge is the oldest event a ring buffer keeps, and how long an empty room lingers
	// before the sweep drops it. Longer lets a reconnecting client catch up from further back and
	// keeps a publish retry idempotent longer, at the cost of memory in quiet rooms. At least 1 s:
	// see minBufferAge for why a re-created room's epoch depends on it.
	BufferAge time.Duration `env:"QIM_ROOM_BUFFER_AGE" doc:"oldest event a room's replay buffer keeps, and how long an idle room lingers (1s..1h)"`
	// LinkQueue is how many items (join answers and events) may wait for one gateway's link. A
	// full queue ends the link (its connections rejoin with replay): larger rides out longer
	// stalls of a gateway, at the cost of memory and of later, larger catch-ups.
	LinkQueue int `env:"QIM_ROOM_LINK_QUEUE" unit:"items" doc:"items queued per gateway link before the link is cut as slow (64..1048576)"`
	// MaxBody is the largest body a room event carries; a larger publish is PAYLOAD_TOO_LARGE.
	// Every event is held in the buffer and sent to every gateway with members, so a room's
	// memory and bandwidth scale with it; at most contract.MaxFramePayload.
	MaxBody int `env:"QIM_ROOM_MAX_BODY" unit:"bytes" doc:"largest body of a room event; larger publishes are PAYLOAD_TOO_LARGE (at most the frame payload limit)"`
	// Moderation is the pre-send hook (sendhook.Config), the writers' own: a deployment has
	// one hook, asked about every client SEND, room events included.
	Moderation sendhook.Config
}

// DefaultConfig is the configuration with every default set. RPC stays empty: the boundary's
// mode has no default (rpcauth).
func DefaultConfig() Config {
	return Config{
		ListenAddr:   "127.0.0.1:9181",
		MetricsAddr:  "127.0.0.1:9108",
		BufferEvents: contract.RoomBufferEventsDefault,
		BufferAge:    contract.RoomBufferAgeDefault,
		LinkQueue:    65536,
		MaxBody:      64 << 10,
		Moderation:   sendhook.DefaultConfig(),
	}
}

// ErrConfig is wrapped by every configuration error.
var ErrConfig = errors.New("room: invalid config")

// FromEnv reads the QIM_* variables over DefaultConfig. Malformed values are errors naming the
// variable.
func FromEnv() (Config, error) {
	return config.FromEnv(DefaultConfig(), ErrConfig)
}

// Validate fills the defaults of zero fields and rejects bad values, naming the variable.
func (c *Config) Validate() error {
	if err := config.Prepare(c, DefaultConfig(), ErrConfig); err != nil {
		return err
	}
	if err := c.RedisAuth.Validate(); err != nil {
		return fmt.Errorf("%w: %w", ErrConfig, err)
	}
	for _, a := range []struct{ name, addr string }{
		{"QIM_ROOM_LISTEN", c.ListenAddr}, {"QIM_ROOM_METRICS", c.MetricsAddr}, {"QIM_REDIS_ADDR", c.RedisAddr},
	} {
		if _, _, err := net.SplitHostPort(a.addr); err != nil {
			return fmt.Errorf("%w: %s=%q: %v", ErrConfig, a.name, a.addr, err)
		}
	}
	for _, b := range []struct {
		name     string
		v        int
		min, max int
	}{
		{"QIM_ROOM_BUFFER_EVENTS", c.BufferEvents, 1, maxBufferEvents},
		{"QIM_ROOM_LINK_QUEUE", c.LinkQueue, minLinkQueue, maxLinkQueue},
		{"QIM_ROOM_MAX_BODY", c.MaxBody, 1, contract.MaxFramePayload},
	} {
		if b.v < b.min || b.v > b.max {
			return fmt.Errorf("%w: %s=%d not in [%d, %d]", ErrConfig, b.name, b.v, b.min, b.max)
		}
	}
	if c.BufferAge < minBufferAge || c.BufferAge > maxBufferAge {
		return fmt.Errorf("%w: QIM_ROOM_BUFFER_AGE=%v not in [%v, %v]", ErrConfig, c.BufferAge, minBufferAge, maxBufferAge)
	}
	if err := c.Moderation.Validate(); err != nil {
		return fmt.Errorf("%w: %w", ErrConfig, err)
	}
	if err := c.RPC.Validate(rpcauth.Addr{Var: "QIM_ROOM_LISTEN", Addr: c.ListenAddr}); err != nil {
		return fmt.Errorf("%w: %w", ErrConfig, err)
	}
	return nil
}
