package stack

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"time"

	"github.com/gocql/gocql"
	"github.com/redis/go-redis/v9"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// Clients of a stack: the readiness probes and tests build theirs here, so a secure stack is
// probed exactly as a client would reach it. Without SecureEndpoints each is plaintext and
// unauthenticated, as before. (Services get their credentials from services/internal/storeauth,
// which this package cannot import.)

// ClientTLS returns a TLS 1.2+ config that trusts only the stack's CA.
func (s *SecureEndpoints) ClientTLS() (*tls.Config, error) {
	b, err := os.ReadFile(s.CAFile)
	if err != nil {
		return nil, fmt.Errorf("stack: read CA: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(b) {
		return nil, fmt.Errorf("stack: no PEM certificate in %s", s.CAFile)
	}
	return &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}, nil
}

// ReadPassword returns the content of one of the password files of SecureEndpoints.
func ReadPassword(file string) (string, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return "", fmt.Errorf("stack: read password file: %w", err)
	}
	return string(b), nil
}

// RedisOptions returns go-redis options for addr (ep.RedisCore or ep.RedisMailbox): with the
// stack's ACL user, password and TLS when it is secure.
func (ep Endpoints) RedisOptions(addr string) (*redis.Options, error) {
	o := &redis.Options{Addr: addr}
	if ep.Secure == nil {
		return o, nil
	}
	pw, err := ReadPassword(ep.Secure.RedisPasswordFile)
	if err != nil {
		return nil, err
	}
	tc, err := ep.Secure.ClientTLS()
	if err != nil {
		return nil, err
	}
	o.Username, o.Password, o.TLSConfig = ep.Secure.RedisUser, pw, tc
	return o, nil
}

// KafkaOpts returns the franz-go options that reach ep's brokers: seeds, and SASL/SCRAM-SHA-512
// over TLS when the stack is secure.
func (ep Endpoints) KafkaOpts() ([]kgo.Opt, error) {
	opts := []kgo.Opt{kgo.SeedBrokers(ep.KafkaBrokers...)}
	if ep.Secure == nil {
		return opts, nil
	}
	pw, err := ReadPassword(ep.Secure.KafkaPasswordFile)
	if err != nil {
		return nil, err
	}
	tc, err := ep.Secure.ClientTLS()
	if err != nil {
		return nil, err
	}
	mech := scram.Auth{User: ep.Secure.KafkaUser, Pass: pw}.AsSha512Mechanism()
	return append(opts, kgo.SASL(mech), kgo.DialTLSConfig(tc)), nil
}

// CQLClusterConfig is CQLCluster(ep.CQL) with the stack's role and TLS (host names verified)
// when it is secure.
func (ep Endpoints) CQLClusterConfig() (*gocql.ClusterConfig, error) {
	c, err := CQLCluster(ep.CQL)
	if err != nil || ep.Secure == nil {
		return c, err
	}
	pw, err := ReadPassword(ep.Secure.CQLPasswordFile)
	if err != nil {
		return nil, err
	}
	return c, ep.Secure.cqlLogin(c, ep.Secure.CQLUser, pw)
}

// cqlLogin sets c's TLS and PasswordAuthenticator for user.
func (s *SecureEndpoints) cqlLogin(c *gocql.ClusterConfig, user, pw string) error {
	tc, err := s.ClientTLS()
	if err != nil {
		return err
	}
	c.SslOpts = &gocql.SslOptions{Config: tc, EnableHostVerification: true}
	c.Authenticator = gocql.PasswordAuthenticator{Username: user, Password: pw}
	c.ConnectTimeout = 5 * time.Second // a TLS handshake on a busy 2-core box
	return nil
}
