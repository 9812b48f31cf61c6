package storeauth

import (
	"crypto/tls"
	"errors"
	"fmt"

	"github.com/qim-dev/qim/services/internal/config"
)

// ErrConfig is wrapped by every error of this package; the *config.Error inside names the
// variable (errors.As).
var ErrConfig = errors.New("storeauth: invalid store credentials")

// Config holds the credentials and TLS settings of the three stores. Every field is optional;
// the zero Config is today's plaintext, unauthenticated connection. One Redis setting covers
// both Redis instances (core and mailbox): they are one deployment's servers with one ACL file.
type Config struct {
	Redis Redis
	Kafka Kafka
	CQL   CQL
}

// Redis authenticates with AUTH [username] password after connecting (go-redis sends it on
// every new connection) and, with a CA, speaks TLS only.
type Redis struct {
	// Username is the ACL user (Redis 6+). Unset with a password: AUTH against the default user
	// (requirepass). A user without a password is refused: nopass users are for development.
	Username string `env:"QIM_REDIS_USERNAME" doc:"Redis ACL user (both Redis instances); requires QIM_REDIS_PASSWORD"`
	// Password of Username (or of the default user).
	Password config.Secret `env:"QIM_REDIS_PASSWORD" secret:"true" doc:"Redis password (never logged); unset: no AUTH"`
	// TLSCA turns TLS on: the server certificate must chain to a CA in this PEM file.
	TLSCA string `env:"QIM_REDIS_TLS_CA" doc:"PEM file of the CA that signs the Redis server certificate; set: TLS 1.2+ only, unset: plaintext"`
	// TLSServerName is checked against the certificate instead of the host of the address
	// (for an address that is an IP the certificate does not list).
	TLSServerName string `env:"QIM_REDIS_TLS_SERVER_NAME" doc:"name the Redis certificate must carry (default: the host of the address); needs QIM_REDIS_TLS_CA"`
}

// Kafka authenticates with SASL when Mechanism is set. SCRAM proves the password without
// sending it; PLAIN sends it, so PLAIN is refused without TLS.
type Kafka struct {
	// Mechanism is SCRAM-SHA-512, SCRAM-SHA-256 or PLAIN; unset: no SASL (default).
	Mechanism string `env:"QIM_KAFKA_SASL_MECHANISM" doc:"SASL mechanism: SCRAM-SHA-512, SCRAM-SHA-256 or PLAIN (PLAIN needs QIM_KAFKA_TLS_CA); unset: no SASL"`
	// Username and Password are the SASL credentials; both are required with a mechanism.
	Username string        `env:"QIM_KAFKA_USERNAME" doc:"Kafka SASL user; requires QIM_KAFKA_SASL_MECHANISM"`
	Password config.Secret `env:"QIM_KAFKA_PASSWORD" secret:"true" doc:"Kafka SASL password (never logged)"`
	// TLSCA turns TLS on for every broker connection.
	TLSCA string `env:"QIM_KAFKA_TLS_CA" doc:"PEM file of the CA that signs the brokers' certificates; set: TLS 1.2+ only, unset: plaintext"`
	// TLSServerName overrides the broker host as the name to verify (franz-go sets each broker's).
	TLSServerName string `env:"QIM_KAFKA_TLS_SERVER_NAME" doc:"name every broker certificate must carry (default: each broker's host); needs QIM_KAFKA_TLS_CA"`
}

// CQL authenticates with Cassandra's PasswordAuthenticator (SASL PLAIN inside the native
// protocol, so the password crosses the wire as is: set TLSCA outside a private network).
type CQL struct {
	Username string        `env:"QIM_CQL_USERNAME" doc:"CQL role (PasswordAuthenticator); requires QIM_CQL_PASSWORD"`
	Password config.Secret `env:"QIM_CQL_PASSWORD" secret:"true" doc:"CQL password (never logged); requires QIM_CQL_USERNAME"`
	// TLSCA turns client encryption on; host names are always verified.
	TLSCA string `env:"QIM_CQL_TLS_CA" doc:"PEM file of the CA that signs the CQL nodes' certificates; set: TLS 1.2+ only, unset: plaintext"`
	// TLSServerName overrides each node's host as the name to verify.
	TLSServerName string `env:"QIM_CQL_TLS_SERVER_NAME" doc:"name every CQL node certificate must carry (default: each node's host); needs QIM_CQL_TLS_CA"`
}

// Kafka SASL mechanisms, as Kafka names them.
const (
	MechanismScramSHA512 = "SCRAM-SHA-512"
	MechanismScramSHA256 = "SCRAM-SHA-256"
	MechanismPlain       = "PLAIN"
)

// FromEnv reads the QIM_* variables of the three stores (an unset variable keeps its zero).
func FromEnv() (Config, error) { return config.FromEnv(Config{}, ErrConfig) }

// Validate reports every unusable setting at once, each naming its variable, and reads each
// CA file so a bad one fails at start-up rather than at the first connection.
func (c Config) Validate() error {
	var bad config.Errors
	_, redisBad := c.Redis.resolve()
	_, kafkaBad := c.Kafka.resolve()
	_, cqlBad := c.CQL.resolve()
	bad = append(append(append(bad, redisBad...), kafkaBad...), cqlBad...)
	return wrap(bad)
}

func wrap(bad config.Errors) error {
	switch len(bad) {
	case 0:
		return nil
	case 1:
		return fmt.Errorf("%w: %w", ErrConfig, bad[0])
	}
	return fmt.Errorf("%w: %w", ErrConfig, bad)
}

// resolve checks r and loads its TLS configuration (nil without a CA).
func (r Redis) resolve() (*tls.Config, config.Errors) {
	var bad config.Errors
	if r.Username != "" && len(r.Password) == 0 {
		bad = append(bad, needs("QIM_REDIS_PASSWORD", "QIM_REDIS_USERNAME"))
	}
	return clientTLS("QIM_REDIS_TLS_CA", "QIM_REDIS_TLS_SERVER_NAME", r.TLSCA, r.TLSServerName, bad)
}

// resolve checks k and loads its TLS configuration (nil without a CA).
func (k Kafka) resolve() (*tls.Config, config.Errors) {
	var bad config.Errors
	switch k.Mechanism {
	case "":
		if k.Username != "" || len(k.Password) != 0 {
			bad = append(bad, &config.Error{Var: "QIM_KAFKA_SASL_MECHANISM", Err: fmt.Errorf("%w: Kafka credentials are set but would not be used", config.ErrRequired)})
		}
	case MechanismScramSHA512, MechanismScramSHA256, MechanismPlain:
		if k.Username == "" {
			bad = append(bad, needs("QIM_KAFKA_USERNAME", "QIM_KAFKA_SASL_MECHANISM"))
		}
		if len(k.Password) == 0 {
			bad = append(bad, needs("QIM_KAFKA_PASSWORD", "QIM_KAFKA_SASL_MECHANISM"))
		}
		if k.Mechanism == MechanismPlain && k.TLSCA == "" {
			bad = append(bad, &config.Error{Var: "QIM_KAFKA_TLS_CA", Err: fmt.Errorf("%w: SASL PLAIN sends the password as is, so it needs TLS", config.ErrRequired)})
		}
	default:
		bad = append(bad, &config.Error{Var: "QIM_KAFKA_SASL_MECHANISM", Value: k.Mechanism,
			Err: fmt.Errorf("%w: want SCRAM-SHA-512, SCRAM-SHA-256 or PLAIN", config.ErrMalformed)})
	}
	return clientTLS("QIM_KAFKA_TLS_CA", "QIM_KAFKA_TLS_SERVER_NAME", k.TLSCA, k.TLSServerName, bad)
}

// resolve checks q and loads its TLS configuration (nil without a CA).
func (q CQL) resolve() (*tls.Config, config.Errors) {
	var bad config.Errors
	if q.Username != "" && len(q.Password) == 0 {
		bad = append(bad, needs("QIM_CQL_PASSWORD", "QIM_CQL_USERNAME"))
	}
	if q.Username == "" && len(q.Password) != 0 {
		bad = append(bad, needs("QIM_CQL_USERNAME", "QIM_CQL_PASSWORD"))
	}
	return clientTLS("QIM_CQL_TLS_CA", "QIM_CQL_TLS_SERVER_NAME", q.TLSCA, q.TLSServerName, bad)
}

// needs is the error for a variable that another one requires.
func needs(missing, because string) *config.Error {
	return &config.Error{Var: missing, Err: fmt.Errorf("%w when %s is set", config.ErrRequired, because)}
}

// Validate reports r's unusable settings (each naming its variable) and reads its CA file.
func (r Redis) Validate() error { _, bad := r.resolve(); return wrap(bad) }

// Validate reports k's unusable settings (each naming its variable) and reads its CA file.
func (k Kafka) Validate() error { _, bad := k.resolve(); return wrap(bad) }

// Validate reports q's unusable settings (each naming its variable) and reads its CA file.
func (q CQL) Validate() error { _, bad := q.resolve(); return wrap(bad) }

// Load reads the variables through lookup (a tool's environment), as FromEnv reads the process's.
func Load(lookup func(name string) (string, bool)) (Config, error) {
	c, err := config.Load(Config{}, lookup)
	if err != nil {
		return c, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	return c, c.Validate()
}
