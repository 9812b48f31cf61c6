package storeauth_test

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/qim-dev/qim/gates/itest"
	"github.com/qim-dev/qim/gates/stack"
	"github.com/qim-dev/qim/services/internal/config"
	"github.com/qim-dev/qim/services/internal/storeauth"
)

// TestSecureStack: against a stack started WithSecureStores, the clients configured by storeauth
// from the environment (passwords from files) do a round trip on every store, and every server
// refuses a client that lacks TLS, lacks credentials or has a wrong password, so the test cannot
// pass against a plaintext, unauthenticated stack.
func TestSecureStack(t *testing.T) {
	ep := itest.Endpoints(t)
	sec := ep.Secure
	if sec == nil {
		t.Fatalf("the stack is not secure: %+v", ep)
	}
	for k, v := range map[string]string{
		"QIM_REDIS_USERNAME": sec.RedisUser, "QIM_REDIS_PASSWORD_FILE": sec.RedisPasswordFile, "QIM_REDIS_TLS_CA": sec.CAFile,
		"QIM_KAFKA_SASL_MECHANISM": sec.KafkaSASLMechanism, "QIM_KAFKA_USERNAME": sec.KafkaUser,
		"QIM_KAFKA_PASSWORD_FILE": sec.KafkaPasswordFile, "QIM_KAFKA_TLS_CA": sec.CAFile,
		"QIM_CQL_USERNAME": sec.CQLUser, "QIM_CQL_PASSWORD_FILE": sec.CQLPasswordFile, "QIM_CQL_TLS_CA": sec.CAFile,
	} {
		t.Setenv(k, v)
	}
	cfg, err := storeauth.FromEnv()
	if err != nil {
		t.Fatal(err)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	t.Run("redis", func(t *testing.T) {
		for _, addr := range []string{ep.RedisCore, ep.RedisMailbox} {
			redisRoundTrip(t, cfg.Redis, addr)
			redisRefusals(t, cfg.Redis, addr)
		}
	})
	t.Run("kafka", func(t *testing.T) {
		kafkaRoundTrip(t, cfg.Kafka, ep.KafkaBrokers)
		kafkaRefusals(t, cfg.Kafka, ep.KafkaBrokers)
	})
	t.Run("cql", func(t *testing.T) {
		cqlRoundTrip(t, cfg.CQL, ep.CQL)
		cqlRefusals(t, cfg.CQL, ep.CQL)
	})
	t.Run("no password in a log", func(t *testing.T) {
		noPasswordInLogs(t, ep, cfg)
	})
}

// noPasswordInLogs reads every server's whole log (the stack's format tool included) and the
// endpoints: none may carry a password.
func noPasswordInLogs(t *testing.T, ep stack.Endpoints, cfg storeauth.Config) {
	st := itest.Stack(t)
	js, err := json.Marshal(ep)
	if err != nil {
		t.Fatal(err)
	}
	texts := map[string]string{"endpoints": string(js)}
	for _, server := range []string{stack.ServerRedisCore, stack.ServerRedisMailbox, stack.ServerKafka, stack.ServerCQL} {
		if texts[server], err = st.Logs(server, 1_000_000); err != nil {
			t.Fatal(err)
		}
	}
	for name, text := range texts {
		for _, pw := range []config.Secret{cfg.Redis.Password, cfg.Kafka.Password, cfg.CQL.Password} {
			if len(pw) < 16 || strings.Contains(text, string(pw)) {
				t.Errorf("%s shows a password (or the password is short: %d bytes)", name, len(pw))
			}
		}
	}
}

func ctxFor(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// caOnly is a TLS config that trusts the stack's CA (for clients built without storeauth).
func caOnly(t *testing.T) *tls.Config {
	tc, err := itest.Endpoints(t).Secure.ClientTLS()
	if err != nil {
		t.Fatal(err)
	}
	return tc
}

func redisRoundTrip(t *testing.T, auth storeauth.Redis, addr string) {
	o := &redis.Options{Addr: addr}
	if err := auth.Apply(o); err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(o)
	defer rdb.Close()
	ctx, val := ctxFor(t, 10*time.Second), fmt.Sprint(time.Now().UnixNano())
	if err := rdb.Set(ctx, "it:storeauth", val, 0).Err(); err != nil {
		t.Fatalf("SET on %s: %v", addr, err)
	}
	if got, err := rdb.Get(ctx, "it:storeauth").Result(); err != nil || got != val {
		t.Fatalf("GET on %s = %q, %v; want %q", addr, got, err, val)
	}
}

func redisRefusals(t *testing.T, auth storeauth.Redis, addr string) {
	for _, c := range []struct {
		name string
		o    redis.Options
	}{
		{"no TLS", redis.Options{Addr: addr, Username: auth.Username, Password: string(auth.Password)}},
		{"TLS without the CA", redis.Options{Addr: addr, Username: auth.Username, Password: string(auth.Password), TLSConfig: &tls.Config{MinVersion: tls.VersionTLS12}}},
		{"no credentials", redis.Options{Addr: addr, TLSConfig: caOnly(t)}},
		{"wrong password", redis.Options{Addr: addr, Username: auth.Username, Password: "wrong", TLSConfig: caOnly(t)}},
	} {
		c.o.MaxRetries, c.o.DialTimeout = -1, 3*time.Second
		rdb := redis.NewClient(&c.o)
		err := rdb.Set(ctxFor(t, 10*time.Second), "it:refused", "x", 0).Err()
		_ = rdb.Close()
		if err == nil {
			t.Errorf("redis %s accepted a client with %s", addr, c.name)
		} else {
			t.Logf("redis %s, %s: refused (%v)", addr, c.name, err)
		}
	}
}
