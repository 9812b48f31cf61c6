package admin

import (
	"errors"
	"fmt"
	"net"

	"github.com/qim-dev/qim/contract/devtoken"
	"github.com/qim-dev/qim/services/internal/config"
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
	keys        []apiKey
}

// DefaultConfig is the configuration with every default set and the required fields empty.
func DefaultConfig() Config {
	return Config{ListenAddr: "127.0.0.1:7300", MetricsAddr: "127.0.0.1:9106"}
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
	for _, a := range []struct{ name, addr string }{{"QIM_ADMIN_LISTEN", c.ListenAddr}, {"QIM_ADMIN_METRICS", c.MetricsAddr}, {"QIM_REDIS_ADDR", c.RedisAddr}} {
		if _, _, err := net.SplitHostPort(a.addr); err != nil {
			return fmt.Errorf("%w: %s=%q: %v", ErrConfig, a.name, a.addr, err)
		}
	}
	if len(c.TokenSecret) != 0 && len(c.TokenSecret) < devtoken.MinSecretBytes {
		return fmt.Errorf("%w: QIM_TOKEN_SECRET must hold at least %d bytes (got %d)", ErrConfig, devtoken.MinSecretBytes, len(c.TokenSecret))
	}
	keys, err := loadKeys(c.KeysFile)
	if err != nil {
		return fmt.Errorf("%w: QIM_ADMIN_KEYS: %w", ErrConfig, err)
	}
	c.keys = keys
	return nil
}
