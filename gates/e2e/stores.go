package e2e

import (
	"github.com/gocql/gocql"
	"github.com/redis/go-redis/v9"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/qim-dev/qim/gates/stack"
)

// The clients scenarios open on the stack's stores, with its credentials and TLS when the stack
// is secure (Env.Secure).

func (e *Env) endpoints() stack.Endpoints {
	return stack.Endpoints{RedisCore: e.RedisCore, KafkaBrokers: e.Brokers, CQL: e.CQL, Secure: e.Secure}
}

// redisCore connects to the core Redis.
func (e *Env) redisCore() (*redis.Client, error) {
	o, err := e.endpoints().RedisOptions(e.RedisCore)
	if err != nil {
		return nil, err
	}
	return redis.NewClient(o), nil
}

// kafka connects to the brokers.
func (e *Env) kafka(opts ...kgo.Opt) (*kgo.Client, error) {
	base, err := e.endpoints().KafkaOpts()
	if err != nil {
		return nil, err
	}
	return kgo.NewClient(append(base, opts...)...)
}

// cqlCluster is the CQL node's cluster configuration.
func (e *Env) cqlCluster() (*gocql.ClusterConfig, error) {
	return e.endpoints().CQLClusterConfig()
}
