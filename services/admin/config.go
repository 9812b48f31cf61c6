package admin

import (
	"errors"
	"fmt"
	"net"
	"strings"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/qim-dev/qim/contract"
	"github.com/qim-dev/qim/contract/devtoken"
	"github.com/qim-dev/qim/services/internal/config"
	"github.com/qim-dev/qim/services/internal/rpcauth"
	"github.com/qim-dev/qim/services/internal/storeauth"
)

// Config is the admin API's configuration: one field per QIM_* variable (docs/config.md and
// `qim admin --help` are generated from the tags).
type Config struct {
	// ListenAddr serves the API (plain HTTP: put TLS in front, or keep it on a private network).
	ListenAddr string `env:"QIM_ADMIN_LISTEN" doc:"admin API address (HTTP/JSON; docs/admin-api.json)"`
	// MetricsAddr serves /metrics, /healthz and /debug/pprof.
	MetricsAddr string `env:"QIM_ADMIN_METRICS" doc:"address of /metrics, /healthz and /debug/pprof"`
	// KeysFile lists the API keys (their SHA-256, never the key) and their scopes.
	KeysFile string `env:"QIM_ADMIN_KEYS" required:"true" doc:"JSON file of the API keys' SHA-256 digests and scopes (docs/identity.md#admin-api)"`
	// RedisAddr is the core Redis, where revocations are stored.
	RedisAddr string `env:"QIM_REDIS_ADDR" required:"true" doc:"core Redis (host:port) holding revocations"`
	// TokenSecret signs dev tokens for tests (POST /v1/dev-tokens). Unset: the route answers 404.
	TokenSecret config.Secret `env:"QIM_TOKEN_SECRET" secret:"true" doc:"dev-token signing secret for POST /v1/dev-tokens (unset: the route is off; never logged)"`
	// KafkaBrokers host qim.presence, which GET /v1/devices answers from. Unset: that route is 404.
	KafkaBrokers []string `env:"QIM_KAFKA_BROKERS" doc:"Kafka-protocol brokers hosting qim.presence, for GET /v1/devices (unset: the route answers 404)"`
	// Store credentials and TLS (all optional; services/internal/storeauth).
	RedisAuth storeauth.Redis
	KafkaAuth storeauth.Kafka
	kafkaSec  []kgo.Opt // KafkaAuth's client options, built by Validate
	// ShardCount is the partition count of qim.presence, as on every service.
	ShardCount int `env:"QIM_MAILBOX_SHARD_COUNT" unit:"shards" doc:"mailbox shards = qim.presence partitions; the same on every service"`
	// WriterAddrs are the ConversationWriters whose GroupAdmin RPC the group routes call (any
	// writer serves any group). Unset: the group routes are 404.
	WriterAddrs []string `env:"QIM_WRITER_ADDRS" doc:"ConversationWriter gRPC addresses for the group routes, tried in order (unset: the routes answer 404; needs the admin certificate: QIM_RPC_TLS_CA, QIM_RPC_TLS_CERT, QIM_RPC_TLS_KEY)"`
	// RoomAddrs are the RoomWriters whose Moderate RPC the room routes call. It must be the list
	// the gateways have: a room's moderation and counts live only in the instance owning it
	// (contract.RoomOwner over this list), so a different list would moderate an empty copy of
	// the room on an instance no gateway sends it to. Unset: the room routes are 404.
	RoomAddrs []string `env:"QIM_ROOM_ADDRS" doc:"RoomWriter gRPC addresses for the room routes, the same list as the gateways'; each call goes to the room's owner, never another instance (unset: the routes answer 404; needs the admin certificate: QIM_RPC_TLS_CA, QIM_RPC_TLS_CERT, QIM_RPC_TLS_KEY)"`
	// The admin certificate of the internal RPC boundary: GroupAdmin and RoomWriter.Moderate are
	// refused to anything else.
	RPCCAFile   string `env:"QIM_RPC_TLS_CA" doc:"PEM file of the internal CA (with QIM_WRITER_ADDRS or QIM_ROOM_ADDRS)"`
	RPCCertFile string `env:"QIM_RPC_TLS_CERT" doc:"PEM admin certificate the writers and RoomWriters list as admin:<sha256> in QIM_RPC_PEERS (with QIM_WRITER_ADDRS or QIM_ROOM_ADDRS)"`
	RPCKeyFile  string `env:"QIM_RPC_TLS_KEY" doc:"PEM private key of QIM_RPC_TLS_CERT"`
	keys        []apiKey
	rpc         *rpcauth.Transport
}

// DefaultConfig is the configuration with every default set and the required fields empty.
func DefaultConfig() Config {
	return Config{ListenAddr: "127.0.0.1:7300", MetricsAddr: "127.0.0.1:9106", ShardCount: contract.MailboxShardsDefault}
}

// ErrConfig is wrapped by every configuration error.
var ErrConfig = errors.New("admin: invalid config")

// FromEnv reads the QIM_* variables over DefaultConfig.
func FromEnv() (Config, error) { return config.FromEnv(DefaultConfig(), ErrConfig) }

// Validate fills defaults, checks addresses and loads the keys file.
func (c *Config) Validate() error {
	if err := config.Prepare(c, DefaultConfig(), ErrConfig); err != nil {
		return err
	}
	var serr error
	if c.kafkaSec, serr = c.KafkaAuth.Opts(); serr != nil {
		return fmt.Errorf("%w: %w", ErrConfig, serr)
	}
	if err := c.RedisAuth.Validate(); err != nil {
		return fmt.Errorf("%w: %w", ErrConfig, err)
	}
	for _, a := range []struct{ name, addr string }{{"QIM_ADMIN_LISTEN", c.ListenAddr}, {"QIM_ADMIN_METRICS", c.MetricsAddr}, {"QIM_REDIS_ADDR", c.RedisAddr}} {
		if _, _, err := net.SplitHostPort(a.addr); err != nil {
			return fmt.Errorf("%w: %s=%q: %v", ErrConfig, a.name, a.addr, err)
		}
	}
	if len(c.TokenSecret) != 0 && len(c.TokenSecret) < devtoken.MinSecretBytes {
		return fmt.Errorf("%w: QIM_TOKEN_SECRET must hold at least %d bytes (got %d)", ErrConfig, devtoken.MinSecretBytes, len(c.TokenSecret))
	}
	if _, err := contract.NewShardCount(c.ShardCount); err != nil {
		return fmt.Errorf("%w: QIM_MAILBOX_SHARD_COUNT=%d: %v", ErrConfig, c.ShardCount, err)
	}
	if err := c.loadRPC(); err != nil {
		return err
	}
	keys, err := loadKeys(c.KeysFile)
	if err != nil {
		return fmt.Errorf("%w: QIM_ADMIN_KEYS: %w", ErrConfig, err)
	}
	c.keys = keys
	return nil
}

// loadRPC reads the admin certificate when a route over the internal RPC is on (groups and
// messages: QIM_WRITER_ADDRS; rooms: QIM_ROOM_ADDRS): a missing or unreadable file stops the
// start, not the first call.
func (c *Config) loadRPC() error {
	set := c.RPCCAFile != "" || c.RPCCertFile != "" || c.RPCKeyFile != ""
	lists := []struct {
		name  string
		addrs []string
	}{{"QIM_WRITER_ADDRS", c.WriterAddrs}, {"QIM_ROOM_ADDRS", c.RoomAddrs}}
	var named []string
	for _, l := range lists {
		if len(l.addrs) > 0 {
			named = append(named, l.name)
		}
	}
	switch {
	case len(named) == 0 && set:
		return fmt.Errorf("%w: QIM_RPC_TLS_CA, QIM_RPC_TLS_CERT or QIM_RPC_TLS_KEY is set without QIM_WRITER_ADDRS or QIM_ROOM_ADDRS: "+
			"the certificate is only for the group, message and room routes", ErrConfig)
	case len(named) == 0:
		return nil
	case c.RPCCAFile == "" || c.RPCCertFile == "" || c.RPCKeyFile == "":
		return fmt.Errorf("%w: %s: the admin certificate is needed: QIM_RPC_TLS_CA, QIM_RPC_TLS_CERT and QIM_RPC_TLS_KEY "+
			"(qimctl certs dev writes admin.pem and admin.key)", ErrConfig, strings.Join(named, " and "))
	}
	for _, l := range lists {
		for _, a := range l.addrs {
			if _, _, err := net.SplitHostPort(a); err != nil {
				return fmt.Errorf("%w: %s lists %q: %v", ErrConfig, l.name, a, err)
			}
		}
	}
	t, err := rpcauth.LoadClient(c.RPCCAFile, c.RPCCertFile, c.RPCKeyFile)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrConfig, err)
	}
	c.rpc = t
	return nil
}
