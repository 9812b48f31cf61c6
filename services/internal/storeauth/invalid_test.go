package storeauth

import (
	"errors"
	"strings"
	"testing"

	"github.com/gocql/gocql"
	"github.com/redis/go-redis/v9"

	"github.com/qim-dev/qim/services/internal/config"
)

// Every unusable combination fails closed, naming the variable to fix, in Validate and in the
// applier of its store alike; the password never appears in the error.
func TestInvalidCombinationsNameTheVariable(t *testing.T) {
	ca, notPEM := testCA(t), writeFile(t, "not.pem", "not a certificate")
	secret := config.Secret(pw)
	for _, tc := range []struct {
		name    string
		cfg     Config
		wantVar string
		want    error
	}{
		{"redis user without password", Config{Redis: Redis{Username: "u"}}, "QIM_REDIS_PASSWORD", config.ErrRequired},
		{"redis CA missing", Config{Redis: Redis{Password: secret, TLSCA: "/nonexistent/ca.pem"}}, "QIM_REDIS_TLS_CA", config.ErrMalformed},
		{"redis CA not PEM", Config{Redis: Redis{TLSCA: notPEM}}, "QIM_REDIS_TLS_CA", config.ErrMalformed},
		{"redis server name without CA", Config{Redis: Redis{TLSServerName: "r"}}, "QIM_REDIS_TLS_CA", config.ErrRequired},
		{"kafka password without user", Config{Kafka: Kafka{Mechanism: MechanismScramSHA512, Password: secret}}, "QIM_KAFKA_USERNAME", config.ErrRequired},
		{"kafka user without password", Config{Kafka: Kafka{Mechanism: MechanismScramSHA512, Username: "u"}}, "QIM_KAFKA_PASSWORD", config.ErrRequired},
		{"kafka credentials without mechanism", Config{Kafka: Kafka{Username: "u", Password: secret}}, "QIM_KAFKA_SASL_MECHANISM", config.ErrRequired},
		{"kafka unknown mechanism", Config{Kafka: Kafka{Mechanism: "scram-sha-512", Username: "u", Password: secret}}, "QIM_KAFKA_SASL_MECHANISM", config.ErrMalformed},
		{"kafka PLAIN without TLS", Config{Kafka: Kafka{Mechanism: MechanismPlain, Username: "u", Password: secret}}, "QIM_KAFKA_TLS_CA", config.ErrRequired},
		{"kafka CA not PEM", Config{Kafka: Kafka{TLSCA: notPEM}}, "QIM_KAFKA_TLS_CA", config.ErrMalformed},
		{"cql user without password", Config{CQL: CQL{Username: "u", TLSCA: ca}}, "QIM_CQL_PASSWORD", config.ErrRequired},
		{"cql password without user", Config{CQL: CQL{Password: secret}}, "QIM_CQL_USERNAME", config.ErrRequired},
		{"cql CA missing", Config{CQL: CQL{TLSCA: "/nonexistent/ca.pem"}}, "QIM_CQL_TLS_CA", config.ErrMalformed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			check := func(what string, err error) {
				t.Helper()
				var ce *config.Error
				if !errors.Is(err, ErrConfig) || !errors.Is(err, tc.want) || !errors.As(err, &ce) || ce.Var != tc.wantVar {
					t.Fatalf("%s = %v; want %v naming %s", what, err, tc.want, tc.wantVar)
				}
				if strings.Contains(err.Error(), pw) {
					t.Fatalf("%s error shows the password: %v", what, err)
				}
			}
			check("Validate", tc.cfg.Validate())
			var o redis.Options
			cc := gocql.NewCluster("a")
			_, kerr := tc.cfg.Kafka.Opts()
			for _, e := range []struct {
				store string
				err   error
			}{{"redis", tc.cfg.Redis.Apply(&o)}, {"kafka", kerr}, {"cql", tc.cfg.CQL.Apply(cc)}} {
				if strings.HasPrefix(tc.wantVar, "QIM_"+strings.ToUpper(e.store)+"_") {
					check(e.store+" applier", e.err)
				} else if e.err != nil {
					t.Fatalf("%s applier = %v for another store's problem", e.store, e.err)
				}
			}
			if o.Password != "" || o.TLSConfig != nil || cc.Authenticator != nil || cc.SslOpts != nil {
				t.Fatal("an applier changed the options although it failed")
			}
		})
	}
}

// Validate reports every problem at once, across stores.
func TestValidateReportsAllProblems(t *testing.T) {
	err := Config{Redis: Redis{Username: "u"}, Kafka: Kafka{Username: "u"}, CQL: CQL{Password: config.Secret(pw)}}.Validate()
	var es config.Errors
	if !errors.As(err, &es) || len(es) != 3 {
		t.Fatalf("Validate = %v, want three problems", err)
	}
	for _, v := range []string{"QIM_REDIS_PASSWORD", "QIM_KAFKA_SASL_MECHANISM", "QIM_CQL_USERNAME"} {
		if !strings.Contains(err.Error(), v) {
			t.Errorf("%v does not name %s", err, v)
		}
	}
}
