package storeauth

import (
	"github.com/gocql/gocql"
	"github.com/redis/go-redis/v9"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// The appliers below validate before they touch anything, so a caller that skipped Validate
// still cannot connect with half a configuration.

// Apply sets Username, Password and TLSConfig of o from r; a zero r leaves o as it is.
func (r Redis) Apply(o *redis.Options) error {
	tc, bad := r.resolve()
	if err := wrap(bad); err != nil {
		return err
	}
	if len(r.Password) != 0 {
		o.Username, o.Password = r.Username, string(r.Password)
	}
	if tc != nil {
		o.TLSConfig = tc
	}
	return nil
}

// Opts returns the franz-go options for k (kgo.SASL, kgo.DialTLSConfig), to append to a
// client's own; nil for a zero k. franz-go sets each broker's host as the TLS server name.
func (k Kafka) Opts() ([]kgo.Opt, error) {
	tc, bad := k.resolve()
	if err := wrap(bad); err != nil {
		return nil, err
	}
	var opts []kgo.Opt
	if m := k.mechanism(); m != nil {
		opts = append(opts, kgo.SASL(m))
	}
	if tc != nil {
		opts = append(opts, kgo.DialTLSConfig(tc))
	}
	return opts, nil
}

// mechanism is the SASL mechanism of a resolved k (nil without one).
func (k Kafka) mechanism() sasl.Mechanism {
	switch k.Mechanism {
	case MechanismScramSHA512:
		return scram.Auth{User: k.Username, Pass: string(k.Password)}.AsSha512Mechanism()
	case MechanismScramSHA256:
		return scram.Auth{User: k.Username, Pass: string(k.Password)}.AsSha256Mechanism()
	case MechanismPlain:
		return plain.Auth{User: k.Username, Pass: string(k.Password)}.AsMechanism()
	}
	return nil
}

// Apply sets Authenticator and SslOpts of c from q; a zero q leaves c as it is. Host names are
// always verified: gocql's SslOptions skip verification unless told otherwise.
func (q CQL) Apply(c *gocql.ClusterConfig) error {
	tc, bad := q.resolve()
	if err := wrap(bad); err != nil {
		return err
	}
	if q.Username != "" {
		c.Authenticator = gocql.PasswordAuthenticator{Username: q.Username, Password: string(q.Password)}
	}
	if tc != nil {
		c.SslOpts = &gocql.SslOptions{Config: tc, EnableHostVerification: true}
	}
	return nil
}
